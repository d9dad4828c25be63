#include "fold_dict_attribute_lookups.h"

#include <string>
#include <unordered_set>
#include <vector>

#include <torch/csrc/jit/ir/constants.h>

#include "acprof/cut_facts.h"
#include "acprof/forward_graph.h"

namespace acprof {
namespace {

void collectNodes(torch::jit::Block* block, std::vector<torch::jit::Node*>& out) {
  for (torch::jit::Node* node : block->nodes()) {
    out.push_back(node);
    for (torch::jit::Block* inner : node->blocks()) collectNodes(inner, out);
  }
}

// Names of the dict attributes the graph only looks up: never assigned, and
// every read of them goes to `key in d` or `d[key]` (nothing can insert into
// or delete from them while the model runs).
std::unordered_set<std::string> lookupOnlyDictAttributes(const std::vector<torch::jit::Node*>& nodes,
                                                         const std::unordered_set<std::string>& assigned) {
  std::unordered_set<std::string> names, disqualified(assigned);
  for (const torch::jit::Node* node : nodes) {
    if (node->kind() != torch::jit::prim::GetAttr || node->output()->type()->kind() != c10::TypeKind::DictType)
      continue;
    const std::string name = node->s(torch::jit::attr::name);
    names.insert(name);
    for (const torch::jit::Use& use : node->output()->uses()) {
      const auto kind = use.user->kind();
      if (use.offset != 0 || (kind != torch::jit::aten::__contains__ && kind != torch::jit::aten::__getitem__))
        disqualified.insert(name);
    }
  }
  for (const std::string& name : disqualified) names.erase(name);
  return names;
}

// Replaces an If whose condition is a constant by the nodes of the block it takes.
bool inlineConstantBranch(torch::jit::Node* branch) {
  const auto condition = torch::jit::toIValue(branch->input(0));
  if (!condition || !condition->isBool()) return false;
  torch::jit::Block* taken = branch->blocks().at(condition->toBool() ? 0 : 1);
  for (auto it = taken->nodes().begin(); it != taken->nodes().end();) {
    torch::jit::Node* node = *it;
    ++it;  // moving the node unlinks it from the block
    node->moveBefore(branch);
  }
  for (size_t i = 0; i < branch->outputs().size(); ++i) branch->output(i)->replaceAllUsesWith(taken->outputs()[i]);
  branch->destroy();
  return true;
}

}  // namespace

void foldDictAttributeLookups(torch::jit::Graph& graph, const torch::jit::Module& module) {
  std::vector<torch::jit::Node*> nodes;
  collectNodes(graph.block(), nodes);
  const std::unordered_set<std::string> dicts = lookupOnlyDictAttributes(nodes, assignedAttributes(graph));
  if (dicts.empty()) return;
  std::unordered_set<torch::jit::Node*> folded_reads;
  for (torch::jit::Node* node : nodes) {
    const auto kind = node->kind();
    if (kind != torch::jit::aten::__contains__ && kind != torch::jit::aten::__getitem__) continue;
    torch::jit::Node* read = node->input(0)->node();
    if (read->kind() != torch::jit::prim::GetAttr || !dicts.count(read->s(torch::jit::attr::name))) continue;
    const auto key = torch::jit::toIValue(node->input(1));
    const auto attribute = attributeRead(node->input(0), module);
    if (!key || !attribute || !attribute->value().isGenericDict()) continue;
    const c10::impl::GenericDict dict = attribute->value().toGenericDict();
    const auto entry = dict.find(*key);
    c10::IValue folded;
    if (kind == torch::jit::aten::__contains__) {
      folded = entry != dict.end();
    } else if (entry != dict.end() && (entry->value().isString() || entry->value().isInt() || entry->value().isBool())) {
      folded = entry->value();
    } else {
      continue;  // a lookup of an absent key raises where it runs: left as it is
    }
    torch::jit::WithInsertPoint here(node);
    node->output()->replaceAllUsesWith(graph.insertConstant(folded));
    node->destroy();
    folded_reads.insert(read);
  }
  for (bool changed = true; changed;) {
    changed = false;
    nodes.clear();
    collectNodes(graph.block(), nodes);
    for (torch::jit::Node* node : nodes) {
      if (node->kind() == torch::jit::prim::If && inlineConstantBranch(node)) {
        changed = true;
        break;  // the walk's list holds destroyed nodes now
      }
    }
  }
  for (torch::jit::Node* read : folded_reads)
    if (!read->output()->hasUses()) read->destroy();
}

}  // namespace acprof
