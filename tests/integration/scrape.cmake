# The scrape source against a real node_exporter and a stand-in replaying
# dcgm-exporter, vLLM and Triton, with targets that die, hang, answer 500,
# answer HTML and serve 50 MB (about 10 s).
add_test(NAME scrape COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scrape_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR})
set_tests_properties(scrape PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
# A MIG node's dcgm-exporter page through the scrape and back out under
# --dcgm-names, then beside the stand-in NVML (about 5 s).
add_test(NAME scrape_mig COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scrape_mig_test.sh $<TARGET_FILE:gpulens>
         $<TARGET_FILE:gpulens_fake_nvml_current> ${PROJECT_SOURCE_DIR})
set_tests_properties(scrape_mig PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 60)
# One gpulens scraping another: GPU series keep their labels (about 4 s).
add_test(NAME scrape_gpulens COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scrape_gpulens_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR})
set_tests_properties(scrape_gpulens PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 60)
