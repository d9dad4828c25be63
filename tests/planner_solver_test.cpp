// Solvers: decisions on hand-built chains whose outcomes are worked out in the
// comments, and properties on generated residual networks.
#include "acprof/solver.h"

#include <gtest/gtest.h>

#include "planner_test_profiles.h"

namespace acprof {
namespace {

using testing::chainProfile;
using testing::residualNetworkProfile;

// Chain of 4 (planner_simulator_test.cpp works out its timelines): no recompute
// peaks at 1500; [0, 1] gives 1400; [1, 2], [2, 3], [0, 2] and [0, 3] give 1500 or more.
// With forward times 10, 1, 1, 10 the candidates (an activation's producer to
// its last reader) score 100 B at the peak per 2 us for [1, 2] and per 11 us for
// [0, 1] and [2, 3]. [1, 2] is tried first and rejected (peak stays 1500), then
// [0, 1] (earlier of the tie) lowers it to 1400 <= 1450, and the greedy stops.
TEST(PlannerSolver, MuTwoRejectsTheBestScoredChoiceWhenTheSimulatorSaysItDoesNotHelp) {
  const Profile p = chainProfile(4, 100, {10, 1, 1, 10});
  const Simulator simulator(p);
  const SolverResult r = solveMuTwo(simulator, 1450);
  EXPECT_EQ(r.decision, (RecomputeDecision{{0, 1}}));
  EXPECT_EQ(r.simulation.peak_bytes, 1400);
  EXPECT_DOUBLE_EQ(r.simulation.extra_time_us, 11);
}

TEST(PlannerSolver, NothingIsRecomputedWhenTheBaselineFits) {
  const Profile p = chainProfile(4, 100, {1, 1, 1, 1});
  const Simulator simulator(p);
  for (const std::string& solver : solverNames()) {
    const SolverResult r = solveRecompute(simulator, solver, 1500);
    EXPECT_TRUE(r.decision.empty()) << solver;
    EXPECT_EQ(r.simulation.peak_bytes, 1500) << solver;
  }
}

// Below 1400 nothing helps on the chain: after [0, 1] the only candidate left
// merges into [0, 3] (1600). The error names the 1400 reached and the 1000 B of
// weights in it, and asks for at least 1400.
TEST(PlannerSolver, InfeasibleBudgetNamesTheSmallestPeakAndItsFloor) {
  const Profile p = chainProfile(4, 100, {10, 1, 1, 10});
  const Simulator simulator(p);
  try {
    solveRecompute(simulator, "mu-two", 1300);
    FAIL() << "a 1300 B budget was met";
  } catch (const InfeasibleBudget& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.smallest_peak_bytes, 1400);
    EXPECT_NE(message.find("(1400 B)"), std::string::npos) << message;
    EXPECT_NE(message.find("weights 1000 B"), std::string::npos) << message;
    EXPECT_NE(message.find("--budget 1400"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // Chen splits the chain into [0, 1] and [2, 3] (sqrt of 3 producers ~ 2
  // segments of 150 B): 1500, no better than nothing; so its floor is 1500.
  try {
    solveRecompute(simulator, "chen", 1450);
    FAIL() << "chen met 1450";
  } catch (const InfeasibleBudget& e) {
    EXPECT_EQ(e.smallest_peak_bytes, 1500);
  }
}

TEST(PlannerSolver, UnknownSolverIsAnError) {
  const Profile p = chainProfile(4, 100, {1, 1, 1, 1});
  const Simulator simulator(p);
  try {
    solveRecompute(simulator, "optimal", 1000);
    FAIL() << "an unknown solver was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
}

// On generated networks: every solver's plan is at or below the no-recompute
// peak and at or below the budget, and its numbers are the simulator's.
TEST(PlannerSolver, NoSolverExceedsTheBaselineOrTheBudget) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const Profile p = residualNetworkProfile(12, seed);
    const Simulator simulator(p);
    const int64_t baseline = simulator.simulate({}).peak_bytes;
    for (const std::string& solver : solverNames())
      for (double fraction : {1.0, 0.9, 0.7, 0.5, 0.3}) {
        const int64_t budget = static_cast<int64_t>(fraction * baseline);
        try {
          const SolverResult r = solveRecompute(simulator, solver, budget);
          EXPECT_LE(r.simulation.peak_bytes, budget) << solver << " " << fraction;
          EXPECT_LE(r.simulation.peak_bytes, baseline) << solver << " " << fraction;
          EXPECT_EQ(r.simulation.peak_bytes, simulator.simulate(r.decision).peak_bytes);
          for (const NodeRange& range : r.decision) EXPECT_EQ(simulator.segmentProblem(range), "");
        } catch (const InfeasibleBudget& e) {
          EXPECT_GT(e.smallest_peak_bytes, budget) << solver << " " << fraction;
          EXPECT_LE(e.smallest_peak_bytes, baseline) << solver << " " << fraction;
        }
      }
  }
}

// The shape μ-TWO is made for: activations dominate, so 70 % and 50 % of the
// peak are reachable, and at the peak chen reaches mu-two needs no more time.
TEST(PlannerSolver, MuTwoFitsSeventyAndFiftyPercentWithNoMoreTimeThanChen) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const Profile p = residualNetworkProfile(16, seed);
    const Simulator simulator(p);
    const int64_t baseline = simulator.simulate({}).peak_bytes;
    for (double fraction : {0.7, 0.5}) {
      const int64_t budget = static_cast<int64_t>(fraction * baseline);
      const SolverResult mu = solveRecompute(simulator, "mu-two", budget);
      EXPECT_LE(mu.simulation.peak_bytes, budget);
      SolverResult chen;
      try {
        chen = solveRecompute(simulator, "chen", budget);
      } catch (const InfeasibleBudget&) {
        continue;  // chen cannot reach it: nothing to compare
      }
      const SolverResult mu_at_chen = solveRecompute(simulator, "mu-two", chen.simulation.peak_bytes);
      EXPECT_LE(mu_at_chen.simulation.peak_bytes, chen.simulation.peak_bytes);
      EXPECT_LE(mu_at_chen.simulation.extra_time_us, chen.simulation.extra_time_us)
          << "seed " << seed << " fraction " << fraction;
    }
  }
}

TEST(PlannerSolver, SameInputsGiveTheSamePlan) {
  const Profile p = residualNetworkProfile(16, 7);
  const Profile again = residualNetworkProfile(16, 7);
  const Simulator first(p), second(again);
  const int64_t budget = first.simulate({}).peak_bytes * 6 / 10;
  for (const char* solver : {"mu-two", "chen"}) {
    SolverResult a, b;
    try {
      a = solveRecompute(first, solver, budget);
      b = solveRecompute(second, solver, budget);
    } catch (const InfeasibleBudget& e) {
      EXPECT_THROW(solveRecompute(second, solver, budget), InfeasibleBudget);
      continue;
    }
    EXPECT_FALSE(a.decision.empty()) << solver;
    EXPECT_EQ(a.decision, b.decision) << solver;
    EXPECT_EQ(a.simulation.peak_bytes, b.simulation.peak_bytes) << solver;
  }
}

}  // namespace
}  // namespace acprof
