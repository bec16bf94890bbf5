# The container image built without a daemon (scripts/image.sh) and run from its OCI layout,
# and the same image loaded and run by podman. Both build into BUILD_DIR/image: one at a time.
add_test(NAME container_image COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/container_image_test.sh $<TARGET_FILE:gpulens> ${PROJECT_BINARY_DIR})
set_tests_properties(container_image PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 600 RESOURCE_LOCK gpulens_image)
add_test(NAME container_podman COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/container_podman_test.sh $<TARGET_FILE:gpulens> ${PROJECT_BINARY_DIR})
set_tests_properties(container_podman PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 600 RESOURCE_LOCK gpulens_image)
