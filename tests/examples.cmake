# The examples (examples/): a rewritten model in the training loops users write. Each test
# rewrites an exported reference model with the acprof binary in a temporary directory
# (examples/rewrite_for_test.sh: profile, plan --budget 70%, rewrite), then runs the example on
# the original and the rewritten model; the example exits 1 unless they train bit for bit alike.
# 70% is reachable on both models with room to spare (smallest peaks: gpt_traced 63%, cnn_traced 62%).

# acprof_add_example_test(<name> <model file> <script> [script arguments...])
function(acprof_add_example_test name model script)
  add_test(NAME ${name}
           COMMAND bash ${CMAKE_SOURCE_DIR}/examples/rewrite_for_test.sh $<TARGET_FILE:acprof>
                   ${ACPROF_TEST_MODELS_DIR}/${model} 70%
                   ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/examples/${script} --ops $<TARGET_FILE:acprof_ops> ${ARGN})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED test_models TIMEOUT 120)
endfunction()

# AdamW + StepLR for 5 steps, then a checkpoint saved halfway, reloaded and continued.
# GPT: dropout in the segments (the recompute must replay the RNG), AdamW's foreach implementation
# (torch's default on CUDA); CNN: batch-norm running statistics, the default implementation.
acprof_add_example_test(example_train_rewritten_gpt gpt_traced.pt train_rewritten.py --foreach)
acprof_add_example_test(example_train_rewritten_cnn cnn_traced.pt train_rewritten.py)

# DistributedDataParallel, 2 ranks on gloo: all-reduced gradients equal the original's.
# GPT has bool buffers (causal masks), which gloo cannot broadcast; CNN's buffers are
# broadcast before every forward.
acprof_add_example_test(example_train_ddp_gpt gpt_traced.pt train_ddp.py)
acprof_add_example_test(example_train_ddp_cnn cnn_traced.pt train_ddp.py)
set_tests_properties(example_train_ddp_gpt example_train_ddp_cnn PROPERTIES PROCESSORS 2)
