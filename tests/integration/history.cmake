# The history's compression on a real recording (history_bench reads it the
# way the recorder stores it; built with the benchmarks).
if(GPULENS_BUILD_BENCH)
  add_test(NAME history_recording
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/history_recording_test.sh $<TARGET_FILE:history_bench>
                   ${PROJECT_SOURCE_DIR}/tests/data/recordings/host-1h.om.gz)
  set_tests_properties(history_recording PROPERTIES LABELS integration TIMEOUT 60)
endif()
