# The push path's clients: the Python client's unit tests (PyTorch stand-in),
# its tests against Debian's real (CPU) PyTorch, and the client against a live
# agent and a real Pushgateway scraped by Prometheus.
add_test(NAME python_client_unit
         COMMAND /usr/bin/python3 -m unittest discover -s ${PROJECT_SOURCE_DIR}/clients/python/tests -p test_client.py)
add_test(NAME python_client_real_torch
         COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/clients/python/tests/test_real_torch.py)
set_tests_properties(python_client_unit python_client_real_torch PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
add_test(NAME python_client COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/python_client_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(python_client PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME c_push_client
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/c_push_test.sh $<TARGET_FILE:gpulens> $<TARGET_FILE:gpulens_push_c_test>)
set_tests_properties(c_push_client PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME python_client_install COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/clients/python/tests/test_install.py)
set_tests_properties(python_client_install PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
# Hostile pushes and scrape pages, then a real Prometheus scrapes the agent:
# up = 1, the bad series absent, the drops counted (about 15 s).
add_test(NAME hostile_input COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/hostile_input_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(hostile_input PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
# On-demand captures: the client's side against a stand-in agent, then real programs (docs/profiling.md).
add_test(NAME python_client_profile_unit
         COMMAND /usr/bin/python3 -m unittest discover -s ${PROJECT_SOURCE_DIR}/clients/python/tests -p test_profile.py)
set_tests_properties(python_client_profile_unit PROPERTIES TIMEOUT 120)
add_test(NAME profile_capture COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/profile_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(profile_capture PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 180)
add_test(NAME profile_trigger COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/profile_trigger_test.sh $<TARGET_FILE:gpulens> ${PROJECT_BINARY_DIR})
set_tests_properties(profile_trigger PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 240)
