#include "acprof/optimizer.h"

#include <algorithm>
#include <set>
#include <type_traits>

#include <torch/csrc/jit/api/module.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <fmt/format.h>

#include "acprof/contract.h"
#include "acprof/recorder.h"
#include "acprof/torch_compat.h"

namespace acprof {
namespace {

const contract::OptimizerEntry* optimizerEntry(const std::string& kind) {
  for (const contract::OptimizerEntry& entry : contract::kOptimizers)
    if (kind == entry.name) return &entry;
  return nullptr;
}

// The hyperparameters are contract.json's, which the Python front end reads too.
std::unique_ptr<torch::optim::Optimizer> makeTorchOptimizer(const std::string& kind,
                                                            std::vector<at::Tensor> parameters) {
  const contract::OptimizerEntry* entry = optimizerEntry(kind);
  if (entry == nullptr) return nullptr;
  const std::string torch_class = entry->torch_class;
  if (torch_class == "SGD")
    return std::make_unique<torch::optim::SGD>(std::move(parameters),
                                               torch::optim::SGDOptions(entry->lr).momentum(entry->momentum));
  if (torch_class == "Adam")
    return std::make_unique<torch::optim::Adam>(std::move(parameters), torch::optim::AdamOptions(entry->lr));
  if (torch_class == "AdamW")
    return std::make_unique<torch::optim::AdamW>(std::move(parameters), torch::optim::AdamWOptions(entry->lr));
  return nullptr;
}

// The tensors of one parameter's state, named as torch.optim's state_dict names
// them; a state tensor that is not in use (max_exp_avg_sq without amsgrad) is undefined.
std::vector<std::pair<std::string, at::Tensor>> namedStateTensors(const torch::optim::OptimizerParamState& state) {
  if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(&state))
    return {{"momentum_buffer", sgd->momentum_buffer()}};
  if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(&state))
    return {{"exp_avg", adam->exp_avg()}, {"exp_avg_sq", adam->exp_avg_sq()},
            {"max_exp_avg_sq", adam->max_exp_avg_sq()}};
  if (const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(&state))
    return {{"exp_avg", adamw->exp_avg()}, {"exp_avg_sq", adamw->exp_avg_sq()},
            {"max_exp_avg_sq", adamw->max_exp_avg_sq()}};
  return {};
}

}  // namespace

const std::vector<std::string>& optimizerKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> names{"none"};
    for (const contract::OptimizerEntry& entry : contract::kOptimizers) names.push_back(entry.name);
    return names;
  }();
  return kinds;
}

Optimizer::Optimizer(std::string kind, const torch::jit::Module& module) : kind_(std::move(kind)) {
  const auto& kinds = optimizerKinds();
  if (std::find(kinds.begin(), kinds.end(), kind_) == kinds.end()) {
    std::string choices;
    for (const std::string& k : kinds) choices += (choices.empty() ? "" : ", ") + k;
    throw RecordError(fmt::format("unknown optimizer '{}'; use {}", kind_, choices));
  }
  std::vector<at::Tensor> parameters;
  std::set<const c10::TensorImpl*> distinct;
  for (const at::Tensor& parameter : module.parameters())
    if (distinct.insert(parameter.unsafeGetTensorImpl()).second) parameters.push_back(parameter);
  optimizer_ = makeTorchOptimizer(kind_, std::move(parameters));
}

Optimizer::~Optimizer() = default;

void Optimizer::step() {
  if (optimizer_) optimizer_->step();
}

std::vector<std::pair<std::string, at::Tensor>> Optimizer::stateOf(const at::Tensor& parameter) const {
  if (!optimizer_) return {};
  const auto& states = optimizer_->state();
  const auto found = states.find(compat::optimizerStateKey<std::decay_t<decltype(states)>>(parameter));
  if (found == states.end()) return {};
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (auto& [name, tensor] : namedStateTensors(*found->second))
    if (tensor.defined()) tensors.emplace_back(name, tensor);
  return tensors;
}

}  // namespace acprof
