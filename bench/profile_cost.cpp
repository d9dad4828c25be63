// How much a whole `acprof profile` run costs, as a ratio to one plain training
// iteration of the same model, both measured here in one process.
//
//   acprof_profile_cost model.pt [more.pt ...]
//
// Target (issue 2): the whole profile run costs at most ten iterations' worth.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "acprof/model_file.h"
#include "acprof/run_modes.h"
#include "acprof/synthetic_inputs.h"
#include "acprof/recorder.h"
#include "acprof/training_step.h"

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median wall time of plain iterations (forward, loss, backward) after one warm-up.
double plainIterationSeconds(const std::string& path, int iterations) {
  torch::jit::Module module = acprof::loadModel(path, "cpu");
  const acprof::StoredSpecs stored = acprof::readStoredSpecs(path);
  acprof::StepConfig config;
  for (const std::string& spec : stored.inputs) config.inputs.push_back(acprof::parseInputSpec(spec));
  if (!stored.target.empty()) config.target = acprof::parseInputSpec(stored.target);
  config.run.loss = stored.loss.empty() ? "auto" : stored.loss;
  const std::vector<at::Tensor> inputs = acprof::makeInputs(config.inputs, "cpu", 0);
  const at::Tensor target = config.target ? acprof::makeTensor(*config.target, "cpu") : at::Tensor();
  acprof::ExecutorModeGuard mode(false);
  std::vector<double> times;
  for (int i = 0; i <= iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    acprof::runTrainingStep(module, inputs, target, config);
    if (i > 0) times.push_back(secondsSince(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s model.pt [more.pt ...]\n", argv[0]);
    return 2;
  }
  acprof::keepFreedHostMemory();  // as acprof-torch runs: both sides of the ratio without page faults
  std::printf("%-40s %12s %14s %8s\n", "model", "iteration_s", "profile_run_s", "ratio");
  for (int i = 1; i < argc; ++i) {
    const double iteration = plainIterationSeconds(argv[i], 5);
    acprof::RecordOptions options;  // the defaults `acprof profile model.pt` uses
    options.model_path = argv[i];
    const auto start = std::chrono::steady_clock::now();
    const acprof::Profile profile = acprof::recordProfile(options);
    const double profile_run = secondsSince(start);
    std::printf("%-40s %12.4f %14.4f %8.2f\n", argv[i], iteration, profile_run, profile_run / iteration);
  }
  return 0;
}
