# Signals of `serve`: SIGHUP applies a changed config, SIGTERM stops within
# its bound with a hung remote_write receiver.
add_test(NAME signals COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/signals_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(signals PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
