# The head-to-head benchmark (scripts/bench_head_to_head.py) at test size: its table has every
# engine's rows, and every acprof row that met its budget measured a peak below the TorchScript
# baseline's, verified bit for bit. gpt_small (2 layers, 32 tokens): its floor (63 %) leaves the 80 %
# row and the floor measured, the rest below the floor; about 15 s on a 2-core machine.
add_test(NAME bench_head_to_head_small
         COMMAND ${ACPROF_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/python/bench_head_to_head_check.py
                 --python ${ACPROF_PYTHON} --acprof $<TARGET_FILE:acprof> --model gpt_small
                 --work ${CMAKE_BINARY_DIR}/bench-head-to-head-test)
set_tests_properties(bench_head_to_head_small PROPERTIES TIMEOUT 180)
