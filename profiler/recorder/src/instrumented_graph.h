// The model's inlined forward graph with probes: a marker op before each
// top-level node (so the session knows which node is allocating) and an
// observer op after it for each tensor output (so the session learns which
// storage each graph value lives on). The probes hold no tensors beyond the
// call, so the graph frees values at the same points as the original.
#pragma once

#include <memory>
#include <vector>

#include <torch/script.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

namespace acprof {

class InstrumentedForward {
 public:
  // `graph` is inlinedForwardGraph(module); node ids are its topLevelNodes() indices.
  explicit InstrumentedForward(const std::shared_ptr<torch::jit::Graph>& graph);

  // Runs forward with the module as `self`; the executor mode in effect applies.
  c10::IValue run(torch::jit::Module& module, const std::vector<at::Tensor>& inputs);

  // Number of tensor inputs forward takes (graph inputs minus self).
  size_t tensorInputCount() const { return input_count_; }

 private:
  std::shared_ptr<torch::jit::Graph> graph_;
  std::unique_ptr<torch::jit::GraphExecutor> executor_;
  size_t input_count_ = 0;
};

}  // namespace acprof
