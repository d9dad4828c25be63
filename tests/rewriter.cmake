# The rewriter: the checkpoint runtime, graph surgery and verification.
acprof_add_test(rewriter_tests OPTIMIZED  # the precompiled torch headers
  SOURCES rewriter_checkpoint_op_test.cpp rewriter_graph_surgery_test.cpp
  LIBS acprof_rewriter acprof_ops ${TORCH_LIBRARIES})
acprof_precompile_torch_headers(rewriter_tests)

# Through the acprof binary on the exported reference models.
acprof_add_test(rewriter_end_to_end_tests
  SOURCES rewriter_end_to_end_test.cpp
  LIBS acprof_planner fmt::fmt
  FIXTURES test_models)
add_dependencies(rewriter_end_to_end_tests acprof acprof_ops)
target_compile_definitions(rewriter_end_to_end_tests PRIVATE ACPROF_OPS_LIBRARY="$<TARGET_FILE:acprof_ops>")

# The legality model as a property over random ranges of every reference model.
acprof_add_test(rewriter_property_tests OPTIMIZED  # the precompiled torch headers
  SOURCES rewriter_cut_property_test.cpp
  LIBS acprof_rewriter acprof_ops ${TORCH_LIBRARIES}
  FIXTURES test_models)
acprof_precompile_torch_headers(rewriter_property_tests)
