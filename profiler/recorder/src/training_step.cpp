#include "acprof/training_step.h"

#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include "acprof/loss.h"
#include "acprof/run_modes.h"

namespace acprof {

void clearGradients(torch::jit::Module& module) {
  for (at::Tensor parameter : module.parameters()) parameter.mutable_grad() = at::Tensor();
}

StepConfig stepConfigOf(const RunConfig& run) {
  StepConfig config;
  config.run = run;
  for (const std::string& spec : run.input_specs) config.inputs.push_back(parseInputSpec(spec));
  if (!run.target_spec.empty()) config.target = parseInputSpec(run.target_spec);
  return config;
}

const c10::FunctionSchema& forwardSchema(const torch::jit::Module& module) {
  return module.get_method("forward").function().getSchema();
}

size_t requiredForwardArguments(const torch::jit::Module& module) {
  const std::vector<c10::Argument>& arguments = forwardSchema(module).arguments();
  size_t required = 0;
  for (size_t i = 1; i < arguments.size(); ++i)  // argument 0 is self
    if (!arguments[i].default_value()) required = i;
  return required;
}

std::vector<c10::IValue> forwardArguments(const torch::jit::Module& module, const std::vector<at::Tensor>& inputs) {
  const std::vector<c10::Argument>& arguments = forwardSchema(module).arguments();
  std::vector<c10::IValue> stack(inputs.begin(), inputs.end());
  for (size_t i = inputs.size() + 1; i < arguments.size(); ++i) {
    if (!arguments[i].default_value())
      throw std::invalid_argument(fmt::format("forward's argument '{}' has no default; pass an --input for it",
                                              arguments[i].name()));
    stack.push_back(*arguments[i].default_value());
  }
  return stack;
}

StepOutcome runTrainingStep(torch::jit::Module& module, const std::vector<at::Tensor>& inputs,
                            const at::Tensor& target, const StepConfig& config) {
  clearGradients(module);
  at::manual_seed(config.run.seed);
  // Its own copy of the inputs: a model that writes to an input in place must
  // not change what the next run (the other model, in verification) sees.
  std::vector<at::Tensor> copies;
  for (const at::Tensor& input : inputs) copies.push_back(input.clone());
  std::vector<c10::IValue> stack = forwardArguments(module, copies);
  at::Tensor loss;
  {
    std::optional<AutocastScope> autocast;
    if (!config.run.autocast.empty()) autocast.emplace(config.run.autocast, c10::Device(config.run.device).type());
    const c10::IValue output = module.forward(stack);
    loss = computeLoss(output, resolveLossKind(output, config.run.loss), target);
  }
  loss.backward();
  StepOutcome outcome;
  outcome.loss = loss.detach().clone();
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    const at::Tensor& grad = parameter.value.grad();
    outcome.gradients.emplace_back(parameter.name, grad.defined() ? grad.clone() : at::Tensor());
  }
  for (const auto& buffer : module.named_buffers(/*recurse=*/true))
    outcome.buffers.emplace_back(buffer.name, buffer.value.clone());
  return outcome;
}

}  // namespace acprof
