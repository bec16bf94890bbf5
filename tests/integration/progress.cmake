# Progress lines on a terminal (tmux) for calibrate, trace and diagnose --prometheus.
add_test(NAME progress_tty COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/progress_tty_test.sh $<TARGET_FILE:gpulens>
         ${PROJECT_SOURCE_DIR} $<TARGET_FILE:gpulens_fake_cuda> $<TARGET_FILE:gpulens_fake_nvml_current>)
set_tests_properties(progress_tty PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
