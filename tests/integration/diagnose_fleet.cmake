# Fleet diagnosis streamed in batches of hosts, against a real
# VictoriaMetrics and a real Prometheus on loopback.
add_test(NAME diagnose_fleet COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/diagnose_fleet_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR})
set_tests_properties(diagnose_fleet PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 180)
