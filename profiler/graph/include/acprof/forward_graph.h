// The model's forward graph as acprof numbers it, shared by the recorder and
// the rewriter so that a node id means the same node in profile.json,
// plan.json and the graph the rewriter cuts.
//
// The graph is module.forward with every call inlined and every loop whose trip
// count is a constant unrolled: a scripted `for _ in range(3): x = block(x)`
// becomes three copies of the block's nodes, so the planner sees (and may cut
// between) each iteration's activations. Lookups in a dict attribute that the
// graph never changes fold to their values, and a branch on a folded condition
// to the block it takes (torchvision's IntermediateLayerGetter: `if name in
// self.return_layers`). Attribute reads inside branches move
// before their branch; a branch holding two or more nodes becomes one branch
// per node on the same condition (scripted early returns leave the rest of a
// function in one branch); a list edited only by top-level appends and pops
// becomes one list construct per reader. Each of these passes is a file of
// src/passes/ whose header states its contract. Top-level
// nodes are numbered in order; prim::If and the loops that remain are single
// nodes whose blocks run inside.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include <torch/script.h>

namespace acprof {

// A copy of module.forward's graph, inlined, with constant-trip loops unrolled,
// lookups of unchanged dict attributes folded, branches split per node and
// lists edited only by top-level append/pop made functional.
std::shared_ptr<torch::jit::Graph> inlinedForwardGraph(const torch::jit::Module& module);

// The graph's top-level nodes in order (sub-blocks of If/Loop stay inside their node).
std::vector<torch::jit::Node*> topLevelNodes(torch::jit::Graph& graph);

// Names of the attributes the graph assigns anywhere (prim::SetAttr, in blocks too).
std::unordered_set<std::string> assignedAttributes(const torch::jit::Graph& graph);

// "layer1.0.conv1" from the node's scope / callstack, "" at top level.
std::string moduleScope(const torch::jit::Node* node);

}  // namespace acprof
