// Scripted code that returns early (torch 1.13's nn.TransformerEncoderLayer and
// nn.MultiheadAttention return from their inference fast path) leaves the rest
// of the function inside one branch: `if returned: out = fast else: <the whole
// training path>`. A branch is one top-level node, so a segment could only take
// a layer whole. A branch that makes two or more tensors becomes one branch on
// the same condition per piece of it, in order: `if c: placeholders else:
// piece`, where a piece is the nodes up to and including one that makes a tensor
// (the checks and index arithmetic before it go with it). The original branch
// keeps only the selection of its results. The same nodes run on the same values
// in the same order; on the other side of the condition each piece yields
// placeholders that no later node reads, since every later reader sits on the
// same side of the same condition. Constructs of lists and tuples of what earlier
// pieces made run outside the pieces, as they have no effects, so a segment still
// sees through them to the tensors.
//
// Only a top-level branch whose other side makes no tensor (an early return, an
// optional step such as stochastic depth or an input transform) is split.
// Splitting both sides of a branch whose sides both compute (a ShuffleNet
// block's stride test) gave the planner one side's pieces that never run, which
// only diluted its search: scripted shufflenet_v2_x0_5's floor rose from 11.31
// to 11.37 MiB. Splitting the branches inside a branch as well (a multi-head
// attention's early return inside an encoder layer's) wraps their pieces once
// per level: a scripted 2-layer TransformerDecoder had 1376 top-level nodes
// instead of 428, and its rewritten model's code took 31 s to load instead of
// about 1 s, for a floor 1.5 % lower on the encoder.
// One of the passes inlinedForwardGraph (forward_graph.h) runs, in its order.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

namespace acprof {

void splitBranches(torch::jit::Graph& graph);

}  // namespace acprof
