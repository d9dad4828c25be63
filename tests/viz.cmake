# Viz: unit tests of the renderers on hand-built profiles, and a browser test
# that opens a real report in headless chromium.
acprof_add_test(viz_tests
  SOURCES viz_synthetic_profile.cpp viz_downsample_test.cpp viz_html_test.cpp viz_svg_test.cpp viz_trace_test.cpp
          viz_view_cli_test.cpp
  LIBS acprof_viz nlohmann_json::nlohmann_json)
# The tests reach the library's internals (downsampling, embedded assets).
target_include_directories(viz_tests PRIVATE ${CMAKE_SOURCE_DIR}/viz/src)
