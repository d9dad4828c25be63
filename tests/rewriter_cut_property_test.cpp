// The legality model as a property, on every kind of reference model: random
// contiguous node ranges that the rules accept are cut by the rewriter and the
// result trains bit for bit like the original (alone, and several per plan);
// every range the rules refuse names the rule.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <regex>

#include "acprof/cut_rules.h"
#include "acprof/recorder.h"
#include "acprof/rewriter.h"
#include "test_support.h"

namespace acprof {
namespace {

namespace fs = std::filesystem;
using acprof::testing::makeScratchDir;

SegmentCut cutOf(const Profile& profile, const CutRules& rules, int first, int last) {
  SegmentCut cut;
  cut.first_node = first;
  cut.last_node = last;
  const SegmentBoundary boundary = rules.boundary(first, last);
  for (int v : boundary.inputs) cut.input_values.push_back(profile.values[v].name);
  for (int v : boundary.outputs) cut.output_values.push_back(profile.values[v].name);
  for (int v : boundary.replayed_inputs) cut.replayed_inputs.push_back(profile.values[v].name);
  return cut;
}

// One measured iteration: the graph facts are what matters here, not the times.
Profile quickProfile(const fs::path& model) {
  RecordOptions options;
  options.model_path = model.string();
  options.run.warmup_iters = 0;
  options.run.measured_iters = 1;
  return recordProfile(options);
}

class CutProperty : public ::testing::TestWithParam<std::string> {};

TEST_P(CutProperty, LegalRangesVerifyBitwiseAndIllegalOnesNameTheirRule) {
  const fs::path model = fs::path(ACPROF_TEST_MODELS_DIR) / GetParam();
  ASSERT_TRUE(fs::exists(model)) << model;
  const fs::path directory = makeScratchDir("property_" + model.stem().string());

  const Profile profile = quickProfile(model);
  const CutRules rules = cutRulesOf(profile);
  const int node_count = static_cast<int>(profile.nodes.size());
  const StepConfig config = stepConfigOf(profile.meta.run);

  std::mt19937 random(1234);
  std::vector<std::pair<int, int>> legal;
  const std::regex rule_name(R"(^\[(barrier|no-computation|no-output|input-type|output-type|write-outside|input-written-later)\] )");
  int illegal = 0;
  for (int attempt = 0; attempt < 400 && legal.size() < 12; ++attempt) {
    const int first = std::uniform_int_distribution<int>(0, node_count - 1)(random);
    const int length = std::uniform_int_distribution<int>(0, std::max(1, node_count / 4))(random);
    const int last = std::min(node_count - 1, first + length);
    const std::string problem = rules.problem(first, last);
    if (problem.empty()) {
      legal.emplace_back(first, last);
    } else {
      ++illegal;
      EXPECT_TRUE(std::regex_search(problem, rule_name)) << "[" << first << ", " << last << "]: " << problem;
    }
  }
  ASSERT_GE(legal.size(), 4u) << "too few legal ranges to test (" << illegal << " illegal)";

  // Plans: four single segments, then two plans of several disjoint segments.
  std::vector<std::vector<std::pair<int, int>>> plans;
  for (size_t i = 0; i < 4; ++i) plans.push_back({legal[i]});
  for (int round = 0; round < 2; ++round) {
    std::vector<std::pair<int, int>> chosen;
    std::vector<std::pair<int, int>> shuffled(legal.begin(), legal.end());
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    for (const auto& range : shuffled) {
      const bool overlaps = std::any_of(chosen.begin(), chosen.end(), [&](const std::pair<int, int>& other) {
        return range.first <= other.second && other.first <= range.second;
      });
      if (!overlaps && chosen.size() < 3) chosen.push_back(range);
    }
    std::sort(chosen.begin(), chosen.end());
    plans.push_back(chosen);
  }

  for (size_t p = 0; p < plans.size(); ++p) {
    Plan plan;
    plan.model_path = model.string();
    std::string ranges;
    for (const auto& [first, last] : plans[p]) {
      plan.segments.push_back(cutOf(profile, rules, first, last));
      ranges += "[" + std::to_string(first) + ", " + std::to_string(last) + "] ";
    }
    const std::string rewritten = (directory / ("plan" + std::to_string(p) + ".pt")).string();
    try {
      checkpointedModel(model.string(), plan).save(rewritten);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the rewriter refused " << ranges << "which the rules accept: " << e.what();
      continue;
    }
    const VerificationResult result = verifyRewrite(model.string(), rewritten, config);
    EXPECT_TRUE(result.bitwise_equal) << ranges << "loss " << result.loss_abs_diff << " gradients "
                                      << result.max_gradient_abs_diff << " buffers " << result.max_buffer_abs_diff;
  }
  if (!HasFailure()) fs::remove_all(directory);
}

// The legality of a range grown node by node (what Chen's walk asks of every
// prefix) is the rules' answer for that range, on every range of up to 300
// nodes of a real graph.
TEST_P(CutProperty, GrowingRangesGiveTheRulesAnswer) {
  const fs::path model = fs::path(ACPROF_TEST_MODELS_DIR) / GetParam();
  ASSERT_TRUE(fs::exists(model)) << model;
  const Profile profile = quickProfile(model);
  const CutRules rules = cutRulesOf(profile);
  const int node_count = static_cast<int>(profile.nodes.size());
  int legal = 0, illegal = 0;
  for (int first = 0; first < node_count; ++first) {
    CutRules::GrowingRange range(rules, first);
    for (int last = first; last < std::min(node_count, first + 300); ++last) {
      range.extendTo(last);
      const std::string problem = rules.problem(first, last);
      ASSERT_EQ(range.legal(), problem.empty()) << "[" << first << ", " << last << "]: " << problem;
      ++(problem.empty() ? legal : illegal);
    }
  }
  EXPECT_GT(legal, 0);
  EXPECT_GT(illegal, 0);
}

INSTANTIATE_TEST_SUITE_P(ReferenceModels, CutProperty,
                         ::testing::Values("mlp_scripted.pt", "cnn_scripted.pt", "resnet18_scripted.pt",
                                           "gpt_scripted.pt", "bert_scripted.pt", "transformer_dict_scripted.pt",
                                           "vit_small_scripted.pt", "loop_lm_scripted.pt", "densenet_like_traced.pt",
                                           "densenet_like_scripted.pt", "tuple_out_scripted.pt",
                                           "gpt_autocast_traced.pt", "inplace_view_traced.pt", "lstm_cell_lm_traced.pt",
                                           "rnn_lm_scripted.pt"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return fs::path(info.param).stem().string();
                         });

}  // namespace
}  // namespace acprof
