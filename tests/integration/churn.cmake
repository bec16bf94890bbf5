# Two minutes of bench/churn.py: four pushers and two scrape targets that
# give new label values every second, against the default series budgets
# with an hour of history. Asserts the agent's peak RSS stays under the
# 256 MiB the deployments allow, the budgets refuse and drop (counted), and
# /metrics answers throughout. About 130 s; labelled `churn` beside
# `integration` (ctest -LE churn leaves it out).
add_test(NAME churn COMMAND python3 ${PROJECT_SOURCE_DIR}/bench/churn.py $<TARGET_FILE:gpulens>
  --duration 2m --sample 10 --rss-cap 256 --check)
set_tests_properties(churn PROPERTIES LABELS "integration;churn" SKIP_RETURN_CODE 77 TIMEOUT 240)
