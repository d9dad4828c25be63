// Two facts about a list that the list passes (functionalize_edited_lists.h,
// fold_constant_index_reads.h) both rely on, stated once.
#pragma once

#include <cstddef>
#include <optional>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

namespace acprof {

// Whether a use of a list only reads it, without writing to it or keeping it
// (in a graph or block output, or inside an output that may contain it),
// as LibTorch's alias analysis sees the reader.
bool onlyReadsList(const torch::jit::Use& use, const torch::jit::AliasDb& alias_db);

// A constant list index (negative from the back, as Python's) counted from the
// front of a list of `length`; nullopt unless it is a constant within the list.
std::optional<size_t> constantIndexFromFront(torch::jit::Value* index_value, size_t length);

}  // namespace acprof
