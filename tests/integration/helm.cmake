# The Helm chart (deploy/helm/gpulens) rendered by a Go harness and validated.
add_test(NAME helm_chart COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/helm_chart_test.sh $<TARGET_FILE:gpulens> ${PROJECT_BINARY_DIR})
set_tests_properties(helm_chart PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 180)
