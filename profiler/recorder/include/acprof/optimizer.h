// The optimizer step of a profiled training iteration. It is LibTorch's own
// torch::optim (SGD with momentum, Adam, AdamW), not an update written here, so
// the state it keeps between steps and the temporaries its step makes are the
// bytes a user's training loop with the same optimizer allocates.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch::jit {
struct Module;
}
namespace torch::optim {
class Optimizer;
}

namespace acprof {

// What `acprof profile --optimizer` accepts, "none" first.
const std::vector<std::string>& optimizerKinds();

class Optimizer {
 public:
  // Hyperparameters are PyTorch's defaults for the optimizer with lr as given:
  // sgd: SGD(lr=0.01, momentum=0.9); adam: Adam(lr=1e-3); adamw: AdamW(lr=1e-3,
  // weight_decay=1e-2). It steps each of the module's parameters once, as
  // Python's module.parameters() lists them: a weight held by two attributes is
  // one parameter. Throws RecordError for a kind not in optimizerKinds().
  Optimizer(std::string kind, const torch::jit::Module& module);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One step over the parameters' current .grad; nothing for "none".
  void step();
  // The tensors the optimizer keeps for `parameter` between steps, with their
  // names in torch.optim's state_dict ("momentum_buffer", "exp_avg", ...);
  // empty before the first step that saw the parameter's gradient.
  std::vector<std::pair<std::string, at::Tensor>> stateOf(const at::Tensor& parameter) const;
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;  // null for "none"
};

}  // namespace acprof
