// From a profile and a budget to a Plan: every field, and the table the CLI prints.
#include "acprof/planner.h"

#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "acprof/budget.h"
#include "planner_test_profiles.h"

namespace acprof {
namespace {

using testing::chainProfile;

Profile chainWithMeta() {
  Profile p = chainProfile(4, 100, {10, 1, 1, 10});
  p.meta.model_sha256 = "f00d";
  p.meta.model_path = "chain.pt";
  return p;
}

// The chain of planner_solver_mu_two_test.cpp at 1450 B: [0, 1] (a0 dropped), 1400 B.
// Step times: forward 10 + 1 + 1 + 10, loss 1, four backward steps of 1 = 27 us.
TEST(PlannerPlan, PlanRecordsTheDecisionAndItsPrediction) {
  const Profile p = chainWithMeta();
  const Plan plan = planRecompute(p, PlanRequest{"runs/profile.json", "1450", "mu-two"});
  EXPECT_EQ(plan.model_sha256, "f00d");
  EXPECT_EQ(plan.model_path, "chain.pt");
  EXPECT_EQ(plan.profile_path, "runs/profile.json");
  EXPECT_EQ(plan.solver, "mu-two");
  EXPECT_EQ(plan.budget_text, "1450");
  EXPECT_EQ(plan.budget_bytes, 1450);
  EXPECT_EQ(plan.baseline_peak_bytes, 1500);
  EXPECT_EQ(plan.predicted_peak_bytes, 1400);
  EXPECT_EQ(plan.predicted_peak_step, 5);
  EXPECT_DOUBLE_EQ(plan.baseline_iteration_time_us, 27);
  EXPECT_DOUBLE_EQ(plan.extra_time_us, 11);
  ASSERT_EQ(plan.segments.size(), 1u);
  const SegmentCut& cut = plan.segments[0];
  EXPECT_EQ(cut.first_node, 0);
  EXPECT_EQ(cut.last_node, 1);
  EXPECT_EQ(cut.input_values, std::vector<std::string>{"x"});
  EXPECT_EQ(cut.output_values, std::vector<std::string>{"a1"});
  EXPECT_EQ(cut.dropped_tensors, std::vector<int>{1});  // tensor 0 is the weights, 1 is a0
  EXPECT_EQ(cut.dropped_bytes, 100);
  EXPECT_DOUBLE_EQ(cut.recompute_time_us, 11);
  // The recompute runs before the first backward step of the segment's nodes: node 1's, as the chain
  // runs backward from its last node.
  EXPECT_EQ(cut.recompute_step, p.nodes[1].backward_steps.front());
  EXPECT_EQ(plan.predicted_timeline.size(), p.steps.size() + 1);  // + the recompute before step 7
  // At the peak (node 2's backward, step 5): the 1000 B of weights, a1 and a2 (a0 is dropped), the output a3
  // and the gradient of a2 (that node 2's backward made) are what is live.
  ASSERT_TRUE(plan.predicted_peak_breakdown.has_value());
  const CategoryBytes& at_peak = *plan.predicted_peak_breakdown;
  EXPECT_EQ(at_peak[static_cast<int>(Category::Weight)], 1000);
  EXPECT_EQ(at_peak[static_cast<int>(Category::Output)], 100);
  EXPECT_EQ(at_peak[static_cast<int>(Category::Activation)] + at_peak[static_cast<int>(Category::Temporary)] +
                at_peak[static_cast<int>(Category::Gradient)],
            300);
  // The plan survives its own format: every field read back equals the one
  // written. (Text written, read and written again would match even where a
  // field is dropped on the way, as it is dropped both times.) The fields this
  // plan leaves at their defaults are set first, so that a dropped one cannot
  // come back equal by chance.
  Plan full = plan;
  full.solver_report = "proven optimal";
  full.segments[0].replayed_inputs = {"x"};
  full.segments[0].kept_state_bytes = 24;
  full.frontier = {FrontierPoint{"chen", 1450, 1400, 11, 1}};
  const Plan back = planFromJson(planToJson(full), "plan.json");
#define EXPECT_SAME(field) EXPECT_EQ(back.field, full.field) << #field
  EXPECT_SAME(model_sha256);
  EXPECT_SAME(model_path);
  EXPECT_SAME(profile_path);
  EXPECT_SAME(solver);
  EXPECT_SAME(solver_report);
  EXPECT_SAME(budget_text);
  EXPECT_SAME(budget_bytes);
  EXPECT_SAME(baseline_peak_bytes);
  EXPECT_SAME(predicted_peak_bytes);
  EXPECT_SAME(predicted_peak_step);
  EXPECT_SAME(predicted_peak_breakdown);
  EXPECT_SAME(baseline_iteration_time_us);
  EXPECT_SAME(extra_time_us);
  ASSERT_EQ(back.segments.size(), full.segments.size());
  for (size_t i = 0; i < full.segments.size(); ++i) {
    EXPECT_SAME(segments[i].first_node);
    EXPECT_SAME(segments[i].last_node);
    EXPECT_SAME(segments[i].input_values);
    EXPECT_SAME(segments[i].output_values);
    EXPECT_SAME(segments[i].replayed_inputs);
    EXPECT_SAME(segments[i].kept_state_bytes);
    EXPECT_SAME(segments[i].recompute_step);
    EXPECT_SAME(segments[i].dropped_tensors);
    EXPECT_SAME(segments[i].dropped_bytes);
    EXPECT_SAME(segments[i].recompute_time_us);
  }
  ASSERT_EQ(back.predicted_timeline.size(), full.predicted_timeline.size());
  for (size_t i = 0; i < full.predicted_timeline.size(); ++i) {
    EXPECT_SAME(predicted_timeline[i].step);
    EXPECT_SAME(predicted_timeline[i].recompute);
    EXPECT_SAME(predicted_timeline[i].peak_bytes);
  }
  ASSERT_EQ(back.frontier.size(), full.frontier.size());
  for (size_t i = 0; i < full.frontier.size(); ++i) {
    EXPECT_SAME(frontier[i].label);
    EXPECT_SAME(frontier[i].budget_bytes);
    EXPECT_SAME(frontier[i].peak_bytes);
    EXPECT_SAME(frontier[i].extra_time_us);
    EXPECT_SAME(frontier[i].segment_count);
  }
#undef EXPECT_SAME
}

// The breakdown is optional (plans written before it read as "unknown", not
// as zero bytes) and, where present, must add up to the predicted peak.
TEST(PlannerPlan, PeakBreakdownIsOptionalAndAddsUpToThePeak) {
  const Plan plan = planRecompute(chainWithMeta(), PlanRequest{"p.json", "1450", "mu-two"});
  Plan without = plan;
  without.predicted_peak_breakdown.reset();
  const std::string text = planToJson(without);
  EXPECT_EQ(text.find("predicted_peak_breakdown"), std::string::npos);
  EXPECT_FALSE(planFromJson(text, "old.json").predicted_peak_breakdown.has_value());
  EXPECT_EQ(planSummaryText(without).find("at the peak"), std::string::npos);

  Plan wrong = plan;
  (*wrong.predicted_peak_breakdown)[static_cast<int>(Category::Weight)] += 1;
  try {
    planFromJson(planToJson(wrong), "plan.json");
    ADD_FAILURE() << "read a breakdown that does not add up to the predicted peak";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("adds up to 1401 B, not to the predicted peak 1400 B"), std::string::npos)
        << e.what();
  }
}

// A plan read with its profile points into it, or is refused in one line:
// what viz and the rewrite's report index (nodes, the recompute step, dropped
// tensors, the predicted timeline) is checked before they draw it.
TEST(PlannerPlan, APlanThatPointsOutsideItsProfileIsRefused) {
  const Profile p = chainWithMeta();
  const Plan plan = planRecompute(p, PlanRequest{"profile.json", "1450", "mu-two"});
  EXPECT_NO_THROW(checkPlanMatchesProfile(plan, p));
  const int steps = static_cast<int>(p.steps.size());
  const int nodes = static_cast<int>(p.nodes.size());
  const int tensors = static_cast<int>(p.tensors.size());
  struct Edit {
    std::function<void(Plan&)> apply;
    std::string words;
  };
  const std::vector<Edit> edits = {
      {[](Plan& q) { q.model_sha256 = "beef"; }, "made for another model"},
      {[&](Plan& q) { q.segments[0].last_node = nodes; }, fmt::format("outside the profile's {} nodes", nodes)},
      {[&](Plan& q) { q.segments[0].recompute_step = steps; }, fmt::format("outside the profile's {} steps", steps)},
      {[&](Plan& q) { q.segments[0].dropped_tensors.push_back(tensors); },
       fmt::format("drops tensor {}, outside the profile's {} tensors", tensors, tensors)},
      {[&](Plan& q) { q.predicted_peak_step = steps; }, fmt::format("peak at step {}", steps)},
      {[&](Plan& q) { q.predicted_timeline.back().step = -1; }, "predicts step -1"},
  };
  for (const Edit& edit : edits) {
    Plan edited = plan;
    edit.apply(edited);
    try {
      checkPlanMatchesProfile(edited, p);
      ADD_FAILURE() << "accepted a plan that " << edit.words;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(edit.words), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

TEST(PlannerPlan, PercentBudgetIsOfTheProfiledPeak) {
  const Plan plan = planRecompute(chainWithMeta(), PlanRequest{"p.json", "95%", "mu-two"});
  EXPECT_EQ(plan.budget_bytes, 1425);  // 95 % of 1500
  EXPECT_EQ(plan.predicted_peak_bytes, 1400);
}

// Saving 100 of 1500 B = 6.7 %; extra 11 us of a 27 us iteration = 0.011 ms, 40.7 %.
TEST(PlannerPlan, SummaryTableShowsSavingAndExtraTime) {
  const Plan plan = planRecompute(chainWithMeta(), PlanRequest{"p.json", "1450", "mu-two"});
  const std::string text = planSummaryText(plan);
  EXPECT_NE(text.find("1500 B"), std::string::npos) << text;
  EXPECT_NE(text.find("1400 B"), std::string::npos) << text;
  EXPECT_NE(text.find("100 B (6.7 %)"), std::string::npos) << text;
  EXPECT_NE(text.find("0.011 ms (40.7 %"), std::string::npos) << text;
  EXPECT_NE(text.find("segments        1"), std::string::npos) << text;
  EXPECT_NE(text.find("at the peak     weight 1000 B"), std::string::npos) << text;
}

TEST(PlannerPlan, BadBudgetAndInfeasibleBudgetAreErrors) {
  EXPECT_THROW(planRecompute(chainWithMeta(), PlanRequest{"p.json", "lots", "mu-two"}), BudgetError);
  EXPECT_THROW(planRecompute(chainWithMeta(), PlanRequest{"p.json", "1300", "mu-two"}), InfeasibleBudget);
}

// The chain holds its 1000 B of weights before the step (chainProfile's one
// static storage): a bare number below them is a slip (a usage error that asks
// for the percentage), while the same bytes with a unit are a budget that no
// plan fits, answered with the floor.
TEST(PlannerPlan, ABareBudgetBelowTheBytesBeforeTheStepIsAUsageError) {
  try {
    planRecompute(chainWithMeta(), PlanRequest{"p.json", "999", "mu-two"});
    FAIL() << "a bare 999 below the chain's 1000 B of weights was accepted";
  } catch (const BudgetError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("did you mean 999%?"), std::string::npos) << e.what();
  }
  EXPECT_THROW(planRecompute(chainWithMeta(), PlanRequest{"p.json", "999B", "mu-two"}), InfeasibleBudget);
  EXPECT_THROW(planRecompute(chainWithMeta(), PlanRequest{"p.json", "1000", "mu-two"}), InfeasibleBudget);
}

}  // namespace
}  // namespace acprof

namespace acprof {
namespace {

// --sweep on a residual network: from no recompute (the baseline) down to
// mu-two's floor, every kept point lowers the peak and costs more time than the
// one before (none is dominated), the last is mu-two's floor, and chen and
// per-block follow as marked points. The generated profile's scopes ("n3")
// hold no container child, so there is no per-block point; a scope like
// "blocks.2.conv" makes one segment per block.
TEST(PlannerFrontier, RunsFromNoRecomputeToTheFloorWithNoDominatedPoint) {
  const Profile p = testing::residualNetworkProfile(6, 3);
  const Simulator simulator(p);
  const std::vector<FrontierPoint> frontier = memoryTimeFrontier(p, "mu-two", 12);
  ASSERT_GE(frontier.size(), 4u);
  EXPECT_EQ(frontier.front().label, "none");
  EXPECT_EQ(frontier.front().peak_bytes, simulator.simulate({}).peak_bytes);
  size_t last_planned = 0;
  for (size_t i = 1; i < frontier.size() && frontier[i].label == "mu-two"; ++i) {
    EXPECT_LT(frontier[i].peak_bytes, frontier[i - 1].peak_bytes) << i;
    EXPECT_GT(frontier[i].extra_time_us, frontier[i - 1].extra_time_us) << i;
    last_planned = i;
  }
  EXPECT_EQ(frontier[last_planned].peak_bytes, solveMuTwo(simulator, 0).simulation.peak_bytes);
  EXPECT_EQ(frontier[last_planned + 1].label, "chen");
  EXPECT_EQ(frontier.size(), last_planned + 2);  // no per-block point without container scopes

  Profile blocks = p;
  int block = -1;
  for (ForwardNode& n : blocks.nodes) {
    if (n.kind == "prim::Constant") ++block;
    n.scope = "blocks." + std::to_string(block) + ".op";
  }
  const std::vector<FrontierPoint> with_blocks = memoryTimeFrontier(blocks, "mu-two", 12);
  ASSERT_EQ(with_blocks.back().label, "per-block");
  EXPECT_EQ(with_blocks.back().segment_count, 6);
}

}  // namespace
}  // namespace acprof
