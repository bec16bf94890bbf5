# The container image built without a daemon (scripts/image.sh) and run from its OCI layout.
add_test(NAME container_image COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/container_image_test.sh $<TARGET_FILE:gpulens> ${PROJECT_BINARY_DIR})
set_tests_properties(container_image PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 600)
