// One training step of a TorchScript module, shared by the recorder (which
// measures it) and the rewriter's verification (which compares two models on
// it). Inputs and losses are built the same way in both, from the same seed.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/script.h>

#include "acprof/input_spec.h"
#include "acprof/profile_format.h"

namespace acprof {

// A RunConfig with its specs parsed: what runTrainingStep, verification and
// timing need. Made by stepConfigOf, the one conversion.
struct StepConfig {
  RunConfig run;
  std::vector<InputSpec> inputs;
  std::optional<InputSpec> target;  // required for cross_entropy
};

// Throws (InputSpecError) for a spec that does not parse.
StepConfig stepConfigOf(const RunConfig& run);

// forward's signature, self first.
const c10::FunctionSchema& forwardSchema(const torch::jit::Module& module);

// forward's arguments (self excluded) without a default value: the fewest
// inputs a run may give. The others, e.g. `mask: Optional[Tensor] = None` or
// nn.Transformer's masks, take their defaults, as a Python call would.
size_t requiredForwardArguments(const torch::jit::Module& module);

// The stack forward runs on: the inputs, then the schema's default of every
// argument after them (an executor that runs forward's graph directly, as the
// recorder's instrumented one does, fills in no defaults itself).
std::vector<c10::IValue> forwardArguments(const torch::jit::Module& module, const std::vector<at::Tensor>& inputs);

// Resets every parameter's .grad to undefined, as optimizer.zero_grad(set_to_none=True).
void clearGradients(torch::jit::Module& module);

// Runs forward + loss + backward once on the module as it is (callers load a
// fresh copy when they compare two models): its parameters' grads are reset
// to undefined first. Seeds the CPU (and CUDA) RNG
// with config.run.seed before forward so dropout masks are reproducible.
struct StepOutcome {
  at::Tensor loss;
  std::vector<std::pair<std::string, at::Tensor>> gradients;  // by parameter name
  std::vector<std::pair<std::string, at::Tensor>> buffers;    // after the step
};
StepOutcome runTrainingStep(torch::jit::Module& module, const std::vector<at::Tensor>& inputs,
                            const at::Tensor& target, const StepConfig& config);

}  // namespace acprof
