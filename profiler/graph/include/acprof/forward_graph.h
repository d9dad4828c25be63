// The model's inlined forward graph and the numbering of its top-level nodes.
//
// Node ids in profile.json and plan.json are indices into topLevelNodes() of
// this graph; the recorder and the rewriter both obtain the graph here so that
// an id means the same node in both.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/script.h>

namespace acprof {

// A copy of module.forward's graph with every method and function call inlined.
std::shared_ptr<torch::jit::Graph> inlinedForwardGraph(const torch::jit::Module& module);

// The graph's top-level nodes in order (sub-blocks of If/Loop stay inside their node).
std::vector<torch::jit::Node*> topLevelNodes(torch::jit::Graph& graph);

// "layer1.0.conv1" from the node's scope / callstack, "" at top level.
std::string moduleScope(const torch::jit::Node* node);

// Whether the rewriter may place this node inside a checkpoint segment.
bool isCuttable(const torch::jit::Node* node);

// Names of the node's inputs that its schema marks as written in place.
std::vector<std::string> mutatedInputNames(const torch::jit::Node* node);

}  // namespace acprof
