// The solvers' table and its guard (solver.cpp): every name runs its strategy, no plan
// exceeds the baseline or the budget, an unmet budget names the floor and the fix, and every
// entry is deterministic. The chain of 4 is planner_simulator_test.cpp's; its timelines are
// worked out in planner_solver_mu_two_test.cpp.
#include "acprof/solver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "planner_test_profiles.h"

namespace acprof {
namespace {

using testing::chainProfile;
using testing::residualNetworkProfile;

// Enough for the exact solver's property checks; its own tests give it longer.
constexpr double kShortSearchSeconds = 0.2;

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
// merges into [0, 3] (1600). The error's line names the budget, the 1400
// reached and the fixes: at least 1400, or the sweep. Its detail is the
// floor's make-up, a line per category under one naming the step, the 1000 B
// of weights among them.
TEST(PlannerSolver, InfeasibleBudgetNamesTheBudgetTheFloorAndTheFixInOneShortLine) {
  const Profile p = chainProfile(4, 100, {10, 1, 1, 10});
  const Simulator simulator(p);
  const SolverResult mu = solveRecompute(simulator, "mu-two", 1300);
  ASSERT_FALSE(fitsBudget(mu, 1300)) << "a 1300 B budget was met";
  {
    const InfeasibleBudget e = infeasibleBudget(simulator, mu, 1300);
    const std::string message = e.what();
    EXPECT_EQ(e.smallest_peak_bytes, 1400);
    EXPECT_NE(message.find("budget 1.27 KiB"), std::string::npos) << message;  // 1300 B
    EXPECT_NE(message.find("the floor, 1.37 KiB"), std::string::npos) << message;  // 1400 B
    EXPECT_NE(message.find("--budget 1400 or more"), std::string::npos) << message;
    EXPECT_NE(message.find("acprof plan --sweep"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_LT(message.size(), 200u) << message;
    const std::string& detail = e.detail();
    EXPECT_EQ(std::count(detail.begin(), detail.end(), '\n'), 1 + static_cast<long>(e.floor.shares.size())) << detail;
    EXPECT_NE(detail.find("\n  weight              1000 B  no recompute removes it\n"), std::string::npos) << detail;
  }
  // Chen splits the chain into [0, 1] and [2, 3] (sqrt of 3 producers ~ 2
  // segments of 150 B): 1500, no better than nothing; so its floor is 1500.
  const SolverResult chen = solveRecompute(simulator, "chen", 1450);
  EXPECT_FALSE(fitsBudget(chen, 1450)) << "chen met 1450";
  EXPECT_EQ(chen.simulation.peak_bytes, 1500);
  EXPECT_EQ(infeasibleBudget(simulator, chen, 1450).smallest_peak_bytes, 1500);
}

// The line stays short at the widest numbers: a chain whose activations are
// 256 TiB each has a floor of about a PiB, sixteen digits of bytes.
TEST(PlannerSolver, TheInfeasibleBudgetsLineStaysUnder200CharactersAtAFloorOfAPetabyte) {
  const int64_t activation_bytes = int64_t{1} << 48;
  const Profile p = chainProfile(4, activation_bytes, {10, 1, 1, 10});
  const Simulator simulator(p);
  const SolverResult reached = solveRecompute(simulator, "refined", 1);
  ASSERT_FALSE(fitsBudget(reached, 1));
  ASSERT_GE(reached.simulation.peak_bytes, int64_t{1} << 50) << "not a floor of a PiB";
  const InfeasibleBudget e = infeasibleBudget(simulator, reached, reached.simulation.peak_bytes - 1);
  const std::string message = e.what();
  EXPECT_LT(message.size(), 200u) << message;
  EXPECT_NE(message.find("--budget " + std::to_string(reached.simulation.peak_bytes)), std::string::npos) << message;
}

TEST(PlannerSolver, UnknownSolverIsAnError) {
  const Profile p = chainProfile(4, 100, {1, 1, 1, 1});
  const Simulator simulator(p);
  try {
    solveRecompute(simulator, "magic", 1000);
    FAIL() << "an unknown solver was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    const std::string message = e.what();
    EXPECT_NE(message.find("'magic'"), std::string::npos) << message;
    for (const char* name : {"auto", "mu-two", "refined", "optimal", "chen", "none"})
      EXPECT_NE(message.find(name), std::string::npos) << name << " missing from: " << message;
  }
}

// Every name in the table runs the strategy it names, told apart on the chain
// worked out above at a budget of one byte (nothing fits): mu-two, refined and
// optimal reach [0, 1] (1400 B) and only optimal searches; chen places its two
// segments [0, 1] and [2, 3] (1500 B); none recomputes nothing; auto refines
// mu-two's plan. The error then names the solver that tried.
TEST(PlannerSolver, EveryTableNameRunsTheStrategyItNames) {
  const Profile p = chainProfile(4, 100, {10, 1, 1, 10});
  const Simulator simulator(p);
  ASSERT_EQ(solverNames(), (std::vector<std::string>{"auto", "mu-two", "refined", "optimal", "chen", "none"}));
  const std::map<std::string, RecomputeDecision> decisions = {{"auto", {{0, 1}}},
                                                              {"mu-two", {{0, 1}}},
                                                              {"refined", {{0, 1}}},
                                                              {"optimal", {{0, 1}}},
                                                              {"chen", {{0, 1}, {2, 3}}},
                                                              {"none", {}}};
  for (const SolverEntry& entry : solverTable()) {
    const SolverResult r = entry.solve(simulator, 1, kShortSearchSeconds);
    EXPECT_EQ(r.decision, decisions.at(entry.name)) << entry.name;
    EXPECT_EQ(r.search.searched, entry.name == "optimal") << entry.name;
    const SolverResult reached = solveRecompute(simulator, entry.name, 1, kShortSearchSeconds);
    ASSERT_FALSE(fitsBudget(reached, 1)) << entry.name << " met a 1 B budget";
    const InfeasibleBudget e = infeasibleBudget(simulator, reached, 1);
    const std::string tried = entry.name == "auto" ? "refined" : entry.name;
    EXPECT_NE(std::string(e.what()).find("the " + tried + " solver"), std::string::npos) << e.what();
  }
}

// On generated networks, each strategy on its own (the table's function, before
// solveRecompute's guard): its numbers are the simulator's, its segments are
// legal, and every solver that reads the budget stays at or below the
// no-recompute peak (chen places sqrt(n) segments whatever they do, so only the
// guard keeps it there). Then the guard: solveRecompute returns the strategy's
// plan (or no recompute where that peaks higher) when it fits, and otherwise
// throws with that plan's peak.
TEST(PlannerSolver, NoSolverExceedsTheBaselineOrTheBudget) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const Profile p = residualNetworkProfile(12, seed);
    const Simulator simulator(p);
    const int64_t baseline = simulator.simulate({}).peak_bytes;
    for (const SolverEntry& solver : solverTable())
      for (double fraction : {1.0, 0.9, 0.7, 0.5, 0.3}) {
        const int64_t budget = static_cast<int64_t>(fraction * baseline);
        const SolverResult alone = solver.solve(simulator, budget, kShortSearchSeconds);
        EXPECT_EQ(alone.simulation.peak_bytes, simulator.simulate(alone.decision).peak_bytes) << solver.name;
        for (const NodeRange& range : alone.decision) EXPECT_EQ(simulator.segmentProblem(range), "") << solver.name;
        if (solver.name != "chen") {
          EXPECT_LE(alone.simulation.peak_bytes, baseline) << solver.name << " " << fraction;
        }

        const bool falls_back = alone.simulation.peak_bytes > baseline;
        const int64_t guarded_peak = falls_back ? baseline : alone.simulation.peak_bytes;
        // A search stopped by its time limit may end elsewhere on a second run.
        const bool repeatable = !alone.search.searched || alone.search.proven_optimal;
        const SolverResult r = solveRecompute(simulator, solver.name, budget, kShortSearchSeconds);
        EXPECT_LE(r.simulation.peak_bytes, baseline) << solver.name << " " << fraction;
        EXPECT_EQ(r.simulation.peak_bytes, simulator.simulate(r.decision).peak_bytes) << solver.name << " " << fraction;
        EXPECT_EQ(fitsBudget(r, budget), r.simulation.peak_bytes <= budget) << solver.name << " " << fraction;
        if (repeatable) {
          EXPECT_EQ(r.decision, falls_back ? RecomputeDecision{} : alone.decision) << solver.name << " " << fraction;
          EXPECT_EQ(r.simulation.peak_bytes, guarded_peak) << solver.name << " " << fraction;
        }
      }
  }
}

// solver.h promises that every solver is deterministic: the same profile and
// budget give the same plan. So every entry of the table (the default, whose
// refined search runs a second thread, and the exact solver included), run
// on simulators of two copies of one profile, at a budget it meets
// and at one below every floor (where refined adds a third start), gives one
// decision, peak and extra time. The exact solver promises it only when its
// search completes: on 4 blocks it proves its plan in under a second here.
// PlannerCli.EverySolverWritesTheSamePlanInTwoProcesses checks the same of
// `acprof plan` run twice.
TEST(PlannerSolver, EverySolverInTheTableGivesTheSamePlanForTheSameInputs) {
  const Profile p = residualNetworkProfile(4, 7);
  const Profile copy = residualNetworkProfile(4, 7);
  const Simulator first(p), second(copy);
  const int64_t baseline = first.baseline().peak_bytes;
  for (const int64_t budget : {baseline * 7 / 10, baseline / 100}) {
    for (const SolverEntry& entry : solverTable()) {
      const SolverResult once = solveRecompute(first, entry.name, budget, 60);
      if (entry.name == "optimal") {
        ASSERT_TRUE(once.search.proven_optimal) << "the search stopped at its limit";
      }
      if (entry.name != "none") {
        EXPECT_FALSE(once.decision.empty()) << entry.name;
      }
      const SolverResult again = solveRecompute(second, entry.name, budget, 60);
      EXPECT_EQ(again.decision, once.decision) << entry.name << " at " << budget << " B";
      EXPECT_EQ(again.simulation.peak_bytes, once.simulation.peak_bytes) << entry.name << " at " << budget << " B";
      EXPECT_EQ(again.simulation.extra_time_us, once.simulation.extra_time_us) << entry.name << " at " << budget;
      EXPECT_EQ(again.solver, once.solver) << entry.name;
      EXPECT_EQ(again.search.decisions_evaluated, once.search.decisions_evaluated) << entry.name;
    }
  }
}

}  // namespace
}  // namespace acprof
