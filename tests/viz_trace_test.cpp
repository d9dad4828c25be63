#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "acprof/viz.h"
#include "viz_synthetic_profile.h"

namespace acprof {
namespace {

using nlohmann::json;

json parseTrace(const Profile& profile, const Plan* plan = nullptr) {
  return json::parse(renderPerfettoTrace(profile, plan));  // throws on invalid JSON
}

std::vector<json> eventsOfPhase(const json& trace, const std::string& ph) {
  std::vector<json> events;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == ph) events.push_back(e);
  return events;
}

TEST(PerfettoTrace, EveryEventIsWellFormed) {
  const Profile profile = testing::smallTrainingProfile();
  const Plan plan = testing::smallTrainingPlan(profile);
  const json trace = parseTrace(profile, &plan);
  ASSERT_TRUE(trace["traceEvents"].is_array());
  const std::set<std::string> known = {"X", "C", "i", "s", "f", "M"};
  for (const json& e : trace["traceEvents"]) {
    SCOPED_TRACE(e.dump());
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string());
    const std::string ph = e["ph"];
    EXPECT_TRUE(known.count(ph));
    EXPECT_TRUE(e["pid"].is_number_integer());
    EXPECT_TRUE(e["tid"].is_number_integer());
    ASSERT_TRUE(e["ts"].is_number());
    EXPECT_GE(e["ts"].get<double>(), 0);
    ASSERT_TRUE(e["name"].is_string());
    EXPECT_FALSE(e["name"].get<std::string>().empty());
    if (ph == "X") {
      ASSERT_TRUE(e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0);
      EXPECT_TRUE(e["cat"].is_string());
    }
    if (ph == "C") {
      ASSERT_TRUE(e["args"].is_object());
      EXPECT_FALSE(e["args"].empty());
      for (const auto& [key, value] : e["args"].items()) EXPECT_TRUE(value.is_number()) << key;
    }
    if (ph == "s" || ph == "f") {
      EXPECT_TRUE(e["id"].is_number_integer());
    }
    if (ph == "i") {
      EXPECT_TRUE(e["s"] == "g" || e["s"] == "p" || e["s"] == "t");
    }
  }
}

TEST(PerfettoTrace, OneSlicePerStepLaidEndToEndByMeasuredTime) {
  const Profile profile = testing::smallTrainingProfile();
  const json trace = parseTrace(profile);
  std::vector<json> step_slices;
  for (const json& e : eventsOfPhase(trace, "X"))
    if (e["cat"] != "phase") step_slices.push_back(e);
  ASSERT_EQ(step_slices.size(), profile.steps.size());
  double expected_ts = 0;
  for (size_t s = 0; s < profile.steps.size(); ++s) {
    EXPECT_EQ(step_slices[s]["name"], profile.steps[s].op);
    EXPECT_EQ(step_slices[s]["cat"], phaseName(profile.steps[s].phase));
    EXPECT_DOUBLE_EQ(step_slices[s]["ts"].get<double>(), expected_ts);
    EXPECT_DOUBLE_EQ(step_slices[s]["dur"].get<double>(), profile.steps[s].time_us);
    expected_ts += profile.steps[s].time_us;
  }
  // Phase slices: forward 100+50+80, loss 10, backward 90+40+120, optimizer 30.
  std::map<std::string, double> phase_durations;
  for (const json& e : eventsOfPhase(trace, "X"))
    if (e["cat"] == "phase") phase_durations[e["name"]] = e["dur"];
  EXPECT_EQ(phase_durations, (std::map<std::string, double>{{"forward", 230}, {"loss", 10}, {"backward", 250},
                                                            {"optimizer", 30}}));
}

TEST(PerfettoTrace, CountersReplayMemoryPerCategoryAndMarkThePeak) {
  const Profile profile = testing::smallTrainingProfile();
  const json trace = parseTrace(profile);
  double max_total = 0;
  for (const json& e : eventsOfPhase(trace, "C")) {
    if (e["name"] != "memory bytes") continue;
    EXPECT_EQ(e["args"].size(), static_cast<size_t>(kCategoryCount));
    double total = 0;
    for (const auto& [key, value] : e["args"].items()) total += value.get<double>();
    max_total = std::max(max_total, total);
  }
  EXPECT_EQ(max_total, testing::kSmallProfilePeakBytes);
  const std::vector<json> instants = eventsOfPhase(trace, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]["args"]["total"], testing::kSmallProfilePeakBytes);
  EXPECT_EQ(instants[0]["args"]["op"], "aten::linear");
  EXPECT_EQ(instants[0]["args"]["activation"], 8000);
  // The peak is event 3, the second of linear's three events [2, 5): a third
  // into the step, which starts at 150 us and lasts 80 us.
  EXPECT_NEAR(instants[0]["ts"].get<double>(), 150 + 80.0 / 3, 1e-9);
}

TEST(PerfettoTrace, FlowsRunFromTheProducerStepToTheRecomputeStep) {
  const Profile profile = testing::smallTrainingProfile();
  const Plan plan = testing::smallTrainingPlan(profile);
  const json trace = parseTrace(profile, &plan);
  const std::vector<json> starts = eventsOfPhase(trace, "s"), finishes = eventsOfPhase(trace, "f");
  ASSERT_EQ(starts.size(), 1u);  // the plan drops one tensor, A
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(starts[0]["id"], finishes[0]["id"]);
  EXPECT_EQ(finishes[0]["bp"], "e");
  // A is made by conv's step [0, 100) us; the recompute runs before ReluBackward0,
  // step 5, which runs [330, 370) us. Both ends must lie inside those slices.
  EXPECT_GT(starts[0]["ts"].get<double>(), 0);
  EXPECT_LT(starts[0]["ts"].get<double>(), 100);
  EXPECT_GT(finishes[0]["ts"].get<double>(), 330);
  EXPECT_LT(finishes[0]["ts"].get<double>(), 370);
  EXPECT_EQ(starts[0]["tid"], finishes[0]["tid"]);
}

TEST(PerfettoTrace, OddNamesSurviveAsValidJson) {
  testing::SmallProfileNames names;
  names.relu_op = "op \"quoted\" \\ back\nslash ünï \xff";
  const json trace = parseTrace(testing::smallTrainingProfile(names));
  bool found = false;
  for (const json& e : eventsOfPhase(trace, "X"))
    found = found || e["name"] == "op \"quoted\" \\ back\nslash ünï \uFFFD";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace acprof
