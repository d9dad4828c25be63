# Reference models (models/): exported once per build tree into ACPROF_TEST_MODELS_DIR by a
# fixture that every test reading a model requires (FIXTURES_REQUIRED test_models).
# The export skips files newer than every models/*.py, so re-running it is instant.
add_test(NAME export_test_models
         COMMAND ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/models/export_all.py --set test --out ${ACPROF_TEST_MODELS_DIR})
set_tests_properties(export_test_models PROPERTIES FIXTURES_SETUP test_models TIMEOUT 600)

# Every exported model trains one step in Python: finite loss, a gradient for every
# parameter, and the same loss as the eager model it was exported from.
add_test(NAME check_test_models
         COMMAND ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/models/check_exports.py --set test --dir ${ACPROF_TEST_MODELS_DIR})
set_tests_properties(check_test_models PROPERTIES FIXTURES_REQUIRED test_models TIMEOUT 600)
