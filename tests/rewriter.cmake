# The rewriter: the checkpoint runtime, graph surgery and verification.
acprof_add_test(rewriter_tests
  SOURCES rewriter_checkpoint_op_test.cpp rewriter_graph_surgery_test.cpp
  LIBS acprof_rewriter acprof_ops ${TORCH_LIBRARIES})
target_precompile_headers(rewriter_tests PRIVATE <torch/script.h>)
