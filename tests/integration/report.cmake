# Offline HTML reports (diagnose, trace) in headless chromium.
add_test(NAME report_html COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_html_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
set_tests_properties(report_html PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 300)
