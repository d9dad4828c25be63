// Scripted code that collects tensors in a list between reads of it (torchvision's
// DenseNet: `features.append(layer(features))`; a U-Net's `skips.append(x)` and
// later `skips.pop()`) mutates the list, so every segment that reads it after an
// edit would write to a value made outside it, and the planner could only cut
// around the whole span. When a list is made at top level by prim::ListConstruct,
// is edited only by top-level aten::append and aten::pop with a constant index,
// and everything else only reads it without keeping it (LibTorch's alias analysis
// says so), what it holds at each top-level node is known: the node reads a fresh
// ListConstruct of those elements instead, a pop's result is the element it
// removes, and the edits go. The same kernels run on the same tensors; only the
// list objects differ, and nothing can observe them.
// One of the passes inlinedForwardGraph (forward_graph.h) runs, in its order.
#pragma once

#include <memory>

#include <torch/csrc/jit/ir/ir.h>

namespace acprof {

void functionalizeEditedLists(const std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace acprof
