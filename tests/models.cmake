# Reference models (models/): exported once per build tree into ACPROF_TEST_MODELS_DIR by a
# fixture that every test reading a model requires (FIXTURES_REQUIRED test_models).
# The export skips files newer than every models/*.py, so re-running it is instant.
add_test(NAME export_test_models
         COMMAND ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/models export-all --set test --out ${ACPROF_TEST_MODELS_DIR})
set_tests_properties(export_test_models PROPERTIES FIXTURES_SETUP test_models TIMEOUT 600)

# Every exported model trains one step in Python: finite loss, a gradient for every
# parameter, and the same loss as the eager model it was exported from.
add_test(NAME check_test_models
         COMMAND ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/models check --set test --dir ${ACPROF_TEST_MODELS_DIR})
set_tests_properties(check_test_models PROPERTIES FIXTURES_REQUIRED test_models TIMEOUT 600)

# Issue 64: models/ is one package; its export library knows no catalogue (the command that exports
# a catalogue model is models/__main__.py), so importing it imports no model list.
add_test(NAME models_export_library_imports_no_catalogue
         COMMAND ${ACPROF_PYTHON} -c "import sys; sys.path.insert(0, sys.argv[1]); import models.export; loaded = sorted(m for m in sys.modules if m.startswith('models.') and m not in ('models.export', 'models.specs')); print('imported beside models.export:', loaded or 'nothing'); sys.exit(1 if loaded else 0)"
                 ${CMAKE_SOURCE_DIR})
