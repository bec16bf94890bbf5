# The web page in Firefox ESR (the Chromium test is web_page).
add_test(NAME web_page_firefox COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/web_firefox_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR})
set_tests_properties(web_page_firefox PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
