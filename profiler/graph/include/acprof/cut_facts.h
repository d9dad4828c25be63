// The legality library: the facts about a forward graph that decide what may
// be cut into a checkpoint segment, computed once from the TorchScript IR and
// LibTorch's own analyses (AliasDb for every write through aliases and views,
// Node::hasSideEffects, Node::isNondeterministic). The recorder writes them
// into profile.json; the rewriter computes them again from the same graph and
// applies the same rules (acprof/cut_rules.h) before it cuts.
//
// Per node: a role (Compute, Duplicable, Barrier with its reason), the values
// it reads (through list/tuple/dict constructs and sub-blocks) and the values
// whose memory it may write. Per value: how it can enter a segment and whether
// it can leave one, and whether it may need grad. The one observed fact, a
// value's bytes, is left at 0; the recorder fills it from the run.
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <torch/script.h>

#include "acprof/profile_format.h"

namespace acprof {

struct GraphCutFacts {
  std::vector<ForwardNode> nodes;   // id, kind, scope, inputs, outputs, role, barrier_reason, reads, writes
  std::vector<GraphValue> values;   // graph inputs first (self included), then each node's outputs
  std::vector<int> graph_outputs;
  std::unordered_map<const torch::jit::Value*, int> value_ids;
};

// `graph` is inlinedForwardGraph(module); node ids are its topLevelNodes() indices.
GraphCutFacts describeCutFacts(const torch::jit::Module& module, const std::shared_ptr<torch::jit::Graph>& graph);

// The kinds of value that cross a checkpoint boundary: tensors, numbers (as
// 0-dim tensors) and Optional[Tensor] (as a flag and a tensor).
bool isTensor(const torch::jit::Value* value);
bool isScalar(const torch::jit::Value* value);  // int, float or bool
bool isOptionalTensor(const torch::jit::Value* value);
// What a value of one of those kinds becomes in a checkpoint it enters as an
// input (InputForm, profile_format.h), or nullopt for any other kind. The
// profile records it (GraphValue::input_form); the rewriter makes it.
std::optional<InputForm> inputFormOf(const torch::jit::Value* value);

// The module attribute that a chain of prim::GetAttr from the graph's self reads.
struct AttributeRef {
  c10::intrusive_ptr<c10::ivalue::Object> owner;
  std::string name;
  c10::IValue value() const { return owner->getAttr(name); }
};
std::optional<AttributeRef> attributeRead(const torch::jit::Value* value, const torch::jit::Module& module);

}  // namespace acprof
