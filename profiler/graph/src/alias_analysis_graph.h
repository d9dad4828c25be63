// The copy of the forward graph that cut_facts.cpp gives LibTorch's AliasDb.
// AliasDb is sound but coarse where acprof knows more than the IR says: it puts
// every module attribute, every graph input and every tensor ever in a tuple,
// list or dict into one "wildcard" location, so an in-place write to one of
// them (a batch norm's running mean, a traced LSTMCell's c, a chunk's piece)
// "may write" all of them and no segment around it would be legal. On this copy
// each such tensor is replaced by what it exactly is, under three contracts:
//   - each distinct attribute storage and each tensor input of the graph is a
//     fresh tensor of its own (self stays the module, so writes to the module
//     itself still show);
//   - a tuple or list packed and unpacked with nothing else reading it, and a
//     dict filled and read at top level by constant keys and not returned, are
//     bypassed: a read is the tensor packed or last stored under its key;
//   - the pieces a Tensor[]-returning op (chunk, split, unbind) hands out
//     through ListUnpack are aliases of its one tensor input: a superset of
//     the truth, as wide as that input and no wider.
// The copy computes nothing; it is only analysed.
#pragma once

#include <memory>
#include <vector>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include "acprof/profile_format.h"

namespace acprof {

struct AliasAnalysisGraph {
  std::shared_ptr<torch::jit::Graph> graph;  // the copy AliasDb analyses
  std::vector<torch::jit::Node*> nodes;      // its top-level nodes, by node id
  std::vector<torch::jit::Value*> values;    // by value id
};

// `graph` is inlinedForwardGraph(module), `nodes` its top-level nodes and
// `values` the GraphValues cut_facts numbered: the graph's inputs, then each
// top-level node's outputs in order, `graph_values` the same by id.
AliasAnalysisGraph aliasAnalysisGraph(const torch::jit::Module& module, const std::shared_ptr<torch::jit::Graph>& graph,
                                      const std::vector<torch::jit::Node*>& nodes,
                                      const std::vector<GraphValue>& values,
                                      const std::vector<const torch::jit::Value*>& graph_values);

}  // namespace acprof
