// Scripted library code reads submodules' attributes inside branches (a
// layer's weights inside `if self.norm_first:`), so the branch would read
// module objects, which cannot enter a checkpoint. Reading an attribute has
// no effect and the attribute always exists, so a read that no assignment in
// the graph can change moves before its top-level node: the branch then reads
// the tensor itself.
// One of the passes inlinedForwardGraph (forward_graph.h) runs, in its order.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

namespace acprof {

void hoistAttributeReads(torch::jit::Graph& graph);

}  // namespace acprof
