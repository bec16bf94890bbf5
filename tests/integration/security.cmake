# Untrusted strings and configuration: terminal escapes under tmux, and what
# check-config refuses (certificate dates, bcrypt cost, token files).
add_test(NAME terminal_escapes COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/terminal_escapes_test.sh $<TARGET_FILE:gpulens>)
add_test(NAME check_config_security COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/check_config_security_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(terminal_escapes check_config_security PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
