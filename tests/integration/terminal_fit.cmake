# `gpulens snapshot` and `top --once` fit COLUMNS without cutting a number.
add_test(NAME terminal_fit COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/terminal_fit_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(terminal_fit PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
