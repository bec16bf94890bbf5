# Training jobs: one root cause per job (docs/jobs.md).
add_test(NAME diagnose_jobs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/diagnose_jobs_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(diagnose_jobs PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 180)
add_test(NAME diagnose_jobs_two_hosts
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/diagnose_jobs_two_hosts_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR})
set_tests_properties(diagnose_jobs_two_hosts PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 600)
add_test(NAME jobs_node COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/jobs_node_test.sh
         $<TARGET_FILE:gpulens> $<TARGET_FILE:gpulens_fake_nvml_current>)
set_tests_properties(jobs_node PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME kube_owner_labels COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/kube_owner_labels_test.sh
         $<TARGET_FILE:gpulens> $<TARGET_FILE:gpulens_fake_nvml_current> $<TARGET_FILE:gpulens_fake_kubelet_server>)
set_tests_properties(kube_owner_labels PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME diagnose_shared_gpu COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/diagnose_shared_gpu_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(diagnose_shared_gpu PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
