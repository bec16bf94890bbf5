# Helpers shared by every module's CMakeLists.txt.
include(GoogleTest)

# unit_tests: every binary that the tests outside the "integration" label run
# (each gpulens_test, the fuzz replay targets, and what a test names beside
# them), so that the sanitizer trees build only those:
#   cmake --build --preset asan --target unit_tests
# A test whose binary is left out fails under ctest as <name>_NOT_BUILT.
add_custom_target(unit_tests)

# gpulens_test(NAME src1.cpp ... LIBS lib1 ...): one GoogleTest binary, its
# tests discovered at test time so that ctest reports each case.
#
# GPULENS_SKIP_INCOMPLETE_TESTS (developer option, off in CI): skip a test
# binary whose sources are not all there yet instead of failing to configure.
option(GPULENS_SKIP_INCOMPLETE_TESTS "Skip test binaries with missing sources" OFF)
# Test code is compiled lighter than the code it tests: -Og -g1 (line tables
# for failures and sanitizer reports) instead of the preset's -O2 -g. The
# libraries under test keep their preset's flags; only the test files, whose
# expanded assertion macros made up four fifths of the release build's
# compile time, are optimised less (about half the CPU per test file). -Og,
# not -O1: GCC 12 reports false -Warray-bounds in std::string at -O1.
set(GPULENS_TEST_COMPILE_OPTIONS -Og -g1)

# GoogleTest and GoogleMock parsed once for every test binary: one
# precompiled header that each gpulens_test reuses (GCC silently falls back
# to the plain headers where a binary's flags do not match it).
add_library(gpulens_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/test_pch.cpp)
target_link_libraries(gpulens_test_pch PRIVATE GTest::gtest GTest::gmock)
target_compile_options(gpulens_test_pch PRIVATE ${GPULENS_TEST_COMPILE_OPTIONS})
target_compile_definitions(gpulens_test_pch PRIVATE
  GPULENS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  GPULENS_BINARY_DIR="${PROJECT_BINARY_DIR}")
target_precompile_headers(gpulens_test_pch PRIVATE <gtest/gtest.h> <gmock/gmock.h>)
set_property(TARGET gpulens_test_pch PROPERTY GPULENS_UNIT_TEST TRUE)

function(gpulens_test name)
  cmake_parse_arguments(T "" "" "LIBS" ${ARGN})
  if(GPULENS_SKIP_INCOMPLETE_TESTS)
    foreach(src ${T_UNPARSED_ARGUMENTS})
      if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${src})
        message(WARNING "skipping ${name}: ${src} is missing")
        return()
      endif()
    endforeach()
  endif()
  add_executable(${name} ${T_UNPARSED_ARGUMENTS})
  add_dependencies(unit_tests ${name})
  set_property(TARGET ${name} PROPERTY GPULENS_UNIT_TEST TRUE)
  # Test files are not batched (see CMAKE_UNITY_BUILD in CMakePresets.json):
  # their cost is the assertion macros each file expands, not headers.
  set_target_properties(${name} PROPERTIES UNITY_BUILD OFF)
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_options(${name} PRIVATE ${GPULENS_TEST_COMPILE_OPTIONS})
  target_precompile_headers(${name} REUSE_FROM gpulens_test_pch)
  target_compile_definitions(${name} PRIVATE
    GPULENS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    GPULENS_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST
    PROPERTIES ENVIRONMENT "GPULENS_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()

# integration_deps: everything `all` builds except the unit test binaries
# (gpulens_test, the fuzz replay targets: GPULENS_UNIT_TEST), which is what
# the integration tests need. scripts/test.sh builds only this in the release
# tree and runs the unit tests in the ASan+UBSan tree, where they build and
# run anyway. Call once, after every add_subdirectory().
function(gpulens_integration_deps)
  set(dirs ${PROJECT_SOURCE_DIR})
  set(targets "")
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(here DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND targets ${here})
    list(APPEND dirs ${subdirs})
  endwhile()
  add_custom_target(integration_deps)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    get_target_property(unit ${t} GPULENS_UNIT_TEST)
    get_target_property(excluded ${t} EXCLUDE_FROM_ALL)
    # Custom targets are not part of `all` unless a built target needs them.
    if(unit OR excluded OR type STREQUAL "UTILITY" OR type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    add_dependencies(integration_deps ${t})
  endforeach()
endfunction()
