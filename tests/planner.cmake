# The planner: the simulator against hand-computed timelines, the solvers, budgets, plans.
# OPTIMIZED: the simulator and peak-composition tests run the solvers over thousands of
# decisions in their own loops.
acprof_add_test(planner_tests OPTIMIZED
  SOURCES planner_simulator_test.cpp planner_solver_table_test.cpp planner_solver_mu_two_test.cpp
          planner_solver_chen_test.cpp planner_solver_refined_test.cpp planner_solver_optimal_test.cpp planner_budget_test.cpp planner_plan_test.cpp
          planner_peak_tracker_test.cpp planner_peak_composition_test.cpp
          planner_segment_names_test.cpp planner_usable_segments_test.cpp
  LIBS acprof_planner)

# `acprof plan` end to end, including plans for profiles of the exported test models.
if(ACPROF_WITH_TORCH)
  acprof_add_test(planner_cli_tests
    SOURCES planner_cli_test.cpp
    LIBS acprof_planner
    FIXTURES test_models)
endif()
