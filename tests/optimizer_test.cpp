// The optimizer step in a profile is LibTorch's torch::optim: the state it keeps
// is what torch.optim keeps (sizes computed by hand from the model), and a plan
// made from an AdamW profile holds when the rewritten model is measured with AdamW.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/recorder.h"
#include "recorder_test_support.h"
#include "test_support.h"

namespace acprof {
namespace {

namespace fs = std::filesystem;

using acprof::testing::makeScratchDir;
using acprof::testing::runAcprof;
using acprof::testing::bytesIn;
using acprof::testing::profileOf;
using acprof::testing::testModel;

// models/mlp.py: Linear(64,256), 3 x Linear(256,256), Linear(256,10), with biases, float32.
constexpr int64_t kMlpParameterBytes = (64 * 256 + 256 + 3 * (256 * 256 + 256) + 256 * 10 + 10) * 4;  // 866,344

// Each state tensor is named after its parameter, as torch.optim's state_dict keys it,
// and has the parameter's size.
void expectStateOfEveryParameter(const Profile& p, const std::vector<std::string>& state_names) {
  std::map<std::string, int64_t> weight_bytes;
  for (const TensorRecord& t : p.tensors)
    if (t.category == Category::Weight) weight_bytes[t.name] = t.bytes;
  std::map<std::string, int64_t> state_bytes;
  for (const TensorRecord& t : p.tensors)
    if (t.category == Category::OptimizerState) state_bytes[t.name] = t.bytes;
  ASSERT_FALSE(weight_bytes.empty());
  EXPECT_EQ(state_bytes.size(), weight_bytes.size() * state_names.size());
  for (const auto& [parameter, bytes] : weight_bytes)
    for (const std::string& state : state_names)
      EXPECT_EQ(state_bytes[parameter + "." + state], bytes) << parameter << "." << state;
}

TEST(OptimizerProfile, AdamWKeepsTwoMomentsOfEveryParameter) {
  const Profile p = profileOf("mlp_traced.pt", "adamw");
  EXPECT_EQ(p.meta.run.optimizer, "adamw");
  EXPECT_EQ(bytesIn(p, Category::OptimizerState), 2 * kMlpParameterBytes);
  expectStateOfEveryParameter(p, {"exp_avg", "exp_avg_sq"});
  EXPECT_EQ(p.steps.back().phase, Phase::Optimizer);
}

TEST(OptimizerProfile, AdamKeepsTwoMomentsOfEveryParameter) {
  const Profile p = profileOf("mlp_traced.pt", "adam");
  EXPECT_EQ(bytesIn(p, Category::OptimizerState), 2 * kMlpParameterBytes);
  expectStateOfEveryParameter(p, {"exp_avg", "exp_avg_sq"});
}

TEST(OptimizerProfile, SgdKeepsOneMomentumBufferOfEveryParameter) {
  const Profile p = profileOf("mlp_traced.pt", "sgd");
  EXPECT_EQ(bytesIn(p, Category::OptimizerState), kMlpParameterBytes);
  expectStateOfEveryParameter(p, {"momentum_buffer"});
}

// Two moments of every trainable parameter, whatever the layers: embeddings, attention,
// convolutions and batch norm (whose running statistics are buffers, with no state).
TEST(OptimizerProfile, AdamWStateIsTwiceTheGradientsOnEveryArchitecture) {
  for (const char* model : {"gpt_traced.pt", "cnn_traced.pt", "bert_scripted.pt"}) {
    const Profile p = profileOf(model, "adamw");
    EXPECT_EQ(bytesIn(p, Category::OptimizerState), 2 * bytesIn(p, Category::Gradient)) << model;
  }
}

TEST(OptimizerProfile, UnknownOptimizerIsRefusedWithTheChoices) {
  try {
    profileOf("mlp_traced.pt", "lion");
    FAIL() << "an unknown optimizer was accepted";
  } catch (const RecordError& e) {
    EXPECT_STREQ(e.what(), "unknown optimizer 'lion'; use none, sgd, adam, adamw");
  }
}

// The user's commands with --optimizer adamw: the plan counts AdamW's state and its step's
// temporaries, and the rewritten model, measured with AdamW, peaks where the plan said.
TEST(OptimizerEndToEnd, AdamWPlanHoldsWhenTheRewrittenModelIsMeasured) {
  const fs::path directory = makeScratchDir("optimizer-e2e");
  fs::copy_file(testModel("mlp_deep_traced.pt"), directory / "model.pt");
  const auto run = [&](const std::string& arguments) {
    const auto result = runAcprof(arguments, directory.string());
    EXPECT_EQ(result.exit_code, 0) << arguments << "\n" << result.out << result.err;
    return result;
  };
  // Peaks are under test, not times: one measured iteration, no timed pairs.
  run("profile model.pt --optimizer adamw --iters 1");
  run("plan --budget 70%");
  const auto rewritten = run("rewrite --time-rounds 0");
  EXPECT_NE(rewritten.out.find("bit for bit"), std::string::npos) << rewritten.out;

  const Profile before = readProfileFile((directory / "profile.json").string());
  const Plan plan = readPlanFile((directory / "plan.json").string());
  const Profile after = readProfileFile((directory / "profile.after.json").string());
  ASSERT_FALSE(plan.segments.empty()) << "the plan recomputes nothing, so this test tests nothing";
  EXPECT_EQ(after.meta.run.optimizer, "adamw");
  EXPECT_EQ(bytesIn(before, Category::OptimizerState), 2 * bytesIn(before, Category::Gradient));
  EXPECT_EQ(bytesIn(after, Category::OptimizerState), bytesIn(before, Category::OptimizerState));

  const double measured = static_cast<double>(after.summary.peak_bytes);
  const double predicted = static_cast<double>(plan.predicted_peak_bytes);
  EXPECT_LE(after.summary.peak_bytes, plan.budget_bytes);
  EXPECT_LE(std::abs(predicted - measured) / measured, 0.02)
      << "predicted " << plan.predicted_peak_bytes << " measured " << after.summary.peak_bytes;
  fs::remove_all(directory);
}

}  // namespace
}  // namespace acprof
