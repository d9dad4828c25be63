#include "list_reads.h"

#include <torch/csrc/jit/ir/constants.h>

namespace acprof {

bool onlyReadsList(const torch::jit::Use& use, const torch::jit::AliasDb& alias_db) {
  torch::jit::Node* user = use.user;
  if (user->kind() == torch::jit::prim::Return) return false;  // a graph or block output keeps the list
  if (alias_db.writesToAlias(user, {user->input(use.offset)})) return false;
  for (const torch::jit::Value* output : user->outputs())
    if (!output->type()->containedTypes().empty() &&
        alias_db.mayContainAlias(const_cast<torch::jit::Value*>(output), user->input(use.offset)))
      return false;  // the list (not only an element) may live on in the output
  return true;
}

std::optional<size_t> constantIndexFromFront(torch::jit::Value* index_value, size_t length) {
  const std::optional<c10::IValue> index = torch::jit::toIValue(index_value);
  if (!index || !index->isInt()) return std::nullopt;
  const int64_t from_front = index->toInt() < 0 ? static_cast<int64_t>(length) + index->toInt() : index->toInt();
  if (from_front < 0 || from_front >= static_cast<int64_t>(length)) return std::nullopt;
  return static_cast<size_t>(from_front);
}

}  // namespace acprof
