// The time a rewrite costs, measured the way a user would see it: one
// training step of each model, alternated in one process so that both see the
// same machine, medians over several rounds after a warm-up round.
#include <algorithm>
#include <chrono>

#include <ATen/Context.h>

#include "acprof/model_file.h"
#include "acprof/run_modes.h"
#include "acprof/synthetic_inputs.h"
#include "acprof/optimizer.h"
#include "acprof/rewriter.h"

namespace acprof {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// Forward, loss, backward and the optimizer step, as the profile measured them:
// the plan's extra time is a share of that whole iteration.
double stepTimeUs(torch::jit::Module& module, Optimizer& optimizer, const std::vector<at::Tensor>& inputs,
                  const at::Tensor& target, const StepConfig& config) {
  const auto start = std::chrono::steady_clock::now();
  runTrainingStep(module, inputs, target, config);
  optimizer.step();
  if (config.run.device.rfind("cuda", 0) == 0) at::globalContext().lazyInitCUDA();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

StepTimes timeRewrite(const std::string& original_path, const std::string& rewritten_path, const StepConfig& config,
                      int min_rounds) {
  const std::vector<at::Tensor> inputs = makeInputs(config.inputs, config.run.device, config.run.seed);
  const at::Tensor target = config.target ? makeTensor(*config.target, config.run.device) : at::Tensor();
  const ExecutorModeGuard executor_mode(/*optimize=*/false);
  torch::jit::Module original = loadModel(original_path, config.run.device);
  torch::jit::Module rewritten = loadModel(rewritten_path, config.run.device);
  Optimizer original_optimizer(config.run.optimizer, original), rewritten_optimizer(config.run.optimizer, rewritten);
  // Warm-up, never measured; it also makes the optimizer's state, as the profile's warm-up did.
  stepTimeUs(original, original_optimizer, inputs, target, config);
  stepTimeUs(rewritten, rewritten_optimizer, inputs, target, config);
  // Short steps get more pairs: on a shared 2-core machine five pairs of
  // 40 ms steps moved the measured extra time by tens of percent of the step
  // between runs, and a second of steps costs little there.
  std::vector<double> original_us, rewritten_us, extra_shares;
  double timed_us = 0;
  for (int round = 0; round < kMostTimedRounds && (round < min_rounds || timed_us < kLeastTimedSeconds * 1e6);
       ++round) {
    original_us.push_back(stepTimeUs(original, original_optimizer, inputs, target, config));
    rewritten_us.push_back(stepTimeUs(rewritten, rewritten_optimizer, inputs, target, config));
    extra_shares.push_back((rewritten_us.back() - original_us.back()) / original_us.back());
    timed_us += original_us.back() + rewritten_us.back();
  }
  return StepTimes{median(original_us), median(rewritten_us), median(extra_shares),
                   static_cast<int>(original_us.size())};
}

}  // namespace acprof
