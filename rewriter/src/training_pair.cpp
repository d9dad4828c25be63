// Both models loaded once for the verification and the timing (training_pair.h).
#include "acprof/training_pair.h"

#include "acprof/model_file.h"
#include "acprof/synthetic_inputs.h"

namespace acprof {

TrainingPair::TrainingPair(const std::string& original_path, const std::string& rewritten_path,
                           const StepConfig& config)
    : original_path(original_path),
      config(config),
      inputs(makeInputs(config.inputs, config.run.device, config.run.seed)),
      target(config.target ? makeTensor(*config.target, config.run.device) : at::Tensor()),
      original(loadModel(original_path, config.run.device)),
      rewritten(loadModel(rewritten_path, config.run.device)),
      original_optimizer(std::make_unique<Optimizer>(config.run.optimizer, original)),
      rewritten_optimizer(std::make_unique<Optimizer>(config.run.optimizer, rewritten)) {}

void TrainingPair::releaseOriginal() {
  original_optimizer.reset();  // it holds the parameters it steps
  original = torch::jit::Module();
}

void TrainingPair::releaseRewritten() {
  rewritten_optimizer.reset();
  rewritten = torch::jit::Module();
}

}  // namespace acprof
