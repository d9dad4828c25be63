// What each graph pass's test needs: a scripted module's inlined forward graph
// (as inlinedForwardGraph starts: Inline, nothing else), a count of node kinds,
// and a run of a graph on the module, to show a pass kept what it computes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

namespace acprof::testing {

inline std::shared_ptr<torch::jit::Graph> inlinedGraphOf(torch::jit::Module& module) {
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  return graph;
}

// Nodes of `kind` in the graph, counting those inside blocks when `nested`.
inline int countNodes(torch::jit::Block* block, torch::jit::Symbol kind, bool nested = true) {
  int count = 0;
  for (torch::jit::Node* node : block->nodes()) {
    count += node->kind() == kind;
    if (nested)
      for (torch::jit::Block* inner : node->blocks()) count += countNodes(inner, kind, nested);
  }
  return count;
}

// The graph run on the module (its first input) and `inputs`: the first output, a tensor.
inline at::Tensor runGraph(const std::shared_ptr<torch::jit::Graph>& graph, torch::jit::Module& module,
                           const std::vector<c10::IValue>& inputs) {
  torch::jit::GraphExecutor executor(graph->copy(), "pass_test");
  torch::jit::Stack stack{module._ivalue()};
  for (const c10::IValue& input : inputs) stack.push_back(input);
  executor.run(stack);
  return stack.at(0).toTensor();
}

}  // namespace acprof::testing
