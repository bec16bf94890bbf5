# `gpulens snapshot`'s host line and process table on the stand-in NVML.
add_test(NAME snapshot_processes COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/snapshot_processes_test.sh
         $<TARGET_FILE:gpulens> $<TARGET_FILE:gpulens_fake_nvml_current> ${PROJECT_SOURCE_DIR})
set_tests_properties(snapshot_processes PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 60)
