# The head-to-head benchmark (scripts/bench_head_to_head.py) end to end at test size: every row of
# every engine (eager, per-block and selective checkpointing, torch.compile with and without
# activation_memory_budget, TorchScript, acprof, acprof at each peer's peak), none with an error,
# every gradient equal to eager's within the benchmark's tolerance, what each row recomputes
# listed, the frontier plot written. gpt_small (2 layers, 32 tokens): its floor (about 69 %) leaves
# the 80 % row, the rows at the peers' peaks and the floor measured, the rest below the floor;
# about 50 s on a 2-core machine, most of it inductor compiling four graphs.
add_test(NAME bench_head_to_head_small
         COMMAND ${ACPROF_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/python/bench_head_to_head_check.py
                 --python ${ACPROF_PYTHON} --acprof $<TARGET_FILE:acprof> --ops $<TARGET_FILE:acprof_ops>
                 --model gpt_small --work ${CMAKE_BINARY_DIR}/bench-head-to-head-test)
set_tests_properties(bench_head_to_head_small PROPERTIES TIMEOUT 300)

# The cost benchmark (bench/command_cost.py) runs through on one small model: every command it
# times exits 0 and its row is printed. The ratios are for people, never asserted.
add_test(NAME bench_command_cost_small
         COMMAND ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/bench/command_cost.py --acprof $<TARGET_FILE:acprof>
                 --models gpt_small --rounds 1)
set_tests_properties(bench_command_cost_small PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "\ngpt_small +[0-9.]+ ")

# The FSDP2 benchmark (bench/fsdp2_checkpointing.py) runs through on 2 gloo ranks, one step a
# setting (two acprof.fit ladders included, about 2 minutes), and exits 1 if per-block
# checkpointing or acprof under fully_shard changes a rank's gradients: its peak and time ratios
# compare steps that compute the same. The ratios are for people.
add_test(NAME bench_fsdp2_per_block_checkpoint_same_gradients_on_every_rank
         COMMAND ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/bench/fsdp2_checkpointing.py --world-size 2 --steps 1)
set_tests_properties(bench_fsdp2_per_block_checkpoint_same_gradients_on_every_rank PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE
                     ENVIRONMENT "PYTHONPATH=${CMAKE_SOURCE_DIR}/python;GLOO_SOCKET_IFNAME=lo")

# The budget sweep (bench/budget_sweep.py) at 4 budgets from the peak to the floor on a Hugging Face
# Llama built from a config: acprof.fit's measured peak is within each budget, equals its prediction
# and never exceeds a larger budget's; acprof.fit(compile=True)'s is within each budget, from
# torch.compile's own peak down and at each activation_memory_budget point's peak; the
# activation_memory_budget sweep beside them is printed only. About 4 minutes.
add_test(NAME bench_budget_sweep_acprof_peak_monotone_within_budget_as_predicted
         COMMAND ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/bench/budget_sweep.py --points 4)
set_tests_properties(bench_budget_sweep_acprof_peak_monotone_within_budget_as_predicted PROPERTIES TIMEOUT 900
                     ENVIRONMENT "PYTHONPATH=${CMAKE_SOURCE_DIR}/python")
