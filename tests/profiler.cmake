acprof_add_test(profiler_format_tests
  SOURCES profiler_format_test.cpp profiler_format_cut_rules_test.cpp profiler_format_event_stream_test.cpp
          profiler_format_measured_iterations_test.cpp
  LIBS acprof_profile_format acprof_command_budget nlohmann_json::nlohmann_json)

# The rule that times a rewrite's pairs (common/: both rewrites follow it).
acprof_add_test(common_tests
  SOURCES common_pair_timing_test.cpp
  LIBS acprof_pair_timing acprof_command_budget)

if(NOT ACPROF_WITH_TORCH)
  return()
endif()
acprof_add_test(profiler_tests OPTIMIZED  # the precompiled torch headers
  SOURCES profiler_input_spec_test.cpp profiler_recorder_test.cpp profiler_cli_test.cpp profiler_cut_facts_test.cpp
          profiler_loss_test.cpp profiler_kernel_time_table_test.cpp profiler_sha256_test.cpp
  LIBS acprof_recorder acprof_command_budget
  FIXTURES test_models)
# The kernel time table (its CUPTI timer's bookkeeping) is the recorder's internals.
target_include_directories(profiler_tests PRIVATE ${CMAKE_SOURCE_DIR}/profiler/recorder/src)
acprof_precompile_torch_headers(profiler_tests)

# The optimizer step (LibTorch's torch::optim) in profiles, and through profile, plan and rewrite.
acprof_add_test(optimizer_tests
  SOURCES optimizer_test.cpp
  LIBS acprof_recorder acprof_planner
  FIXTURES test_models)

# One test file beside each pass of the forward graph (profiler/graph/src/passes/): each pass on a
# small scripted module, what it changes and what it leaves, and that the graph computes the same.
acprof_add_test(profiler_graph_pass_tests OPTIMIZED
  SOURCES profiler_pass_fold_constant_index_reads_test.cpp profiler_pass_functionalize_edited_lists_test.cpp
          profiler_pass_hoist_attribute_reads_test.cpp profiler_pass_split_branches_test.cpp
          profiler_pass_fold_dict_attribute_lookups_test.cpp
  LIBS acprof_graph)
target_include_directories(profiler_graph_pass_tests PRIVATE ${CMAKE_SOURCE_DIR}/profiler/graph/src)
acprof_precompile_torch_headers(profiler_graph_pass_tests)
