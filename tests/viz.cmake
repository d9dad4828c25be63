# Viz: unit tests of the renderers on hand-built profiles, and a browser test
# that opens a real report in headless chromium.
acprof_add_test(viz_tests
  SOURCES viz_synthetic_profile.cpp viz_downsample_test.cpp viz_html_test.cpp viz_svg_test.cpp viz_trace_test.cpp
  LIBS acprof_viz nlohmann_json::nlohmann_json)
# The tests reach the library's internals (downsampling, embedded assets).
target_include_directories(viz_tests PRIVATE ${CMAKE_SOURCE_DIR}/viz/src)
if(NOT ACPROF_WITH_TORCH)
  return()
endif()
# `acprof view` end to end.
target_sources(viz_tests PRIVATE viz_view_cli_test.cpp)

# Browser test: a real profile, plan and rewrite of a test model, both report
# pages opened in Debian's chromium through chromedriver (python3-selenium,
# chromium-driver), offline. Debian's own interpreter, whatever python3 comes
# first on PATH: selenium is Debian's package, not the virtual environment's.
find_program(ACPROF_SELENIUM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
add_test(NAME viz_browser_reports
         COMMAND ${ACPROF_SELENIUM_PYTHON} ${CMAKE_SOURCE_DIR}/tests/browser/real_reports_test.py
                 --acprof $<TARGET_FILE:acprof>
                 --model ${ACPROF_TEST_MODELS_DIR}/resnet18_traced.pt
                 --workdir ${CMAKE_CURRENT_BINARY_DIR}/viz-browser-reports)
set_tests_properties(viz_browser_reports PROPERTIES FIXTURES_REQUIRED test_models TIMEOUT 300)
