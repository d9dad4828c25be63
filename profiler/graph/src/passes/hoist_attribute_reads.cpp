#include "hoist_attribute_reads.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "acprof/forward_graph.h"

namespace acprof {

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

}  // namespace acprof
