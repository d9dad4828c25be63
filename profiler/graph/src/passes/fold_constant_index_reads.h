// A top-level read of a list construct at a constant index (`hs[2]`,
// `features[-1]`) returns that very element; when nothing writes to the list,
// the read is the element. Reading it directly keeps the list's other tensors
// out of the reader's reads: scripted code that collects every block's output
// in a list and returns one of them otherwise keeps them all alive past every
// segment, so nothing could be dropped (traced, the index is already gone).
// One of the passes inlinedForwardGraph (forward_graph.h) runs, in its order.
#pragma once

#include <memory>

#include <torch/csrc/jit/ir/ir.h>

namespace acprof {

void foldConstantIndexReads(const std::shared_ptr<torch::jit::Graph>& graph);

}  // namespace acprof
