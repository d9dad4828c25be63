// The time a rewrite costs, measured the way a user would see it: one
// training step of each model, alternated in one process so that both see the
// same machine, medians over several rounds after a warm-up round (the
// verified step, where there was one).
#include <chrono>

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
  const auto anotherPairFitsHere = [&] {
    if (!keep_to_step_budget || original_us.empty()) return true;
    return anotherPairFits(processAgeSeconds(), median(original_us) / 1e6, median(rewritten_us) / 1e6);
  };
  while (min_rounds > 0 &&
         !(stop = whyTimingStops(extra_shares, timed_us / 1e6, min_rounds, anotherPairFitsHere()))) {
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
  return stepTimesOf(original_us, rewritten_us, timed_us / 1e6, *stop);
}

}  // namespace acprof
