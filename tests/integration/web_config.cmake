# serve --web-config-file: a real Prometheus over TLS with basic auth, curl
# with client certificates, certificate rotation and reload.
add_test(NAME web_config COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/web_config_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(web_config PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 180)
