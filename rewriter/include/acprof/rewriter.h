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
#include "acprof/pair_timing.h"
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
// `keep_to_step_budget`: pairs beyond the fewest only while one more keeps the
// command, counted from this process's start, within kRewriteStepBudget of the
// original's steps (command_budget.h); `acprof rewrite` does.
StepTimes timeRewrite(TrainingPair& pair, int min_rounds, bool keep_to_step_budget = false);

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
