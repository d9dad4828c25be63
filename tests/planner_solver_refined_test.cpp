// The refined solver and the default that runs it on mu-two's plan (solver_refined.cpp,
// solver_auto.cpp, window_search.cpp): what the greedy cannot reach, and what refining buys.
#include "acprof/solver.h"

#include <gtest/gtest.h>

#include "planner_test_profiles.h"

namespace acprof {
namespace {

using testing::chainProfile;
using testing::residualNetworkProfile;

// linear (x0, freed by the relu) -> relu (h, saved by itself and the next
// linear) -> linear (y) -> add (reads h and y, saves nothing), whose backward
// peaks with a 1000 B temporary while h is alive. [0, 2] drops no tensor: h
// is read after it. But its nodes save nothing in forward, so h dies after the
// add's read instead of at the relu's backward, and the peak falls from 2200
// to 1330 in the segment's backward (weights, the output, h and y made again
// by the recompute, and the 10 B gradients).
// The exact search skipped every segment that drops nothing, and the default
// did not search at all where the greedy found nothing (a Gumbel-softmax head
// read the same way stayed at its profiled peak).
Profile outputSavedOnlyInsideProfile() {
  testing::ProfileBuilder b;
  b.addStatic(100, Category::Weight);
  b.node("aten::linear", {"in"}, {"x0"});
  const int x0 = b.alloc(100);
  b.node("aten::relu", {"x0"}, {"h"});
  const int h = b.alloc(1000);
  b.readBy(x0, 1);
  b.free(x0);
  b.node("aten::linear", {"h"}, {"y"});
  const int y = b.alloc(100);
  b.readBy(h, 2);
  b.node("aten::add", {"h", "y"}, {"z"});
  const int z = b.alloc(100);
  b.readBy(h, 3);
  b.readBy(y, 3);
  b.free(y);
  b.setCategory(z, Category::Output);
  b.loss();
  b.backward(3);
  const int temporary = b.alloc(1000);
  b.free(temporary);
  const int gy = b.alloc(10);
  b.backward(2);
  const int gh = b.alloc(10);
  b.free(gy);
  b.releaseSave(h, 2);
  b.backward(1);
  const int gx = b.alloc(10);
  b.free(gh);
  b.free(h);
  b.releaseSave(h, 1);
  b.backward(0);
  b.free(gx);
  return b.finish();
}

TEST(PlannerSolverRefined, ASegmentThatDropsNothingButEndsTheOnlySavesOfItsOutputIsFound) {
  const Profile p = outputSavedOnlyInsideProfile();
  const Simulator simulator(p);
  ASSERT_EQ(simulator.baseline().peak_bytes, 2200);
  const int64_t with_segment = simulator.simulate({{0, 2}}).peak_bytes;
  ASSERT_LT(with_segment, 2200);
  EXPECT_EQ(with_segment, 1330);
  // The exact search and the default's window search reach it (the greedy
  // alone scores segments by what they drop, and stays at the profiled peak).
  for (const char* solver : {"refined", "optimal"})
    EXPECT_EQ(solveRecompute(simulator, solver, with_segment, 1).simulation.peak_bytes, 1330) << solver;
}

// Where mu-two's greedy stalls (it only grows segments, each choice must lower
// the peak), the refined solver reaches a lower floor on some of these
// networks, and never a higher one.
TEST(PlannerSolverRefined, RefiningLowersMuTwosFloorWhereItStalls) {
  int lowered = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const Profile p = residualNetworkProfile(8, seed);
    const Simulator simulator(p);
    const int64_t greedy = solveMuTwo(simulator, 1).simulation.peak_bytes;
    const int64_t refined = solveRefined(simulator, 1).simulation.peak_bytes;
    EXPECT_LE(refined, greedy) << "seed " << seed;
    lowered += refined < greedy;
  }
  EXPECT_GT(lowered, 0);
}

// The default refines mu-two's plan wherever it meets the budget too: the
// greedy stops at the first plan that fits, often with more segments or longer
// ones than needed. So the default never fits less or costs more than the
// greedy, costs less on some of these networks, reaches refined's floor below
// the greedy's, and names refined as the strategy that made its plan.
TEST(PlannerSolverRefined, DefaultRefinesTheGreedyAboveItsFloorAndReachesBelowIt) {
  int cheaper_than_greedy = 0, refined_below_floor = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const Profile p = residualNetworkProfile(8, seed);
    const Simulator simulator(p);
    const SolverResult greedy_floor = solveMuTwo(simulator, 1);
    const int64_t refined_floor = solveRefined(simulator, 1).simulation.peak_bytes;
    const int64_t baseline = simulator.baseline().peak_bytes;

    const int64_t above = (greedy_floor.simulation.peak_bytes + baseline) / 2;
    const SolverResult greedy = solveRecompute(simulator, "mu-two", above);
    const SolverResult chosen = solveRecompute(simulator, "auto", above);
    EXPECT_LE(chosen.simulation.extra_time_us, greedy.simulation.extra_time_us) << "seed " << seed;
    EXPECT_EQ(chosen.solver, "refined") << "seed " << seed;
    cheaper_than_greedy += chosen.simulation.extra_time_us < greedy.simulation.extra_time_us;

    if (refined_floor >= greedy_floor.simulation.peak_bytes) continue;
    ++refined_below_floor;
    const SolverResult at_refined_floor = solveRecompute(simulator, "auto", refined_floor);
    EXPECT_EQ(at_refined_floor.solver, "refined") << "seed " << seed;
    EXPECT_LE(at_refined_floor.simulation.peak_bytes, refined_floor) << "seed " << seed;
    EXPECT_FALSE(fitsBudget(solveRecompute(simulator, "mu-two", refined_floor), refined_floor)) << "seed " << seed;
  }
  EXPECT_GT(cheaper_than_greedy, 0);
  EXPECT_GT(refined_below_floor, 0);
}

}  // namespace
}  // namespace acprof
