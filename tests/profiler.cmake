acprof_add_test(profile_format_tests
  SOURCES profile_format_test.cpp
  LIBS acprof_profile_format nlohmann_json::nlohmann_json)
