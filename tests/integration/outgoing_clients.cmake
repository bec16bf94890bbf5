# The outgoing HTTP clients (remote_write, diagnose --prometheus) over TLS
# with a client certificate and basic auth, against a real Prometheus.
add_test(NAME outgoing_tls COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/outgoing_tls_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(outgoing_tls PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
