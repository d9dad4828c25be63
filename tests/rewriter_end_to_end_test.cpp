// End to end through the acprof binary: profile a reference model, plan under
// a budget, rewrite; the rewritten model must train bit for bit like the
// original, fit the budget when measured, and peak where the plan predicted.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>

#include <signal.h>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "acprof/plan_format.h"
#include "acprof/planner.h"
#include "acprof/profile_format.h"
#include "acprof/solver.h"
#include "test_support.h"

namespace acprof {
namespace {

namespace fs = std::filesystem;

using acprof::testing::CommandResult;
using acprof::testing::lineCount;
using acprof::testing::makeScratchDir;
using acprof::testing::runAcprof;
using acprof::testing::runCommand;

CommandResult runIn(const fs::path& directory, const std::string& arguments) {
  return runAcprof(arguments, directory.string());
}

std::string outputOf(const CommandResult& result) { return result.out + result.err; }

// These tests check peaks, gradients and refusals, not times: one measured
// iteration profiles the model (and the rewrite measures the rewritten one
// alike), which about halves each test against the default five.
constexpr const char* kProfileModel = "profile model.pt --iters 1";

std::string fileText(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A budget as the user types it ("70%" of the profiled peak), or, where no
// percentage of the peak is reachable at test size, as a fraction of the
// headroom recompute can remove: 0 is the smallest peak the solver reaches,
// 1 the profiled peak.
struct Case {
  std::string model;  // file in ACPROF_TEST_MODELS_DIR
  std::string budget;
  double headroom = -1;  // used when budget is empty
  // The least share of the removable bytes (the profiled peak less weights,
  // gradients, optimizer state and inputs there) the solver's floor removes.
  double floor_removes_at_least = 0;
  std::string solver = "";  // --solver for the plan that is rewritten; empty: the default
};

// What ctest and --gtest_list_tests show for the parameter, instead of a byte dump.
void PrintTo(const Case& c, std::ostream* out) {
  *out << c.model << " at " << (c.budget.empty() ? fmt::format("{} of the headroom", c.headroom) : c.budget)
       << (c.solver.empty() ? "" : " with --solver " + c.solver);
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  const std::string budget = info.param.budget.empty()
                                 ? fmt::format("headroom{}", static_cast<int>(std::lround(info.param.headroom * 100)))
                                 : info.param.budget;
  std::string name = fmt::format("{}_{}{}", fs::path(info.param.model).stem().string(), budget,
                                 info.param.solver.empty() ? "" : "_" + info.param.solver);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class RewriteEndToEnd : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    directory_ = makeScratchDir("e2e_" + caseName({GetParam(), 0}));
    const fs::path model = fs::path(ACPROF_TEST_MODELS_DIR) / GetParam().model;
    ASSERT_TRUE(fs::exists(model)) << model << " missing: run the export_test_models fixture";
    fs::copy_file(model, directory_ / "model.pt");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(directory_);
  }

  fs::path directory_;
};

// The planner's floor for a profile: the smallest peak it reaches, 0 if it
// met a one-byte budget.
int64_t smallestReachablePeak(const fs::path& profile_path) {
  PlanRequest request;
  request.profile_path = profile_path.string();
  request.budget_text = "1B";
  try {
    planRecompute(readProfileFile(request.profile_path), request);
  } catch (const InfeasibleBudget& e) {
    return e.smallest_peak_bytes;
  }
  return 0;
}

TEST_P(RewriteEndToEnd, TrainsIdenticallyFitsTheBudgetAndPeaksAsPredicted) {
  const CommandResult profiled = runIn(directory_, kProfileModel);
  ASSERT_EQ(profiled.exit_code, 0) << outputOf(profiled);

  std::string budget = GetParam().budget;
  if (budget.empty()) {
    const Profile profile = readProfileFile((directory_ / "profile.json").string());
    const int64_t smallest_peak = smallestReachablePeak(directory_ / "profile.json");
    ASSERT_GT(smallest_peak, 0) << "a one-byte budget was met";
    const int64_t baseline_peak = profile.summary.peak_bytes;
    const double removed = static_cast<double>(baseline_peak - smallest_peak) /
                           static_cast<double>(baseline_peak - unremovableBytes(profile.summary.peak_breakdown));
    EXPECT_GE(removed, GetParam().floor_removes_at_least)
        << "the floor, " << formatBytes(smallest_peak) << ", removes " << 100 * removed << " % of the removable bytes";
    budget = std::to_string(smallest_peak + static_cast<int64_t>(GetParam().headroom *
                                                                 static_cast<double>(baseline_peak - smallest_peak)));
  }
  // The user's own words: every file argument defaults.
  const std::string solver = GetParam().solver.empty() ? "" : " --solver " + GetParam().solver;
  const CommandResult planned = runIn(directory_, "plan --budget " + budget + solver);
  ASSERT_EQ(planned.exit_code, 0) << outputOf(planned);
  const Plan plan = readPlanFile((directory_ / "plan.json").string());
  ASSERT_FALSE(plan.segments.empty()) << "the plan recomputes nothing, so this case tests nothing";
  const Profile profile = readProfileFile((directory_ / "profile.json").string());

  // Timing is RewriteTiming's; here its pairs of steps would only add minutes.
  const CommandResult rewritten = runIn(directory_, "rewrite --time-rounds 0");
  ASSERT_EQ(rewritten.exit_code, 0) << outputOf(rewritten);
  EXPECT_NE(rewritten.out.find("bit for bit, deterministic algorithms"), std::string::npos) << outputOf(rewritten);
  EXPECT_TRUE(fs::exists(directory_ / "model.ckpt.pt"));
  EXPECT_TRUE(fs::exists(directory_ / "profile.before.json"));
  EXPECT_TRUE(fs::exists(directory_ / "report.html"));
  EXPECT_NE(fileText(directory_ / "report.html").find("Verification: bit for bit, deterministic algorithms."),
            std::string::npos);

  const Profile after = readProfileFile((directory_ / "profile.after.json").string());
  const double measured = static_cast<double>(after.summary.peak_bytes);
  const double predicted = static_cast<double>(plan.predicted_peak_bytes);
  EXPECT_LE(after.summary.peak_bytes, plan.budget_bytes)
      << "measured " << formatBytes(after.summary.peak_bytes) << " over budget " << formatBytes(plan.budget_bytes)
      << "\n" << outputOf(rewritten);
  EXPECT_LE(std::abs(predicted - measured) / measured, 0.02)
      << "predicted " << formatBytes(plan.predicted_peak_bytes) << " measured "
      << formatBytes(after.summary.peak_bytes) << "\n" << outputOf(rewritten);
  std::cout << rewritten.out;

  // The same model through Python: torch.ops.load_library, torch.jit.load, one training step.
  std::string python_args = fmt::format("'{}' '{}/tests/python/rewritten_model_check.py' --ops '{}' "
                                        "--original model.pt --rewritten model.ckpt.pt",
                                        ACPROF_PYTHON, ACPROF_SOURCE_DIR, ACPROF_OPS_LIBRARY);
  for (const std::string& spec : profile.meta.run.input_specs) python_args += fmt::format(" --input '{}'", spec);
  const CommandResult python = runCommand(python_args, directory_.string());
  EXPECT_EQ(python.exit_code, 0) << outputOf(python);
  std::cout << python.out;
}

INSTANTIATE_TEST_SUITE_P(ReferenceModels, RewriteEndToEnd,
                         ::testing::Values(Case{"mlp_deep_traced.pt", "70%"}, Case{"mlp_deep_traced.pt", "50%"},
                                           Case{"cnn_traced.pt", "70%"}, Case{"cnn_scripted.pt", "70%"},
                                           Case{"gpt_long_traced.pt", "70%"}, Case{"gpt_long_traced.pt", "50%"},
                                           Case{"gpt_scripted.pt", "", 0.5},
                                           // At its floor a segment ends with a residual add and the
                                           // layer norm that reads it: the checkpoint holds the
                                           // residual's received gradient until it returns, beside
                                           // the new sum its recompute starts (1 % over, unmodelled).
                                           Case{"gpt_wide_traced.pt", "", 0.0},
                                           // PyTorch 2.x attention: one scaled_dot_product_attention
                                           // call whose dropout mask the recompute must reproduce.
                                           Case{"gpt_sdpa_traced.pt", "", 0.1},
                                           Case{"gpt_sdpa_scripted.pt", "", 0.1},
                                           // ResNet-18 at test size: weights and gradients are 97 % of
                                           // the peak (see InfeasibleBudgets below).
                                           Case{"resnet18_traced.pt", "", 0.7},
                                           // Models nobody here tuned for (issue 9's table), a tenth of
                                           // the way from the smallest reachable peak to the profiled one;
                                           // the floor removes 60 % of the removable bytes of each of
                                           // issue 9's six (models/tuple_out.py says why that chain has 48
                                           // layers); the in-place model is there for its refusal test.
                                           // On LibTorch 2.14 the scripted nn.MultiheadAttention
                                           // canonicalises its masks with zeros_like(...).masked_fill_
                                           // inside a branch, which alias analysis reported as a write
                                           // to about a hundred values: no segment spanned it, and the
                                           // floor removed 20 %, until writes to a tensor made inside
                                           // the branch stopped counting (cut_facts.cpp).
                                           Case{"transformer_dict_scripted.pt", "", 0.1, 0.6},
                                           Case{"vit_small_scripted.pt", "", 0.1, 0.6},
                                           Case{"loop_lm_scripted.pt", "", 0.1, 0.6},
                                           // Traced, the loop unrolls: each weight is read by all six
                                           // blocks, so a segment's uses of it are summed by the
                                           // checkpoint's own backward beside the engine's running sum
                                           // of the uses after it (RAFT's recurrent update block, traced).
                                           Case{"loop_lm_traced.pt", "", 0.1, 0.6},
                                           // Scripted, its feature list grows by appends between reads
                                           // (forward_graph.cpp makes one list per reader).
                                           // 59.2 % on LibTorch 2.14's CPU kernels (60.2 % on 1.13).
                                           Case{"densenet_like_traced.pt", "", 0.1, 0.58},
                                           Case{"densenet_like_scripted.pt", "", 0.1, 0.58},
                                           // Chen's walk used to end its last segment at the output
                                           // tuple's TupleConstruct, which the rewrite refused.
                                           Case{"tuple_out_scripted.pt", "", 0.1, 0.6, "chen"},
                                           Case{"gpt_autocast_traced.pt", "", 0.1, 0.6},
                                           // nn.TransformerEncoder scripted as it is: its masks are
                                           // left to their defaults, in the profile and in the
                                           // Python check's call of the rewritten model.
                                           Case{"encoder_masks_scripted.pt", "70%"},
                                           Case{"inplace_view_traced.pt", "", 0.1},
                                           // A traced LSTMCell stepped in Python writes gate chunks
                                           // and a returned tuple's element in place: with LibTorch's
                                           // wildcard for list and tuple elements, no segment was legal.
                                           // On LibTorch 2.14, whose engine adds a gradient to a waiting
                                           // sum in place, each segment's first slice of the embedding
                                           // output and its biases' gradients are held until the
                                           // checkpoint returns ([sum-waits]); uncounted, the rewrites
                                           // measured 32 to 66 KiB over their prediction. Its bias_ih
                                           // (512 floats) is the size of x[:, t]'s gradient (16 x 32),
                                           // which the in-place test once took for a new sum.
                                           Case{"lstm_cell_lm_traced.pt", "", 0.1, 0.2},
                                           // Scripted nn.LSTM and nn.GRU read their weights as one
                                           // list attribute each; before it crossed as its tensors,
                                           // neither op could be in a segment. An op is recomputed
                                           // whole, all time steps at once, which bounds the floor.
                                           // On LibTorch 2.14 the floor removes 3.3 % (16 % on 1.13):
                                           // the CPU LSTM now runs as oneDNN's RNN layer, and the floor
                                           // is in its backward (MkldnnRnnLayerBackward0), which holds
                                           // the layer's saved outputs (2 x 1.95 MiB) and a 557 KiB
                                           // workspace that no recompute of the whole op can drop.
                                           Case{"rnn_lm_scripted.pt", "", 0.1, 0.03}),
                         caseName);

// A plan edited by hand so that a segment holds an in-place write through a
// view of a tensor made before it: recomputing it would write twice and lose
// the write's gradient. The rewrite refuses in one line that names the rule,
// the node and the fix, with verification off too, and writes nothing.
TEST(RewriteRefusals, InPlaceWriteThroughAViewOfAnOutsideTensor) {
  const fs::path directory = makeScratchDir("refuse_inplace_view");
  fs::copy_file(fs::path(ACPROF_TEST_MODELS_DIR) / "inplace_view_traced.pt", directory / "model.pt");
  ASSERT_EQ(runIn(directory, kProfileModel).exit_code, 0);
  const Profile profile = readProfileFile((directory / "profile.json").string());
  int write = -1;
  for (const ForwardNode& node : profile.nodes)
    if (node.kind == "aten::add_") write = node.id;
  ASSERT_GE(write, 0) << "the model has no in-place add";
  ASSERT_EQ(runIn(directory, "plan --budget 100%").exit_code, 0);
  Plan plan = readPlanFile((directory / "plan.json").string());
  SegmentCut cut;
  cut.first_node = cut.last_node = write;
  plan.segments = {cut};
  writePlanFile(plan, (directory / "plan.json").string());

  const CommandResult rewritten = runIn(directory, "rewrite --no-verify");
  EXPECT_EQ(rewritten.exit_code, 1) << outputOf(rewritten);
  EXPECT_EQ(lineCount(rewritten.err), 1) << rewritten.err;
  EXPECT_NE(rewritten.err.find("[write-outside] node " + std::to_string(write) + " (aten::add_"), std::string::npos)
      << rewritten.err;
  EXPECT_NE(rewritten.err.find("make the plan again"), std::string::npos) << rewritten.err;
  EXPECT_FALSE(fs::exists(directory / "model.ckpt.pt"));
  if (!HasFailure()) fs::remove_all(directory);
}

// The files of a directory, to check that a refused command wrote nothing.
std::set<std::string> filesIn(const fs::path& directory) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) names.insert(entry.path().filename().string());
  return names;
}

// A directory holding a test model, its profile and a plan at 100 % (no
// segments: the tests edit it), made with the acprof binary.
fs::path profiledAndPlanned(const std::string& name, const std::string& model) {
  const fs::path directory = makeScratchDir(name);
  fs::copy_file(fs::path(ACPROF_TEST_MODELS_DIR) / model, directory / "model.pt");
  EXPECT_EQ(runIn(directory, kProfileModel).exit_code, 0);
  EXPECT_EQ(runIn(directory, "plan --budget 100%").exit_code, 0);
  return directory;
}

// The profile records its model and the plan its profile by absolute path, so
// a rewrite run from another directory finds both; a plan with no segment says
// so rather than rewriting in silence.
TEST(RewritePaths, APlanIsRewrittenFromAnotherDirectoryAndAnEmptyPlanSaysSo) {
  const fs::path directory = profiledAndPlanned("rewrite-elsewhere", "mlp_traced.pt");
  fs::create_directory(directory / "elsewhere");
  const CommandResult rewritten =
      runIn(directory / "elsewhere", "rewrite ../plan.json --time-rounds 0 --outcome outcome.json");
  ASSERT_EQ(rewritten.exit_code, 0) << outputOf(rewritten);
  EXPECT_TRUE(fs::exists(directory / "model.ckpt.pt"));
  EXPECT_TRUE(fs::exists(directory / "report.html"));
  EXPECT_NE(rewritten.out.find("the plan has no segment"), std::string::npos) << rewritten.out;
  // The two lines that train the result name it and the op library by absolute paths that exist.
  const std::regex python_line(R"re(train it in Python: import acprof; model = acprof\.load\("([^"]+)"\))re");
  const std::regex cpp_line(R"re(train it in C\+\+: link (\S+) \(CMake: acprof::ops\))re");
  std::smatch python_match, cpp_match;
  ASSERT_TRUE(std::regex_search(rewritten.out, python_match, python_line)) << rewritten.out;
  ASSERT_TRUE(std::regex_search(rewritten.out, cpp_match, cpp_line)) << rewritten.out;
  EXPECT_TRUE(fs::path(python_match[1].str()).is_absolute()) << python_match[1];
  EXPECT_TRUE(fs::equivalent(python_match[1].str(), directory / "model.ckpt.pt")) << python_match[1];
  EXPECT_TRUE(fs::exists(cpp_match[1].str())) << cpp_match[1];
  // The outcome carries what the lines say, as data.
  const nlohmann::json outcome = nlohmann::json::parse(fileText(directory / "elsewhere" / "outcome.json"));
  const nlohmann::json& result = outcome.at("result");
  EXPECT_EQ(result.at("verification").at("mode"), "bitwise");
  EXPECT_EQ(result.at("segments"), 0);
  EXPECT_EQ(result.at("peak").at("measured_bytes"), result.at("peak").at("predicted_bytes"));
  EXPECT_TRUE(result.at("time").is_null()) << "--time-rounds 0 times nothing";
  EXPECT_TRUE(fs::equivalent(result.at("files").at("model").get<std::string>(), directory / "model.ckpt.pt"));
  if (!HasFailure()) fs::remove_all(directory);
}

// Short steps are timed in more pairs than --time-rounds asks for, until the
// pairs have taken half a second (five pairs of 40 ms steps moved the measured
// extra time by tens of percent of the step between runs), and noisy ones
// until the median's standard error is 2 % of the step or 10 s have passed;
// the line says how many pairs and how sure. With two pairs asked for, the
// timing stops at two only once those two took half a second; medians of two
// values are their means, so the line shows it. Why the timing stopped is read from
// the outcome, not inferred from the medians: under load the steps' real total
// is far over pairs times the medians. Where a limit ended pairs whose standard
// error is over 2 %, the line, the report and the outcome's verdict say
// "inconclusive" in place of the extra time (Note: [an inconclusive extra time]).
TEST(RewriteTiming, ShortOrNoisyStepsAreTimedInMorePairsThanAsked) {
  const fs::path directory = profiledAndPlanned("acprof_timing_pairs", "gpt_traced.pt");
  ASSERT_EQ(runIn(directory, "plan --budget 70%").exit_code, 0);
  const CommandResult rewritten = runIn(directory, "rewrite --time-rounds 2 --outcome outcome.json");
  ASSERT_EQ(rewritten.exit_code, 0) << outputOf(rewritten);
  const std::regex time_line(
      R"(time: step before ([0-9.]+) ms, after ([0-9.]+) ms, extra ([-+0-9.]+)% \(median of (\d+) alternated pairs, )"
      R"((?:standard error ([0-9.]+)%|too few for a standard error)\))");
  const std::regex inconclusive_line(
      R"(time: step before ([0-9.]+) ms, after inconclusive, extra inconclusive \((\d+) alternated pairs, )"
      R"((?:standard error ([0-9.]+)%|too few for a standard error), over the 2% bound, ended by [^;]+; )"
      R"((?:--time-rounds (\d+) times more|time it on a quieter machine)\))");
  std::smatch match;
  const bool conclusive = std::regex_search(rewritten.out, match, time_line);
  ASSERT_TRUE(conclusive || std::regex_search(rewritten.out, match, inconclusive_line)) << rewritten.out;
  const double before_ms = std::stod(match[1]);
  const int pairs = std::stoi(match[conclusive ? 4 : 2]);
  const std::ssub_match& error_percent = match[conclusive ? 5 : 3];
  // The report's headline extra time is this measurement, not the profiles' times.
  const std::string html = fileText(directory / "report.html");
  const std::string open = "<script type=\"application/json\" id=\"acprof-data\">";
  const size_t begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  const size_t data = begin + open.size();
  const nlohmann::json page = nlohmann::json::parse(html.substr(data, html.find("</script>", data) - data));
  const nlohmann::json& measured = page.at("measured_time");
  EXPECT_EQ(measured.at("pairs").get<int>(), pairs);
  EXPECT_EQ(measured.at("verdict"), conclusive ? "conclusive" : "inconclusive") << rewritten.out;
  if (conclusive) {
    EXPECT_NEAR(100 * measured.at("extra_share").get<double>(), std::stod(match[3]), 0.051);
    // And the line agrees with itself: after is before at the measured extra, up
    // to the printed rounding: 0.05 ms on each step time and 0.05 percentage
    // points on the extra, which moves after by 0.0005 of before.
    const double extra_share = std::stod(match[3]) / 100;
    const double rounding_ms = 0.05 + 0.05 * (1 + std::abs(extra_share)) + 0.0005 * before_ms + 1e-9;
    EXPECT_NEAR(std::stod(match[2]), before_ms * (1 + extra_share), rounding_ms) << rewritten.out;
  } else if (match[4].matched) {
    EXPECT_GT(std::stoi(match[4]), pairs) << "an inconclusive line asks for more pairs: " << rewritten.out;
  }
  // The outcome says the same pairs, how long they took, which rule ended them,
  // and the verdict: conclusive exactly where the standard error is within 2 %.
  const nlohmann::json time = nlohmann::json::parse(fileText(directory / "outcome.json")).at("result").at("time");
  EXPECT_EQ(time.at("pairs").get<int>(), pairs);
  EXPECT_EQ(time.at("extra_share_error").is_null(), !error_percent.matched) << time;
  EXPECT_EQ(time.at("verdict"), measured.at("verdict")) << time;
  const bool within_bound = error_percent.matched && time.at("extra_share_error").get<double>() <= 0.02;
  EXPECT_EQ(within_bound, conclusive) << rewritten.out;
  const double timed_seconds = time.at("timed_seconds").get<double>();
  const std::string stopped_by = time.at("stopped_by").get<std::string>();
  EXPECT_GE(pairs, 2) << rewritten.out;
  EXPECT_LE(pairs, 50) << rewritten.out;
  // The limits are rewriter.h's (the test stays torch-free): kMostTimedRounds,
  // kLeastTimedSeconds, kMostTimedSeconds, kTimedStandardError and the step budget.
  if (stopped_by == "precise") {
    EXPECT_TRUE(conclusive) << rewritten.out;
  } else if (stopped_by == "time_limit") {
    EXPECT_GE(timed_seconds, 10.0 - 1e-9) << time;
  } else if (stopped_by == "step_budget") {
    // One more pair would have taken the command past its budget of steps:
    // never before the least time (checked below) or under the 10 s limit.
    EXPECT_LT(timed_seconds, 10.0) << time;
  } else {
    EXPECT_EQ(stopped_by, "pair_limit") << time;
    EXPECT_EQ(pairs, 50) << time;
  }
  // Short steps: two pairs asked for, yet the timing goes on until half a
  // second has passed (kLeastTimedSeconds), so two pairs are all only when
  // they took that long.
  if (stopped_by != "pair_limit") {
    EXPECT_GE(timed_seconds, 0.5) << time;
  }
  // Two pairs of this model's median steps are well under half a second (the
  // rewritten step from the outcome's median share where the line has no after).
  const double after_ms = before_ms * (1 + time.at("extra_share").get<double>());
  if (2 * (before_ms + after_ms) < 250) {
    EXPECT_GT(pairs, 2) << rewritten.out;
  }
  if (!HasFailure()) fs::remove_all(directory);
}

// CPU kernels size their workspaces by LibTorch's intra-op thread count
// (resnet18 at batch 2, 64x64: its convolution backward peaks 36 MiB higher at
// two threads than at one). Profiled at one thread, planned and rewritten by
// processes started with two: profile and plan print the count to train at,
// and the rewrite verifies, re-profiles and times at the profile's count, so
// its measured peak is the predicted one, within the budget; at two threads it
// would be over it.
TEST(RewriteThreads, TheRewriteRunsAtTheProfilesThreadCount) {
  const fs::path directory = makeScratchDir("threads");
  fs::copy_file(fs::path(ACPROF_TEST_MODELS_DIR) / "resnet18_traced.pt", directory / "model.pt");
  const std::string acprof = std::string("'") + ACPROF_BINARY + "' ";
  const CommandResult profiled = runCommand("OMP_NUM_THREADS=1 " + acprof + kProfileModel, directory.string());
  ASSERT_EQ(profiled.exit_code, 0) << outputOf(profiled);
  EXPECT_EQ(readProfileFile((directory / "profile.json").string()).meta.run.intra_op_threads, 1);
  const std::string said = "measured at 1 intra-op thread(s): train at the same count (OMP_NUM_THREADS=1)";
  EXPECT_NE(profiled.out.find(said), std::string::npos) << profiled.out;
  // Halfway between the floor and the peak: convolution workspaces, and so both, differ by CPU.
  const int64_t peak = readProfileFile((directory / "profile.json").string()).summary.peak_bytes;
  const int64_t floor = smallestReachablePeak(directory / "profile.json");
  ASSERT_LT(floor, peak) << "nothing to recompute in resnet18 at this size";
  const std::string budget = std::to_string(floor + (peak - floor) / 2);
  const CommandResult planned =
      runCommand("OMP_NUM_THREADS=2 " + acprof + "plan --budget " + budget, directory.string());
  ASSERT_EQ(planned.exit_code, 0) << outputOf(planned);
  EXPECT_NE(planned.out.find(said), std::string::npos) << "the plan holds at the profile's count\n" << planned.out;
  const Plan plan = readPlanFile((directory / "plan.json").string());
  ASSERT_FALSE(plan.segments.empty());
  const CommandResult rewritten =
      runCommand("OMP_NUM_THREADS=2 " + acprof + "rewrite --time-rounds 0", directory.string());
  ASSERT_EQ(rewritten.exit_code, 0) << outputOf(rewritten);
  EXPECT_NE(rewritten.out.find("ran with the profile's 1 intra-op thread(s), not this process's 2"),
            std::string::npos)
      << rewritten.out;
  const Profile after = readProfileFile((directory / "profile.after.json").string());
  EXPECT_EQ(after.meta.run.intra_op_threads, 1);
  EXPECT_EQ(after.summary.peak_bytes, plan.predicted_peak_bytes);
  EXPECT_LE(after.summary.peak_bytes, plan.budget_bytes);
}

// A plan made for another model (its sha256 is not the model's): one line with
// both hashes and the fix, exit 1, and no model, profile or report written.
TEST(RewriteRefusals, APlanForAnotherModelIsOneLineAndWritesNothing) {
  const fs::path directory = profiledAndPlanned("acprof_refuse_other_model", "mlp_traced.pt");
  fs::copy_file(fs::path(ACPROF_TEST_MODELS_DIR) / "cnn_traced.pt", directory / "other.pt");
  const std::set<std::string> before = filesIn(directory);

  const CommandResult rewritten = runIn(directory, "rewrite other.pt plan.json -o other.ckpt.pt");
  EXPECT_EQ(rewritten.exit_code, 1) << "exit code 1: bad input\n" << outputOf(rewritten);
  EXPECT_EQ(lineCount(rewritten.err), 1) << rewritten.err;
  EXPECT_NE(rewritten.err.find("the plan was made for a model with sha256"), std::string::npos) << rewritten.err;
  EXPECT_NE(rewritten.err.find("pass the model the plan was made for"), std::string::npos) << rewritten.err;
  EXPECT_EQ(filesIn(directory), before);
  if (!HasFailure()) fs::remove_all(directory);
}

// A plan edited by hand so that a segment ends past the model's last node: it
// is refused before any work, whether the report's profile is there (checked
// against the profile) or not (checked against the model's graph), in one line
// that says the plan was edited and to make it again; nothing is written.
TEST(RewriteRefusals, APlanEditedToANodeTheModelDoesNotHaveIsOneLineAndWritesNothing) {
  const fs::path directory = profiledAndPlanned("acprof_refuse_edited_plan", "mlp_traced.pt");
  const Profile profile = readProfileFile((directory / "profile.json").string());
  const int node_count = static_cast<int>(profile.nodes.size());
  Plan plan = readPlanFile((directory / "plan.json").string());
  SegmentCut cut;
  cut.first_node = node_count - 2;
  cut.last_node = node_count + 3;
  plan.segments = {cut};
  writePlanFile(plan, (directory / "plan.json").string());
  const std::set<std::string> before = filesIn(directory);

  const CommandResult with_profile = runIn(directory, "rewrite");
  EXPECT_EQ(with_profile.exit_code, 1) << "exit code 1: bad input\n" << outputOf(with_profile);
  EXPECT_EQ(lineCount(with_profile.err), 1) << with_profile.err;
  EXPECT_NE(with_profile.err.find(fmt::format("covers nodes {}..{}, outside the profile's {} nodes", cut.first_node,
                                              cut.last_node, node_count)),
            std::string::npos)
      << with_profile.err;
  EXPECT_NE(with_profile.err.find("the plan was edited"), std::string::npos) << with_profile.err;
  EXPECT_EQ(filesIn(directory), before);

  fs::rename(directory / "profile.json", directory / "kept-profile.json");
  const CommandResult without_profile = runIn(directory, "rewrite --no-verify");
  EXPECT_EQ(without_profile.exit_code, 1) << "exit code 1: bad input\n" << outputOf(without_profile);
  EXPECT_EQ(lineCount(without_profile.err), 1) << without_profile.err;
  EXPECT_NE(without_profile.err.find(fmt::format("the model's forward graph has nodes 0..{}", node_count - 1)),
            std::string::npos)
      << without_profile.err;
  EXPECT_NE(without_profile.err.find("the plan was edited"), std::string::npos) << without_profile.err;
  EXPECT_FALSE(fs::exists(directory / "model.ckpt.pt"));
  if (!HasFailure()) fs::remove_all(directory);
}

// A rewrite measured above its plan's budget breaks the promise: exit code 5
// and one line that names both peaks and the budget to plan with instead,
// while the model and the report (correct, and where the peak is shown) stay.
// The budget is lowered by hand below the prediction, which the simulator
// meets to the byte on this model, so the measured peak is above it.
TEST(RewriteBudget, AMeasuredPeakOverTheBudgetIsExitFiveWithTheFilesKept) {
  const fs::path directory = profiledAndPlanned("acprof_over_budget", "mlp_traced.pt");
  ASSERT_EQ(runIn(directory, "plan --budget 95%").exit_code, 0);
  Plan plan = readPlanFile((directory / "plan.json").string());
  ASSERT_FALSE(plan.segments.empty());
  plan.budget_bytes = plan.predicted_peak_bytes - 4096;
  writePlanFile(plan, (directory / "plan.json").string());

  const CommandResult rewritten = runIn(directory, "rewrite --time-rounds 0");
  EXPECT_EQ(rewritten.exit_code, 5) << "exit code 5: budget exceeded\n" << outputOf(rewritten);
  EXPECT_EQ(lineCount(rewritten.err), 1) << rewritten.err;
  EXPECT_NE(rewritten.err.find(fmt::format("over the plan's budget of {}", formatBytes(plan.budget_bytes))),
            std::string::npos)
      << rewritten.err;
  EXPECT_NE(rewritten.err.find("plan again with --budget"), std::string::npos) << rewritten.err;
  EXPECT_NE(rewritten.out.find("bit for bit"), std::string::npos) << rewritten.out;
  EXPECT_TRUE(fs::exists(directory / "model.ckpt.pt"));
  EXPECT_TRUE(fs::exists(directory / "report.html"));
  if (!HasFailure()) fs::remove_all(directory);
}

// --tolerance takes a finite number, 0 or more: anything else is one line and
// exit 2 (usage), before any file is read.
TEST(RewriteTolerance, ABadValueIsOneLineAndAUsageError) {
  const fs::path directory = makeScratchDir("bad_tolerance");
  for (const std::string value : {"-1", "=-0.5", "abc", "1e-3x", "nan", "inf", "''"}) {
    const std::string option = value[0] == '=' ? "--tolerance" + value : "--tolerance " + value;
    const CommandResult result = runIn(directory, "rewrite " + option);
    EXPECT_EQ(result.exit_code, 2) << option << "\n" << outputOf(result);
    EXPECT_EQ(lineCount(result.err), 1) << option << "\n" << result.err;
    EXPECT_NE(result.err.find("--tolerance"), std::string::npos) << option << "\n" << result.err;
  }
  const CommandResult both = runIn(directory, "rewrite --tolerance 1e-6 --no-verify");
  EXPECT_EQ(both.exit_code, 2) << outputOf(both);
  EXPECT_EQ(lineCount(both.err), 1) << both.err;
  EXPECT_TRUE(fs::is_empty(directory));
  if (!HasFailure()) fs::remove_all(directory);
}

// The tolerance mode on a real exported model: it passes (the rewrite is in
// fact bit for bit here, so the difference is 0), and the printed line and
// report.html say that a tolerance, not bit-for-bit equality, was checked.
TEST(RewriteTolerance, PassesOnAnExportedModelAndTheReportSaysWhichMode) {
  const fs::path directory = makeScratchDir("tolerance_rewrite");
  fs::copy_file(fs::path(ACPROF_TEST_MODELS_DIR) / "mlp_deep_traced.pt", directory / "model.pt");
  ASSERT_EQ(runIn(directory, kProfileModel).exit_code, 0);
  ASSERT_EQ(runIn(directory, "plan --budget 70%").exit_code, 0);
  ASSERT_FALSE(readPlanFile((directory / "plan.json").string()).segments.empty());

  const CommandResult rewritten = runIn(directory, "rewrite --tolerance 1e-6 --time-rounds 0");
  ASSERT_EQ(rewritten.exit_code, 0) << outputOf(rewritten);
  EXPECT_NE(rewritten.out.find("\nverified within tolerance 1e-06 (max diff 0): "), std::string::npos)
      << rewritten.out;
  EXPECT_EQ(rewritten.out.find("bit for bit"), std::string::npos) << rewritten.out;
  EXPECT_TRUE(fs::exists(directory / "model.ckpt.pt"));
  EXPECT_NE(fileText(directory / "report.html").find("Verification: within tolerance 1e-06 (max diff 0)."),
            std::string::npos);
  // The CPU allocator reserves nothing beyond what it allocates: no reserved figure is recorded or printed.
  EXPECT_NE(rewritten.out.find("\npeak (allocated): before "), std::string::npos) << rewritten.out;
  EXPECT_EQ(rewritten.out.find("reserved"), std::string::npos) << rewritten.out;
  EXPECT_FALSE(readProfileFile((directory / "profile.after.json").string()).summary.reserved_peak_bytes.has_value());
  if (!HasFailure()) fs::remove_all(directory);
}

// Ctrl-C while the rewrite verifies: the temporary model beside the output is
// removed and no output appears. The temporary file's name carries the pid.
TEST(RewriteRefusals, AnInterruptedRewriteLeavesNoFile) {
  const fs::path directory = makeScratchDir("interrupted_rewrite");
  fs::copy_file(fs::path(ACPROF_TEST_MODELS_DIR) / "gpt_long_traced.pt", directory / "model.pt");
  ASSERT_EQ(runIn(directory, kProfileModel).exit_code, 0);
  ASSERT_EQ(runIn(directory, "plan --budget 70%").exit_code, 0);

  CommandResult rewritten;
  std::thread rewrite([&] { rewritten = runIn(directory, "rewrite --time-rounds 0"); });
  pid_t pid = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (pid == 0 && std::chrono::steady_clock::now() < deadline) {
    for (const auto& entry : fs::directory_iterator(directory)) {
      const std::string name = entry.path().filename().string();
      const auto marker = name.find(".tmp-");
      if (name.rfind("model.ckpt.pt", 0) == 0 && marker != std::string::npos) pid = std::stoi(name.substr(marker + 5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(pid, 0) << "the rewrite never wrote its temporary model";
  ::kill(pid, SIGINT);
  rewrite.join();
  EXPECT_NE(rewritten.exit_code, 0) << outputOf(rewritten);
  for (const auto& entry : fs::directory_iterator(directory))
    EXPECT_EQ(entry.path().filename().string().rfind("model.ckpt", 0), std::string::npos)
        << entry.path() << " was left behind";
  if (!HasFailure()) fs::remove_all(directory);
}

// Where a percentage of the peak is below what any recompute reaches, acprof
// says so in one short line with the smallest peak it reached, then the
// floor's make-up in a few lines, and writes no plan.
// The CNN at 50 %: the smallest peak the solvers reach is 62 % of the profiled
// one, in the backward of its full-resolution blocks, where the original run
// already holds 47 % (their BatchNorm and ReLU tensors and gradients) and a
// segment adds the recompute and the gradient it holds. ResNet-18 at test
// size: weights and gradients are 89 of its 92 MiB.
struct InfeasibleCase {
  std::string model;
  std::string budget;
};

void PrintTo(const InfeasibleCase& c, std::ostream* out) { *out << c.model << " at " << c.budget; }

class InfeasibleBudgets : public ::testing::TestWithParam<InfeasibleCase> {};

TEST_P(InfeasibleBudgets, SayWhatTheFloorIsAndWriteNothing) {
  const fs::path directory = makeScratchDir("floor_" + fs::path(GetParam().model).stem().string());
  fs::copy_file(fs::path(ACPROF_TEST_MODELS_DIR) / GetParam().model, directory / "model.pt");
  ASSERT_EQ(runIn(directory, kProfileModel).exit_code, 0);
  const Profile profile = readProfileFile((directory / "profile.json").string());

  const CommandResult planned = runIn(directory, "plan --budget " + GetParam().budget);
  EXPECT_EQ(planned.exit_code, 3) << "exit code 3: infeasible budget\n" << outputOf(planned);
  const std::string line = planned.err.substr(0, planned.err.find('\n'));
  EXPECT_LT(line.size(), 200u + std::string("acprof: error: ").size()) << line;
  EXPECT_NE(line.find("smallest peak the refined solver reached"), std::string::npos) << planned.err;
  EXPECT_NE(planned.err.find("\nthe floor, "), std::string::npos) << "the floor's make-up follows: " << planned.err;
  EXPECT_FALSE(fs::exists(directory / "plan.json"));

  PlanRequest request;
  request.profile_path = (directory / "profile.json").string();
  request.budget_text = GetParam().budget;
  try {
    planRecompute(profile, request);
    FAIL() << GetParam().budget << " was met";
  } catch (const InfeasibleBudget& e) {
    EXPECT_LT(e.smallest_peak_bytes, profile.summary.peak_bytes) << "recompute lowered nothing";
    EXPECT_NE(line.find("--budget " + std::to_string(e.smallest_peak_bytes)), std::string::npos) << planned.err;
  }
  if (!HasFailure()) fs::remove_all(directory);
}

INSTANTIATE_TEST_SUITE_P(ReferenceModels, InfeasibleBudgets,
                         ::testing::Values(InfeasibleCase{"cnn_traced.pt", "50%"},
                                           InfeasibleCase{"resnet18_traced.pt", "70%"}),
                         [](const ::testing::TestParamInfo<InfeasibleCase>& info) {
                           return fs::path(info.param.model).stem().string();
                         });

}  // namespace
}  // namespace acprof
