# `gpulens top` in a real terminal (tmux).
add_test(NAME top_terminal COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/top_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(top_terminal PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
