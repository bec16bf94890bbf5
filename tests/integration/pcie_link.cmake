# One definition of a degraded PCIe link: the generated alert (promtool) and
# the diagnosis rule (diagnose --replay) on the same link states.
add_test(NAME pcie_link_definition COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/pcie_link_definition_test.sh $<TARGET_FILE:gpulens>)
set_tests_properties(pcie_link_definition PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 60)
