#include "acprof/forward_graph.h"

#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/loop_unrolling.h>

#include <unordered_set>

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

namespace {

// Scripted library code reads submodules' attributes inside branches (a
// layer's weights inside `if self.norm_first:`), so the branch would read
// module objects, which cannot enter a checkpoint. Reading an attribute has
// no effect and the attribute always exists, so a read that no assignment in
// the graph can change moves before its top-level node: the branch then reads
// the tensor itself.
void hoistAttributeReads(torch::jit::Graph& graph) {
  const std::unordered_set<std::string> assigned = assignedAttributes(graph);
  std::vector<torch::jit::Node*> top_level(graph.nodes().begin(), graph.nodes().end());
  for (torch::jit::Node* top : top_level) {
    if (top->blocks().empty()) continue;
    std::vector<torch::jit::Node*> reads;
    std::vector<torch::jit::Block*> pending(top->blocks().begin(), top->blocks().end());
    while (!pending.empty()) {
      torch::jit::Block* block = pending.back();
      pending.pop_back();
      for (torch::jit::Node* node : block->nodes()) {
        if (node->kind() == torch::jit::prim::GetAttr && !assigned.count(node->s(torch::jit::attr::name)))
          reads.push_back(node);
        for (torch::jit::Block* inner : node->blocks()) pending.push_back(inner);
      }
    }
    // Chains (self.layer.weight) move one link at a time, outermost first.
    for (bool moved = true; moved;) {
      moved = false;
      for (torch::jit::Node*& read : reads) {
        if (!read || read->input(0)->node()->owningBlock() != graph.block()) continue;
        read->moveBefore(top);
        read = nullptr;
        moved = true;
      }
    }
  }
}

}  // namespace

std::shared_ptr<torch::jit::Graph> inlinedForwardGraph(const torch::jit::Module& module) {
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  // LibTorch's own pass: it unrolls only loops whose trip count is a constant,
  // whatever their body's size; the unrolled graph computes the same values.
  if (torch::jit::UnrollConstantLoops(graph)) torch::jit::EliminateDeadCode(graph);
  hoistAttributeReads(*graph);
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
