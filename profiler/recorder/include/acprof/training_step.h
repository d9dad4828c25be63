// One training step of a TorchScript module, shared by the recorder (which
// measures it) and the rewriter's verification (which compares two models on
// it). Inputs and losses are built the same way in both, from the same seed.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/script.h>

#include "acprof/autocast_state.h"
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

// Throws RecordError unless `dtype` is "", "bfloat16" or "float16".
void checkAutocastDtype(const std::string& dtype);

// Forward (and the loss) under autocast for a scope, as Python's
// `with torch.autocast(device_type, dtype=...)`: enabled, the dtype set, the
// cast cache cleared when the outermost scope ends. TorchScript's own autocast
// graph pass is off meanwhile: it casts some ops' inputs to float32 where eager
// autocast would not, and a checkpoint segment's recompute runs without it, so
// with it on the original and the rewritten model would round differently.
class AutocastScope {
 public:
  AutocastScope(const std::string& dtype, c10::DeviceType device_type);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  AutocastStateScope state_;
  bool previous_jit_pass_;
};

// Every tensor in a model output, depth first: a tensor, or the tensors in a
// tuple, list or dict (values in insertion order), nested.
std::vector<at::Tensor> tensorsIn(const c10::IValue& value);

// Loads a TorchScript file onto the device, in train mode. Throws std::runtime_error
// with a one-line message when the file is missing or not TorchScript.
torch::jit::Module loadModel(const std::string& path, const std::string& device);

// The one line of a LibTorch error that says what went wrong: TorchScript
// errors start with a generic line and end with "RuntimeError: <the reason>".
std::string oneLineTorchError(const std::exception& error);

// Reads the input/target specs that models/ export scripts store in the archive
// (archive extra files "acprof_inputs", one spec per line; "acprof_target"; "acprof_loss").
// Missing entries are returned empty.
struct StoredSpecs {
  std::vector<std::string> inputs;
  std::string target;
  std::string loss;
  std::string autocast;  // "acprof_autocast"
};
StoredSpecs readStoredSpecs(const std::string& model_path);

std::vector<at::Tensor> makeInputs(const std::vector<InputSpec>& specs, const std::string& device, uint64_t seed);
at::Tensor makeTensor(const InputSpec& spec, const std::string& device);

// The resolved loss kind for a model output: "model" when the output is a scalar
// and the config says auto; otherwise the config's choice ("auto" means "mean").
std::string resolveLossKind(const c10::IValue& output, const std::string& requested);
at::Tensor computeLoss(const c10::IValue& output, const std::string& loss_kind, const at::Tensor& target);

// Resets every parameter's .grad to undefined, as optimizer.zero_grad(set_to_none=True).
void clearGradients(torch::jit::Module& module);

// Keeps TorchScript's executor optimization in one mode for a scope.
class ExecutorModeGuard {
 public:
  explicit ExecutorModeGuard(bool optimize);
  ~ExecutorModeGuard();
  ExecutorModeGuard(const ExecutorModeGuard&) = delete;
  ExecutorModeGuard& operator=(const ExecutorModeGuard&) = delete;

 private:
  bool previous_;
};

// Runs forward + loss + backward once on a fresh copy of nothing: the module's
// parameters' grads are reset to undefined first. Seeds the CPU (and CUDA) RNG
// with config.run.seed before forward so dropout masks are reproducible.
struct StepOutcome {
  at::Tensor loss;
  std::vector<std::pair<std::string, at::Tensor>> gradients;  // by parameter name
  std::vector<std::pair<std::string, at::Tensor>> buffers;    // after the step
};
StepOutcome runTrainingStep(torch::jit::Module& module, const std::vector<at::Tensor>& inputs,
                            const at::Tensor& target, const StepConfig& config);

}  // namespace acprof
