# dcgm-exporter's classic and 4.9 names: golden pages replayed, recordings
# of both generations through a real Prometheus against --replay, with the
# query ending after the data (about 15 s); a fleet of --dcgm-names agents
# scraped by a real Prometheus counts each GPU once (about 30 s).
add_test(NAME dcgm_names COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dcgm_names_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR})
set_tests_properties(dcgm_names PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 180)
add_test(NAME dcgm_names_fleet COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dcgm_names_fleet_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR})
set_tests_properties(dcgm_names_fleet PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 180)
