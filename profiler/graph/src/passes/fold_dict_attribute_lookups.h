// torchvision's IntermediateLayerGetter runs `if name in self.return_layers:
// out[self.return_layers[name]] = x` after each stage. Scripted, every stage's
// output goes into a dict inside a branch, so each branch writes the dict and
// each output counts, to LibTorch's alias analysis, as "any tensor that was in
// a container": an in-place op anywhere then "writes" every stage's output and
// no segment may span two stages. A dict attribute that the graph only looks
// up is a constant of the model, as acprof already treats lists and strings
// that the graph never assigns (cut_facts.cpp): `key in d` and `d[key]` with a
// constant key fold to their values, and a branch on a folded condition to the
// block it takes. The rewritten model keeps the fold: the dict is looked up as
// it was when the model was rewritten.
// One of the passes inlinedForwardGraph (forward_graph.h) runs, in its order.
#pragma once

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

namespace acprof {

void foldDictAttributeLookups(torch::jit::Graph& graph, const torch::jit::Module& module);

}  // namespace acprof
