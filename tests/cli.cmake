# The CLI's shell around the libraries: exit codes and the outcome JSON (torch-free code, built
# only where the CLI is).
acprof_add_test(cli_tests
  SOURCES cli_run_app_test.cpp
  LIBS acprof_cli_common nlohmann_json::nlohmann_json)
target_include_directories(cli_tests PRIVATE ${CMAKE_SOURCE_DIR}/cli)
