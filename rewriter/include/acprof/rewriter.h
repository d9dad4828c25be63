// The rewriter: turns a plan into a TorchScript model that recomputes the
// planned activations, and proves it trains like the original.
//
// Each planned segment (a contiguous range of top-level nodes of the inlined
// forward graph, numbered as in profile.json) becomes one call of
// acprof::checkpoint, whose runtime is libacprof_ops.so. Guarantees:
//   - the plan must have been made for this very model file (same sha256) and
//     name the graph's values as the model has them, or nothing is written;
//   - the output is an ordinary TorchScript archive (torch.jit.load after
//     torch.ops.load_library("libacprof_ops.so"));
//   - unless verification is turned off, the rewritten model is only written
//     (atomically) after one training step on it gave the same loss, gradients
//     and buffers as the original: bit for bit, with deterministic algorithms
//     on for both runs (so that CUDA's atomics cannot make them differ), or,
//     where the user asks for it, within an absolute tolerance.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/script.h>

#include "acprof/command_budget.h"
#include "acprof/error.h"
#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/training_step.h"

namespace acprof {

struct TrainingPair;  // training_pair.h

// A problem the user can fix (wrong plan, wrong model, output path); one line.
class RewriteError : public Error {
 public:
  explicit RewriteError(const std::string& message, ErrorKind kind = ErrorKind::BadInput) : Error(kind, message) {}
};

// Loads the model at `model_path` and replaces the plan's segments with
// checkpoint calls. Does not check the plan's sha256; rewriteModelFile does.
torch::jit::Module checkpointedModel(const std::string& model_path, const Plan& plan);

// The first value two training steps disagree on: "the loss", "the gradient of
// 'fc.weight'", "buffer 'bn.running_mean'", and by how much (a NaN on one side is infinite).
struct StepDifference {
  std::string what;
  double abs_diff = 0;
  // Where `what` is a parameter's gradient: the parameter's name, and the ops
  // that read it in forward, whose backward makes that gradient ("aten::linear
  // in fc"); empty where not found (verifyRewrite fills made_by).
  std::string parameter;
  std::string made_by;
};
// In the verification's terms: any bit, or more than the tolerance when one is given.
std::optional<StepDifference> firstDifference(const StepOutcome& first, const StepOutcome& second,
                                              std::optional<double> tolerance);

// How one training step of the rewritten model compared with the original.
struct VerificationResult {
  double loss_abs_diff = 0;
  double max_gradient_abs_diff = 0;
  double max_buffer_abs_diff = 0;
  size_t gradients_compared = 0;
  size_t buffers_compared = 0;
  bool bitwise_equal = false;  // loss, every gradient and every buffer
  // The mode: unset, bit for bit with deterministic algorithms on for both runs;
  // set, every difference at most this (absolute), in the caller's algorithm settings.
  std::optional<double> tolerance;

  // Set where the rewrite did not pass and a second step of the original
  // differed from the first (rewrite.cpp then blames the original, not acprof).
  std::optional<StepDifference> original_difference;

  // The largest of the three differences (a NaN counts as infinite).
  double maxAbsDiff() const;
  // Bit for bit, or within the tolerance when one was given.
  bool passed() const { return tolerance ? maxAbsDiff() <= *tolerance : bitwise_equal; }
};

// Runs one training step (same inputs, same seed) of each model of a freshly
// loaded pair, which is then one step into training. Without a tolerance both steps run with deterministic algorithms on and cuDNN
// benchmarking off (at::Context), restored afterwards; on CUDA, bit-equal
// results also need CUBLAS_WORKSPACE_CONFIG=:4096:8 set before CUDA starts,
// which the caller owns (acprof rewrite sets it when unset). An op without a
// deterministic implementation is a RewriteError that suggests a tolerance.
VerificationResult verifyRewrite(TrainingPair& pair, std::optional<double> tolerance = std::nullopt);
// The same on a pair loaded here from the two files.
VerificationResult verifyRewrite(const std::string& original_path, const std::string& rewritten_path,
                                 const StepConfig& config, std::optional<double> tolerance = std::nullopt);

// Wall time of one training step (forward, loss, backward, optimizer) of the
// original and of the rewritten model, alternated in one process, so that both
// are timed on the same machine state: at least `min_rounds` pairs, then more
// (never over kMostTimedRounds) until whyTimingStops names a reason to stop.
// A pair that has taken no step yet is warmed up by one untimed step each; a
// verified pair applies its optimizers to the verified step's gradients
// instead (the state a warm-up step makes), untimed.
constexpr int kDefaultTimedRounds = 2;
constexpr int kMostTimedRounds = 50;
constexpr double kLeastTimedSeconds = kLeastRoundSeconds;
constexpr double kMostTimedSeconds = 10.0;
constexpr double kTimedStandardError = 0.02;
// Why the pairs stopped, so that a reader of the result can tell a precise
// median from one the time or pair limit cut short, without redoing the rule.
enum class TimingStop {
  Precise,    // the median share's standard error is within kTimedStandardError
  TimeLimit,  // the pairs' steps have taken kMostTimedSeconds
  StepBudget,  // one more pair would take the rewrite past kRewriteStepBudget of the original's steps
  PairLimit,  // kMostTimedRounds pairs, or the pairs asked for where more
};
// Note: [an inconclusive extra time]
// Whether the pairs' median extra time is a measurement to state: conclusive
// where its standard error is known and within kTimedStandardError, however
// the pairs ended; inconclusive where a limit (the step budget, the 10 s, the
// pair limit) ended them first. Two pairs that disagree by a third of the step
// (the demo's "extra +50.5% ... standard error 16.8%", issue 61) say that the
// machine was busy, not what the rewrite costs, so an inconclusive extra time
// is not printed as a number: the time line and report.html say
// "inconclusive", and the outcome's time carries the verdict as a field.
enum class TimingVerdict { Conclusive, Inconclusive };
TimingVerdict timingVerdict(const std::optional<double>& extra_share_error);
// The pairs that would likely bring a standard error of `extra_share_error`
// over `pairs` within kTimedStandardError (it falls as 1 / sqrt(pairs)), at
// least one more: what an inconclusive time line suggests for --time-rounds,
// where it is no more than kMostTimedRounds.
int pairsForPreciseTiming(const std::optional<double>& extra_share_error, int pairs);

struct StepTimes {
  double original_us = 0;  // median
  // The median over the pairs of (rewritten - original) / original: a pair's
  // two steps share the machine's state of the moment, which the medians of
  // each model's steps taken apart do not.
  double extra_share = 0;
  std::optional<double> extra_share_error;  // medianStandardError of the pairs' shares
  int rounds = 0;
  // The timed steps' wall time added up: what kMostTimedSeconds limits. Under
  // load it is well over rounds times the medians, which skip the slow steps.
  double timed_seconds = 0;
  TimingStop stopped_by = TimingStop::PairLimit;
  TimingVerdict verdict = TimingVerdict::Inconclusive;  // timingVerdict(extra_share_error)
};
// `keep_to_step_budget`: pairs beyond the fewest only while one more keeps the
// command, counted from this process's start, within kRewriteStepBudget of the
// original's steps (command_budget.h); `acprof rewrite` does.
StepTimes timeRewrite(TrainingPair& pair, int min_rounds, bool keep_to_step_budget = false);
// What the rewrite runs after its pairs, in the rewritten model's steps: the
// re-profile's one instrumented iteration (1.16 of the rewritten step on
// gpt_cost, docs/command-cost.md); deriving and writing come on top.
constexpr double kReprofileSteps = 1.2;

// The standard error of the median of `values`, from their interquartile
// range (1.2533 sigma / sqrt(n), sigma = IQR / 1.349, as for normal noise):
// robust to the odd step a busy machine stretches. With 3, the interpolated
// quartiles make the IQR half their range; with 2, the mean's standard error
// (half their difference); none for one value.
std::optional<double> medianStandardError(std::vector<double> values);

// Which limit ends the pairs, or none while more are wanted: after `min_rounds`
// pairs, more while the pairs have taken under kLeastTimedSeconds (steps of a
// few milliseconds, whose few-pair medians swing with the odd slow step, at a
// cost of half a second), or while the median share's standard error is over
// kTimedStandardError of the step (or too few pairs to say) and they have taken
// under kMostTimedSeconds: one step to the next varied by ±15 % on a shared
// 2-core machine, so five pairs left the median uncertain by about 10 % of the
// step, while on a quiet one two pairs agree within 4 % and the rewrite stops
// there (issue 36: a rewrite in at most ten steps). And, past
// kLeastTimedSeconds, no more once `another_pair_fits` is false: the
// command's step budget (timeRewrite) outranks the pairs' precision, whose
// standard error the result then states.
std::optional<TimingStop> whyTimingStops(const std::vector<double>& extra_shares, double timed_seconds,
                                         int min_rounds, bool another_pair_fits = true);

struct RewriteOptions {
  std::string model_path;   // empty: the plan's model_path
  std::string output_path;  // empty: <model stem>.ckpt.pt beside the model
  bool verify = true;  // the rewritten model must then match the original bit for bit
  std::optional<double> tolerance;  // ... or within this absolute difference (verifyRewrite)
  // The training step to verify with (stepConfigOf the plan's profile's
  // run), for a caller that has read the profile; unset: read it here.
  std::optional<StepConfig> step;
  std::function<void(const std::string&)> progress;  // optional, one short line per stage
};

struct RewriteResult {
  std::string model_path;
  std::string output_path;
  size_t segment_count = 0;
  std::optional<VerificationResult> verification;
  // The pair the verification stepped, for timeRewrite to go on from; null
  // when not verified. It holds both models: release it before measuring memory.
  std::shared_ptr<TrainingPair> verified_pair;
};

// Checks the plan against the model, rewrites, verifies against the profile's
// training step (plan.profile_path), and writes output_path whole or not at all.
RewriteResult rewriteModelFile(const Plan& plan, const RewriteOptions& options);

// "<dir>/<stem>.ckpt.pt" for "<dir>/<stem>.pt".
std::string defaultRewrittenPath(const std::string& model_path);

}  // namespace acprof

namespace acprof {

// Measures the rewritten model as the original profile was measured (same
// input specs, target, loss, optimizer, device, executor mode), in one
// measured iteration: the peak and timeline are the first iteration's in any
// profile, and timeRewrite measures the time. `trained`, where not null: the
// pair timeRewrite trained, whose rewritten model is recorded as it is (warm,
// its optimizer's state made, as a warm-up iteration would leave it), with no
// second load and no warm-up; the pair's original is released first. Where the
// profile ran with executor optimization on, or the pair has not trained, the
// model is loaded from rewritten_path and warmed up as the profile was.
Profile profileRewrittenModel(const ProfileMeta& original, const std::string& rewritten_path, TrainingPair* trained,
                              const std::function<void(const std::string&)>& progress = {});

}  // namespace acprof
