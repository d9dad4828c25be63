# The examples (examples/): a rewritten model in the training loops users write. Each test
# rewrites an exported reference model with the acprof binary in a temporary directory
# (examples/rewrite_for_test.sh: profile, plan --budget 70%, rewrite), then runs the example on
# the original and the rewritten model; the example exits 1 unless they train bit for bit alike.
# 70% is reachable on both models with room to spare (smallest peaks: gpt_traced 63%, cnn_traced 62%).

# acprof_add_example_run(<name> <model file> <command> [arguments...])
function(acprof_add_example_run name model)
  add_test(NAME ${name}
           COMMAND bash ${CMAKE_SOURCE_DIR}/examples/rewrite_for_test.sh $<TARGET_FILE:acprof>
                   ${ACPROF_TEST_MODELS_DIR}/${model} 70% ${ARGN})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED test_models TIMEOUT 120)
endfunction()

# acprof_add_example_test(<name> <model file> <script> [script arguments...])
function(acprof_add_example_test name model script)
  acprof_add_example_run(${name} ${model}
                         ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/examples/${script} --ops $<TARGET_FILE:acprof_ops> ${ARGN})
endfunction()

# acprof_add_python_package_test(<name> <model file> <script> [script arguments...]): a script that
# imports the acprof Python package (python/) as a user who ran `pip install ./python` does, the
# op library named by ACPROF_OPS_LIBRARY, as the package's README says.
function(acprof_add_python_package_test name model script)
  acprof_add_example_run(${name} ${model} ${ACPROF_PYTHON} ${CMAKE_SOURCE_DIR}/${script} ${ARGN})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT
                       "PYTHONPATH=${CMAKE_SOURCE_DIR}/python;ACPROF_OPS_LIBRARY=$<TARGET_FILE:acprof_ops>")
endfunction()

# AdamW + StepLR for 5 steps, then a checkpoint saved halfway, reloaded and continued. The loop
# is the one the README shows (examples/train_rewritten.py), loaded with acprof.load.
# GPT: dropout in the segments (the recompute must replay the RNG), AdamW's foreach implementation
# (torch's default on CUDA); CNN: batch-norm running statistics, the default implementation.
acprof_add_python_package_test(example_train_rewritten_gpt gpt_traced.pt examples/train_rewritten.py --foreach)
acprof_add_python_package_test(example_train_rewritten_cnn cnn_traced.pt examples/train_rewritten.py)

# The acprof package installed with pip into a fresh target directory, its op library found three
# ways (ACPROF_OPS_LIBRARY, beside `acprof` on PATH, not at all: one clear error), and a rewritten
# GPT trained with acprof.load for 3 steps with the losses of the original.
acprof_add_example_run(python_package_load gpt_traced.pt ${ACPROF_PYTHON}
                       ${CMAKE_CURRENT_SOURCE_DIR}/python/acprof_package_test.py
                       --package ${CMAKE_SOURCE_DIR}/python --ops $<TARGET_FILE:acprof_ops>
                       --acprof $<TARGET_FILE:acprof>)

# DistributedDataParallel, 2 ranks on gloo: all-reduced gradients equal the original's.
# GPT has bool buffers (causal masks), which gloo cannot broadcast; CNN's buffers are
# broadcast before every forward.
acprof_add_example_test(example_train_ddp_gpt gpt_traced.pt train_ddp.py)
acprof_add_example_test(example_train_ddp_cnn cnn_traced.pt train_ddp.py)
set_tests_properties(example_train_ddp_gpt example_train_ddp_cnn PROPERTIES PROCESSORS 2)

# The C++ example (examples/train_rewritten.cpp) is built the way a user builds it: as a
# project of its own against `cmake --install`'s prefix, with find_package(acprof). That one
# build is the install test and the fixture of the C++ example's runs; the example is not also
# built in this tree, to keep CI to one compile of it.
set(ACPROF_INSTALL_TEST_DIR ${CMAKE_BINARY_DIR}/install-test)
add_test(NAME install_and_build_cpp_example
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install_test.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}
                 ${ACPROF_INSTALL_TEST_DIR} ${CMAKE_GENERATOR} ${CMAKE_CXX_COMPILER} ${Torch_DIR}
                 ${ACPROF_PYTHON})
# One compile against LibTorch: configure and build took 22 s on a 2-core machine.
set_tests_properties(install_and_build_cpp_example PROPERTIES FIXTURES_SETUP cpp_example TIMEOUT 300)

# AdamW + StepLR for 5 steps in C++: losses, parameters and buffers equal bit for bit.
# GPT: dropout replayed by the recompute; CNN: batch-norm running statistics.
acprof_add_example_run(example_train_rewritten_cpp_gpt gpt_traced.pt ${ACPROF_INSTALL_TEST_DIR}/example/train_rewritten)
acprof_add_example_run(example_train_rewritten_cpp_cnn cnn_traced.pt ${ACPROF_INSTALL_TEST_DIR}/example/train_rewritten)
set_tests_properties(example_train_rewritten_cpp_gpt example_train_rewritten_cpp_cnn
                     PROPERTIES FIXTURES_REQUIRED "test_models;cpp_example")

# The README's "Your own model in five steps", every block as written, in a fresh directory with
# a fresh pip install of python/, on the model its step 1 writes; the plan's budget is halfway
# between the floor and the peak of the profile it made (a share of the peak is not reachable on
# every CPU). About 90 s on 2 cores.
add_test(NAME readme_five_steps
         COMMAND ${ACPROF_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/python/readme_five_steps_test.py
                 --readme ${CMAKE_SOURCE_DIR}/README.md --package ${CMAKE_SOURCE_DIR}/python
                 --acprof $<TARGET_FILE:acprof> --example ${CMAKE_SOURCE_DIR}/examples/train_rewritten.py)
set_tests_properties(readme_five_steps PROPERTIES TIMEOUT 300)

# The manual's eager five steps (the command line's --module path), as written, in a fresh directory
# with a fresh install of ./python (tests/python/readme_eager_five_steps_test.py).
add_test(NAME manual_eager_five_steps
         COMMAND ${ACPROF_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/python/readme_eager_five_steps_test.py
                 --readme ${CMAKE_SOURCE_DIR}/docs/manual.md --package ${CMAKE_SOURCE_DIR}/python
                 --acprof $<TARGET_FILE:acprof>)
set_tests_properties(manual_eager_five_steps PROPERTIES TIMEOUT 300)

# The README's acprof.fit block, as written, in a fresh directory with a fresh install of ./python
# (tests/python/readme_fit_test.py).
add_test(NAME readme_fit
         COMMAND ${ACPROF_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/python/readme_fit_test.py
                 --readme ${CMAKE_SOURCE_DIR}/README.md --package ${CMAKE_SOURCE_DIR}/python)
set_tests_properties(readme_fit PROPERTIES TIMEOUT 300)

# `pip install .` of a fresh clone into a new venv with torch, then the README's fit block with that
# venv's Python alone, and the installed acprof command (tests/pip_install_test.sh). It builds the
# C++ core once more, in the clone, one compile at a time (about 10 min of one core).
add_test(NAME pip_install_fresh_clone_then_readme_fit
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pip_install_test.sh ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/pip-install-test ${ACPROF_PYTHON})
# Started first (COST): it is the longest test, and the suite would otherwise wait on it at the end.
set_tests_properties(pip_install_fresh_clone_then_readme_fit PROPERTIES TIMEOUT 1500 COST 10000)

# Issues 36 and 64: the README is the front door: its first screen links ARCHITECTURE.md and gives
# two commands, one that installs everything and runs profile, plan and rewrite on a bundled model,
# and the test command .ci/run runs; at most 200 lines in all (the reference is docs/manual.md).
add_test(NAME readme_first_screen_is_the_front_door
         COMMAND ${ACPROF_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/readme_front_door_check.py --root ${CMAKE_SOURCE_DIR})

# Issue 64: ARCHITECTURE.md's source-layout table names every folder git tracks files in, and
# only those (tests/architecture_layout_check.py; needs git, and the source tree a git checkout).
add_test(NAME architecture_layout_matches_git_ls_files
         COMMAND ${ACPROF_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/architecture_layout_check.py --root ${CMAKE_SOURCE_DIR})

# Issue 64: every named memory rule of docs/memory-model.md is cited where the engine applies it
# and held by a test whose name contains it, and nothing cites a rule the page does not state.
add_test(NAME memory_rules_are_cited_by_code_and_tests
         COMMAND ${ACPROF_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/memory_rules_cited_check.py --root ${CMAKE_SOURCE_DIR})
