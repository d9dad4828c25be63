#include "acprof/forward_graph.h"

#include <torch/csrc/jit/passes/inliner.h>

namespace acprof {

std::shared_ptr<torch::jit::Graph> inlinedForwardGraph(const torch::jit::Module& module) {
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  return graph;
}

std::vector<torch::jit::Node*> topLevelNodes(torch::jit::Graph& graph) {
  std::vector<torch::jit::Node*> nodes;
  for (torch::jit::Node* node : graph.nodes()) nodes.push_back(node);
  return nodes;
}

std::string moduleScope(const torch::jit::Node* node) {
  // The inliner records, for each inlined call, which submodule instance it
  // came from; the chain of instance names is the module path.
  std::string scope;
  auto callstack = node->callstack();
  while (callstack) {
    const auto& frame = *callstack;
    if (auto instance = frame->module_instance()) {
      const std::string name = instance->instance_name();
      if (!name.empty() && name != "SELF") scope += (scope.empty() ? "" : ".") + name;
    }
    callstack = frame->callee();
  }
  return scope;
}

bool isCuttable(const torch::jit::Node* node) {
  if (!node->blocks().empty()) return false;  // control flow stays outside segments
  const auto kind = node->kind();
  if (kind == torch::jit::prim::Param || kind == torch::jit::prim::Return) return false;
  return !node->hasSideEffects();
}

std::vector<std::string> mutatedInputNames(const torch::jit::Node* node) {
  std::vector<std::string> names;
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!schema) return names;
  const auto& arguments = schema->arguments();
  for (size_t i = 0; i < arguments.size() && i < node->inputs().size(); ++i) {
    const auto* alias = arguments[i].alias_info();
    if (alias && alias->isWrite()) names.push_back(node->input(i)->debugName());
  }
  return names;
}

}  // namespace acprof
