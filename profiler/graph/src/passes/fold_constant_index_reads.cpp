#include "fold_constant_index_reads.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <torch/csrc/jit/ir/alias_analysis.h>

#include "list_reads.h"

namespace acprof {

void foldConstantIndexReads(const std::shared_ptr<torch::jit::Graph>& graph) {
  std::vector<std::pair<torch::jit::Node*, torch::jit::Value*>> folds;
  {
    const torch::jit::AliasDb alias_db(graph);
    for (torch::jit::Node* node : graph->nodes()) {
      if (node->kind() != torch::jit::aten::__getitem__ || node->inputs().size() != 2) continue;
      torch::jit::Node* construct = node->input(0)->node();
      if (construct->kind() != torch::jit::prim::ListConstruct) continue;
      const auto& uses = construct->output()->uses();
      if (!std::all_of(uses.begin(), uses.end(),
                       [&](const torch::jit::Use& use) { return onlyReadsList(use, alias_db); }))
        continue;
      const std::optional<size_t> index = constantIndexFromFront(node->input(1), construct->inputs().size());
      if (index) folds.emplace_back(node, construct->input(*index));
    }
  }
  for (const auto& [read, element] : folds) {
    torch::jit::Node* construct = read->input(0)->node();
    read->output()->replaceAllUsesWith(element);
    read->destroy();
    if (!construct->output()->hasUses()) construct->destroy();
  }
}

}  // namespace acprof
