// The time a rewrite costs, measured the way a user would see it: one
// training step of each model, alternated in one process so that both see the
// same machine, medians over several rounds after a warm-up round (the
// verified step, where there was one).
#include <algorithm>
#include <chrono>
#include <cmath>

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "acprof/optimizer.h"
#include "acprof/rewriter.h"
#include "acprof/run_modes.h"
#include "acprof/statistics.h"
#include "acprof/training_pair.h"

namespace acprof {
namespace {

// On CUDA the step's kernels run after their launches return: the clock reads
// the device's end, not the host's.
void waitForDevice(const StepConfig& config) {
  if (config.run.device.rfind("cuda", 0) == 0) torch::cuda::synchronize();
}

// Forward, loss, backward and the optimizer step, as the profile measured them:
// the plan's extra time is a share of that whole iteration.
double stepTimeUs(torch::jit::Module& module, Optimizer& optimizer, const std::vector<at::Tensor>& inputs,
                  const at::Tensor& target, const StepConfig& config) {
  waitForDevice(config);
  const auto start = std::chrono::steady_clock::now();
  runTrainingStep(module, inputs, target, config);
  optimizer.step();
  waitForDevice(config);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::optional<double> medianStandardError(std::vector<double> values) {
  const size_t n = values.size();
  if (n < 2) return std::nullopt;
  // Two values have no quartiles; their median is their mean, whose standard
  // error is the sample deviation |a - b| / sqrt(2) over sqrt(2).
  if (n == 2) return std::abs(values[0] - values[1]) / 2;
  std::sort(values.begin(), values.end());
  // Quartiles by linear interpolation between order statistics.
  const auto quantile = [&](double q) {
    const double position = q * static_cast<double>(n - 1);
    const size_t below = static_cast<size_t>(position);
    const size_t above = std::min(below + 1, n - 1);
    return values[below] + (position - static_cast<double>(below)) * (values[above] - values[below]);
  };
  const double sigma = (quantile(0.75) - quantile(0.25)) / 1.349;
  return 1.2533 * sigma / std::sqrt(static_cast<double>(n));
}

std::optional<TimingStop> whyTimingStops(const std::vector<double>& extra_shares, double timed_seconds,
                                         int min_rounds, bool another_pair_fits) {
  const int rounds = static_cast<int>(extra_shares.size());
  if (rounds < min_rounds) return std::nullopt;
  if (rounds >= kMostTimedRounds) return TimingStop::PairLimit;
  if (timed_seconds < kLeastTimedSeconds) return std::nullopt;
  // Precise before the time limit: a median that is sure enough is so however long it took.
  const std::optional<double> error = medianStandardError(extra_shares);
  if (error && *error <= kTimedStandardError) return TimingStop::Precise;
  if (timed_seconds >= kMostTimedSeconds) return TimingStop::TimeLimit;
  if (!another_pair_fits) return TimingStop::StepBudget;
  return std::nullopt;
}

TimingVerdict timingVerdict(const std::optional<double>& extra_share_error) {
  return extra_share_error && *extra_share_error <= kTimedStandardError ? TimingVerdict::Conclusive
                                                                        : TimingVerdict::Inconclusive;
}

int pairsForPreciseTiming(const std::optional<double>& extra_share_error, int pairs) {
  // Too few pairs for a standard error: two have one.
  if (!extra_share_error) return std::max(pairs + 1, 2);
  const double ratio = *extra_share_error / kTimedStandardError;
  const double wanted = std::ceil(static_cast<double>(pairs) * ratio * ratio);
  return std::max(pairs + 1, static_cast<int>(std::min(wanted, 1e6)));
}

StepTimes timeRewrite(TrainingPair& pair, int min_rounds, bool keep_to_step_budget) {
  const StepConfig& config = pair.config;
  const ExecutorModeGuard executor_mode(/*optimize=*/false);
  const IntraOpThreadsGuard threads(config.run.intra_op_threads);
  const auto step = [&](torch::jit::Module& module, Optimizer& optimizer) {
    return stepTimeUs(module, optimizer, pair.inputs, pair.target, config);
  };
  if (pair.steps_taken == 0) {
    // Warm-up, never measured; it also makes the optimizer's state, as the profile's warm-up did.
    step(pair.original, *pair.original_optimizer);
    step(pair.rewritten, *pair.rewritten_optimizer);
    ++pair.steps_taken;
  } else {
    // The verified step was the warm-up; its optimizer step makes the state.
    pair.original_optimizer->step();
    pair.rewritten_optimizer->step();
  }
  pair.optimizers_stepped = true;
  std::vector<double> original_us, rewritten_us, extra_shares;
  double timed_us = 0;
  std::optional<TimingStop> stop;
  // Whether one more pair, the re-profile and the files after it keep the
  // command within its budget of the original's steps, counted from the
  // process start.
  const auto anotherPairFits = [&] {
    if (!keep_to_step_budget || original_us.empty()) return true;
    const double original_s = median(original_us) / 1e6, rewritten_s = median(rewritten_us) / 1e6;
    const double after_s = kReprofileSteps * rewritten_s + kDerivingAndWritingSeconds;
    return processAgeSeconds() + original_s + rewritten_s + after_s <= kRewriteStepBudget * original_s;
  };
  while (min_rounds > 0 &&
         !(stop = whyTimingStops(extra_shares, timed_us / 1e6, min_rounds, anotherPairFits()))) {
    // Every other pair runs the rewritten model first, so that neither model
    // always inherits the other's caches and allocator state.
    const bool rewritten_first = extra_shares.size() % 2 == 1;
    if (rewritten_first) rewritten_us.push_back(step(pair.rewritten, *pair.rewritten_optimizer));
    original_us.push_back(step(pair.original, *pair.original_optimizer));
    if (!rewritten_first) rewritten_us.push_back(step(pair.rewritten, *pair.rewritten_optimizer));
    extra_shares.push_back((rewritten_us.back() - original_us.back()) / original_us.back());
    timed_us += original_us.back() + rewritten_us.back();
  }
  if (extra_shares.empty()) return StepTimes{};
  const std::optional<double> error = medianStandardError(extra_shares);
  return StepTimes{median(original_us), median(extra_shares), error, static_cast<int>(original_us.size()),
                   timed_us / 1e6, *stop, timingVerdict(error)};
}

}  // namespace acprof
