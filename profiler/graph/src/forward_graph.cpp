#include "acprof/forward_graph.h"

#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/loop_unrolling.h>

#include <unordered_set>

#include "passes/fold_constant_index_reads.h"
#include "passes/fold_dict_attribute_lookups.h"
#include "passes/functionalize_edited_lists.h"
#include "passes/hoist_attribute_reads.h"
#include "passes/split_branches.h"

namespace acprof {

namespace {

void collectAssignedAttributes(const torch::jit::Block* block, std::unordered_set<std::string>& names) {
  for (const torch::jit::Node* node : block->nodes()) {
    if (node->kind() == torch::jit::prim::SetAttr) names.insert(node->s(torch::jit::attr::name));
    for (const torch::jit::Block* inner : node->blocks()) collectAssignedAttributes(inner, names);
  }
}

}  // namespace

std::unordered_set<std::string> assignedAttributes(const torch::jit::Graph& graph) {
  std::unordered_set<std::string> names;
  collectAssignedAttributes(graph.block(), names);
  return names;
}

std::shared_ptr<torch::jit::Graph> inlinedForwardGraph(const torch::jit::Module& module) {
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  // LibTorch's own pass: it unrolls only loops whose trip count is a constant,
  // whatever their body's size; the unrolled graph computes the same values.
  if (torch::jit::UnrollConstantLoops(graph)) torch::jit::EliminateDeadCode(graph);
  foldDictAttributeLookups(*graph, module);
  hoistAttributeReads(*graph);
  splitBranches(*graph);
  functionalizeEditedLists(graph);
  foldConstantIndexReads(graph);
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

}  // namespace acprof
