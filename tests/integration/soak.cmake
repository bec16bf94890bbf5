# One minute of bench/soak.py: the agent at 100 ms with scrapes, pushes from
# processes that come and go, the web page's polling and remote_write to a
# receiver restarted every 20 s. It asserts what is not timing: every
# request answered without error, the agent's fds back to their baseline,
# its peak RSS under the 256 MiB the deployments allow, samples delivered,
# nothing logged at level error. About 70 s, 2-3 % of one core.
add_test(NAME soak COMMAND python3 ${PROJECT_SOURCE_DIR}/bench/soak.py $<TARGET_FILE:gpulens>
  --duration 1m --sample 10s --restart 20s --rss-cap 256 --csv ${CMAKE_CURRENT_BINARY_DIR}/soak.csv --check)
set_tests_properties(soak PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 180)
