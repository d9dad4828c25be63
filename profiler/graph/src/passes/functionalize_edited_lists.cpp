#include "functionalize_edited_lists.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include <torch/csrc/jit/ir/alias_analysis.h>

#include "list_reads.h"

namespace acprof {
namespace {

// A list that is edited only by top-level appends and pops, and those edits.
struct EditedList {
  torch::jit::Value* list;
  std::vector<torch::jit::Node*> edits;  // appends and pops, top level, in order
};

torch::jit::Node* topLevelAncestor(torch::jit::Node* node) {
  while (node->owningBlock()->owningNode()) node = node->owningBlock()->owningNode();
  return node;
}

// The index a top-level pop removes, counted from the front, given the list's length before it.
std::optional<size_t> poppedIndex(torch::jit::Node* pop, size_t length) {
  return constantIndexFromFront(pop->input(1), length);
}

std::optional<EditedList> editedList(torch::jit::Node* construct, const torch::jit::AliasDb& alias_db) {
  EditedList found{construct->output(), {}};
  for (const torch::jit::Use& use : found.list->uses()) {
    torch::jit::Node* user = use.user;
    const bool edit = user->kind() == torch::jit::aten::append || user->kind() == torch::jit::aten::pop;
    if (edit) {
      if (use.offset != 0 || user->inputs().size() != 2 || user->owningBlock() != construct->owningBlock())
        return std::nullopt;
      if (user->kind() == torch::jit::aten::append && user->output()->hasUses()) return std::nullopt;
      found.edits.push_back(user);
    } else if (!onlyReadsList(use, alias_db)) {
      return std::nullopt;
    }
  }
  if (found.edits.empty()) return std::nullopt;
  std::sort(found.edits.begin(), found.edits.end(),
            [](torch::jit::Node* a, torch::jit::Node* b) { return a->isBefore(b); });
  size_t length = construct->inputs().size();
  for (torch::jit::Node* edit : found.edits) {
    if (edit->kind() == torch::jit::aten::append) {
      ++length;
    } else if (poppedIndex(edit, length)) {
      --length;
    } else {
      return std::nullopt;
    }
  }
  return found;
}

}  // namespace

void functionalizeEditedLists(const std::shared_ptr<torch::jit::Graph>& graph) {
  std::vector<EditedList> lists;
  {
    const torch::jit::AliasDb alias_db(graph);
    for (torch::jit::Node* node : graph->nodes())
      if (node->kind() == torch::jit::prim::ListConstruct)
        if (std::optional<EditedList> list = editedList(node, alias_db)) lists.push_back(*list);
  }
  for (const EditedList& found : lists) {
    torch::jit::Node* construct = found.list->node();
    const torch::jit::TypePtr element_type = found.list->type()->expectRef<c10::ListType>().getElementType();
    std::vector<torch::jit::Value*> elements(construct->inputs().begin(), construct->inputs().end());
    // Each reading top-level node gets one list of what the list holds before it.
    std::unordered_map<torch::jit::Node*, std::vector<torch::jit::Use>> reads_by_top_level;
    for (const torch::jit::Use& use : found.list->uses())
      if (std::find(found.edits.begin(), found.edits.end(), use.user) == found.edits.end())
        reads_by_top_level[topLevelAncestor(use.user)].push_back(use);
    size_t next_edit = 0;
    for (torch::jit::Node* node = construct->next(); node != graph->return_node(); node = node->next()) {
      if (next_edit < found.edits.size() && node == found.edits[next_edit]) {
        ++next_edit;
        if (node->kind() == torch::jit::aten::append) {
          elements.push_back(node->input(1));
        } else {
          const size_t index = *poppedIndex(node, elements.size());
          node->output()->replaceAllUsesWith(elements[index]);
          elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(index));
        }
        continue;
      }
      auto reads = reads_by_top_level.find(node);
      if (reads == reads_by_top_level.end()) continue;
      torch::jit::Node* copy = graph->createList(element_type, elements);
      copy->insertBefore(node);
      for (const torch::jit::Use& use : reads->second) use.user->replaceInput(use.offset, copy->output());
    }
    for (torch::jit::Node* edit : found.edits) edit->destroy();
    construct->destroy();
  }
}

}  // namespace acprof
