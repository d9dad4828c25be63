#include "gradient_hooks.h"

#include <unordered_set>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "recording_session.h"

namespace acprof {
namespace {

using AutogradNode = torch::autograd::Node;
using torch::autograd::variable_list;

void report(const at::Tensor& gradient, const GradientTarget& target) {
  if (!gradient.defined() || !gradient.has_storage()) return;
  if (RecordingSession* session = RecordingSession::active())
    session->onGradient(gradient.storage().data(), target);
}

// Output i of the node goes along next_edges()[i].
class ReportOutputs : public torch::autograd::FunctionPostHook {
 public:
  explicit ReportOutputs(const AutogradNode& node) : node_(node) {}
  variable_list operator()(const variable_list& outputs, const variable_list& /*inputs*/) override {
    const auto& edges = node_.next_edges();
    for (size_t i = 0; i < outputs.size() && i < edges.size(); ++i) {
      const AutogradNode* next = edges[i].function.get();
      if (next)
        report(outputs[i], GradientTarget{next, next->sequence_nr(), static_cast<int>(edges[i].input_nr)});
    }
    return outputs;
  }

 private:
  const AutogradNode& node_;  // owns this hook
};

// Input k of the node is the whole gradient of its forward output k.
class ReportInputs : public torch::autograd::FunctionPreHook {
 public:
  explicit ReportInputs(const AutogradNode& node) : node_(node) {}
  variable_list operator()(const variable_list& inputs) override {
    for (size_t k = 0; k < inputs.size(); ++k)
      report(inputs[k], GradientTarget{&node_, node_.sequence_nr(), static_cast<int>(k)});
    return inputs;
  }

 private:
  const AutogradNode& node_;  // owns this hook
};

}  // namespace

std::optional<GradientTarget> gradientTargetOf(const at::Tensor& value, std::vector<compat::AutogradNodePtr>& keep) {
  if (!value.requires_grad()) return std::nullopt;
  if (value.is_leaf()) {
    compat::AutogradNodePtr accumulator = torch::autograd::impl::grad_accumulator(value);
    if (!accumulator) return std::nullopt;
    const GradientTarget target{accumulator.get(), accumulator->sequence_nr(), 0};
    keep.push_back(std::move(accumulator));
    return target;
  }
  const compat::AutogradNodePtr& grad_fn = value.grad_fn();
  if (!grad_fn) return std::nullopt;
  return GradientTarget{grad_fn.get(), grad_fn->sequence_nr(), static_cast<int>(value.output_nr())};
}

void reportGradientsOfBackward(const at::Tensor& loss) {
  std::vector<AutogradNode*> pending;
  if (AutogradNode* root = loss.grad_fn().get()) pending.push_back(root);
  std::unordered_set<AutogradNode*> seen(pending.begin(), pending.end());
  while (!pending.empty()) {
    AutogradNode* node = pending.back();
    pending.pop_back();
    node->add_pre_hook(std::make_unique<ReportInputs>(*node));
    // A node without outputs (a leaf's accumulator) hands nothing on.
    if (node->num_outputs() > 0) node->add_post_hook(std::make_unique<ReportOutputs>(*node));
    for (const torch::autograd::Edge& edge : node->next_edges()) {
      AutogradNode* next = edge.function.get();
      if (next && seen.insert(next).second) pending.push_back(next);
    }
  }
}

}  // namespace acprof
