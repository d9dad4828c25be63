// What a peak is made of (peak_composition.h): every byte of the simulated
// peak is in one share, and the largest holders are named by the step that
// made them, so the infeasible-budget message can explain the whole floor.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "acprof/peak_composition.h"
#include "acprof/solver.h"
#include "planner_test_profiles.h"

namespace acprof {
namespace {

using testing::ProfileBuilder;
using testing::residualNetworkProfile;

int64_t sharesTotal(const PeakComposition& composition) {
  int64_t total = 0;
  for (const PeakShare& share : composition.shares) {
    int64_t listed = 0;
    for (const PeakContributor& c : share.largest) listed += c.bytes;
    EXPECT_LE(listed, share.bytes) << categoryName(share.category);
    total += share.bytes;
  }
  return total;
}

// A chain whose backward of node 1 takes a 5000 B workspace: the peak is in
// that step whatever is recomputed, and recompute cannot remove the workspace.
Profile chainWithBackwardWorkspace() {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight, "w");
  std::vector<int> a(4), g(4, -1);
  for (int i = 0; i < 4; ++i) {
    b.node("aten::conv2d", {i == 0 ? "x" : "a" + std::to_string(i - 1)}, {"a" + std::to_string(i)}, 1.0,
           "layer" + std::to_string(i));
    a[i] = b.alloc(100);
    if (i > 0) b.readBy(a[i - 1], i);
  }
  b.setCategory(a[3], Category::Output);
  b.loss();
  for (int i = 3; i >= 0; --i) {
    b.backward(i, 1.0, "ConvolutionBackward0");
    if (i == 1) b.free(b.alloc(5000));  // the workspace, a temporary of this step
    if (i > 0) g[i - 1] = b.alloc(100);
    if (g[i] >= 0) b.free(g[i]);
    b.free(a[i]);
  }
  return b.finish();
}

TEST(PeakComposition, AFloorOnABackwardWorkspaceIsExplainedByThatWorkspaceAndAddsUpToTheFloor) {
  const Profile p = chainWithBackwardWorkspace();
  const Simulator simulator(p);
  const SolverResult reached = solveRecompute(simulator, "auto", 1000);
  ASSERT_FALSE(fitsBudget(reached, 1000)) << "a 1000 B budget was met";
  {
    const InfeasibleBudget e = infeasibleBudget(simulator, reached, 1000);
    const PeakComposition& floor = e.floor;
    EXPECT_EQ(floor.peak_bytes, e.smallest_peak_bytes);
    EXPECT_EQ(sharesTotal(floor), floor.peak_bytes);
    ASSERT_FALSE(floor.shares.empty());
    const PeakShare& largest = floor.shares.front();
    EXPECT_EQ(largest.category, Category::Temporary);
    // The workspace and the gradient its step holds (a temporary of backward too).
    EXPECT_EQ(largest.bytes, 5100);
    ASSERT_EQ(largest.largest.size(), 2u);
    EXPECT_EQ(largest.largest[0].bytes, 5000);
    EXPECT_EQ(largest.largest[0].op, "ConvolutionBackward0");
    EXPECT_EQ(largest.largest[0].scope, "layer1");
    EXPECT_EQ(largest.largest[0].phase, "backward");
    // The error's detail says the same, a line per category, weights and all;
    // the message stays one line.
    const std::string& detail = e.detail();
    EXPECT_NE(detail.find("  temporary         4.98 KiB  largest 4.88 KiB ConvolutionBackward0 in layer1 at backward step"),
              std::string::npos)
        << detail;
    EXPECT_NE(detail.find("  weight              1000 B  no recompute removes it"), std::string::npos) << detail;
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    // And the outcome's JSON carries it as data.
    const nlohmann::json j = floor;
    EXPECT_EQ(j.at("peak_bytes").get<int64_t>(), floor.peak_bytes);
    int64_t json_total = 0;
    for (const nlohmann::json& share : j.at("shares")) json_total += share.at("bytes").get<int64_t>();
    EXPECT_EQ(json_total, floor.peak_bytes);
  }
}

// Whatever the decision, the shares add up to the simulated peak and, by
// category, to the simulator's breakdown: segments' own bytes (kept generator
// state, held gradients, recompute blocks) included.
TEST(PeakComposition, SharesAddUpToThePeakAndItsBreakdownUnderEveryDecisionTheSolversMake) {
  for (uint32_t seed = 0; seed < 6; ++seed) {
    const Profile p = residualNetworkProfile(8, seed, /*record_saves=*/seed % 2 == 0);
    const Simulator simulator(p);
    const int64_t peak = simulator.baseline().peak_bytes;
    for (const double fraction : {1.0, 0.8, 0.6, 0.4, 0.0}) {
      const int64_t budget = static_cast<int64_t>(peak * fraction);
      const SolverResult r = solveRecompute(simulator, "refined", budget);
      if (!fitsBudget(r, budget)) {
        const InfeasibleBudget e = infeasibleBudget(simulator, r, budget);
        EXPECT_EQ(sharesTotal(e.floor), e.smallest_peak_bytes) << "seed " << seed;
        EXPECT_EQ(e.smallest_peak_bytes, r.simulation.peak_bytes) << "seed " << seed;
        continue;
      }
      const RecomputeDecision& decision = r.decision;
      const SimulationResult simulated = simulator.simulate(decision);
      const PeakComposition composition = peakComposition(simulator, decision);
      EXPECT_EQ(sharesTotal(composition), simulated.peak_bytes) << "seed " << seed << " at " << fraction;
      for (const PeakShare& share : composition.shares)
        EXPECT_EQ(share.bytes, simulated.peak_breakdown[static_cast<int>(share.category)])
            << "seed " << seed << " " << categoryName(share.category);
    }
  }
}

}  // namespace
}  // namespace acprof
