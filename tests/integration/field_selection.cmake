# Field selection (--profile, --collectors) against the simulator: the
# series served, the start-up notes and the live diagnosis' not-assessed causes.
add_test(NAME field_selection COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/field_selection_test.sh $<TARGET_FILE:gpulens> ${PROJECT_SOURCE_DIR})
set_tests_properties(field_selection PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 120)
