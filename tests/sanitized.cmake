# The torch-free libraries and their unit tests under ASan and UBSan, and the
# libFuzzer targets (fuzz/): a clang build tree of their own inside this one,
# configured and built by a fixture and run as tests of this suite, so that
# `ctest` (scripts/test.sh, CI) runs them with everything else and any
# sanitizer report, crash or hang fails it.
find_program(ACPROF_CLANGXX NAMES clang++-14 clang++)
if(ACPROF_CLANGXX)
  # clang without its runtime package (libclang-rt-14-dev) compiles but cannot link a fuzzer.
  execute_process(COMMAND ${ACPROF_CLANGXX} -print-file-name=libclang_rt.fuzzer-${CMAKE_SYSTEM_PROCESSOR}.a
                  OUTPUT_VARIABLE ACPROF_LIBFUZZER OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
if(NOT ACPROF_CLANGXX OR NOT IS_ABSOLUTE "${ACPROF_LIBFUZZER}")
  message(WARNING "acprof: clang++ with libFuzzer not found, so the sanitizer and fuzz tests are not registered; "
                  "scripts/setup.sh installs them (apt: clang-14 libclang-rt-14-dev)")
  return()
endif()

set(ACPROF_SANITIZED_DIR ${CMAKE_BINARY_DIR}/sanitized)
# Configures once and rebuilds what changed, like the main tree.
add_test(NAME sanitized_build
         COMMAND sh -c "\"$0\" -S \"$1\" -B \"$2\" -G \"$3\" -DCMAKE_CXX_COMPILER=\"$4\" >/dev/null && \"$0\" --build \"$2\""
                 ${CMAKE_COMMAND} ${CMAKE_SOURCE_DIR}/fuzz ${ACPROF_SANITIZED_DIR} ${CMAKE_GENERATOR} ${ACPROF_CLANGXX})
set_tests_properties(sanitized_build PROPERTIES FIXTURES_SETUP sanitized TIMEOUT 1200)

# Each test of the sanitized tree (fuzz/CMakeLists.txt) is a test here, so that
# CTest's -j spreads them; a name that is no longer there fails (--no-tests=error).
foreach(name sanitized_profiler_format_tests sanitized_planner_tests sanitized_viz_tests sanitized_input_spec_tests
             fuzz_seed_tests fuzz_profile_json fuzz_plan_json fuzz_budget fuzz_input_spec)
  add_test(NAME ${name}
           COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${ACPROF_SANITIZED_DIR} -R "^${name}$" --output-on-failure
                   --no-tests=error)
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED sanitized TIMEOUT 600)
endforeach()
