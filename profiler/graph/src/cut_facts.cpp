#include "acprof/cut_facts.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/ir.h>

#include "acprof/forward_graph.h"
#include "alias_analysis_graph.h"

namespace acprof {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;
namespace aten = torch::jit::aten;

// Whether a value may hold prim::Uninitialized when it runs: the placeholder
// scripted code leaves for a variable on a branch that returns early or raises.
// Typed Tensor, such a value is read only where it was set; it cannot be a
// checkpoint input or output. Branches are followed with what is known of
// their condition: an early return compiles to two Ifs on the same flag, the
// first making the result (or the placeholder), the second taking it only
// where the first made it.
using KnownConditions = std::vector<std::pair<const Value*, bool>>;

// Adds what a known flag tells: not(x) known means x known too. False if the
// flag is a constant that contradicts it (the path cannot run).
bool assume(KnownConditions& known, const Value* flag, bool holds) {
  for (const auto& [value, value_holds] : known)
    if (value == flag) return value_holds == holds;
  if (const auto constant = torch::jit::toIValue(flag); constant && constant->isBool())
    return constant->toBool() == holds;
  known.emplace_back(flag, holds);
  if (flag->node()->kind() == aten::__not__) return assume(known, flag->node()->input(0), !holds);
  return true;
}

bool mayBeUninitialized(const Value* value, KnownConditions& known) {
  const Node* producer = value->node();
  if (producer->kind() == prim::Uninitialized) return true;
  if (producer->kind() == prim::If) {
    for (size_t branch = 0; branch < 2; ++branch) {
      const torch::jit::Block* block = producer->blocks()[branch];
      KnownConditions inside = known;
      bool possible = assume(inside, producer->input(0), branch == 0);
      // What is known of this If's flag outputs is known of what the branch returns for them.
      for (const auto& [flag, holds] : known)
        if (possible && flag->node() == producer) possible = assume(inside, block->outputs()[flag->offset()], holds);
      if (possible && mayBeUninitialized(block->outputs()[value->offset()], inside)) return true;
    }
    return false;
  }
  if (producer->kind() == prim::Loop) {
    // The block returns its condition first; the loop's inputs are its trip count and condition first.
    const size_t offset = value->offset();
    const torch::jit::Block* body = producer->blocks()[0];
    if (offset + 1 < body->outputs().size() && mayBeUninitialized(body->outputs()[offset + 1], known)) return true;
    return offset + 2 < producer->inputs().size() && mayBeUninitialized(producer->input(offset + 2), known);
  }
  return false;
}

bool mayBeUninitialized(const Value* value) {
  KnownConditions known;
  return mayBeUninitialized(value, known);
}

bool isFiniteNumber(const c10::IValue& value) { return !value.isDouble() || std::isfinite(value.toDouble()); }

// Plain values that the IR printer writes and the IR parser reads back, so a
// segment's subgraph can carry them as constants.
bool isIrConstant(const c10::IValue& value) {
  if (value.isInt() || value.isBool() || value.isString() || value.isNone()) return true;
  if (value.isDouble()) return isFiniteNumber(value);
  if (value.isIntList() || value.isBoolList()) return true;
  if (value.isDoubleList()) {
    for (double d : value.toDoubleVector())
      if (!std::isfinite(d)) return false;
    return true;
  }
  return false;
}

// "Side effects" that re-running a node repeats harmlessly: raising the error
// that forward would have raised (forward did not, so the recompute will not),
// printing or warning again, and reading the grad or autocast mode, which the
// checkpoint reproduces (its forward runs in the caller's grad mode, its
// recompute under the forward's autocast state). LibTorch marks these with its
// conservative alias analysis like real effects, so the IR cannot tell them
// apart; everything else (setting a module attribute, entering a context,
// calling out) changes state that a recompute must not touch.
bool isReplayableEffect(const Node* node) {
  static const c10::Symbol kModeQueries[] = {c10::Symbol::fromQualString("aten::is_grad_enabled"),
                                             c10::Symbol::fromQualString("aten::is_autocast_enabled"),
                                             c10::Symbol::fromQualString("aten::is_autocast_cpu_enabled")};
  const auto kind = node->kind();
  if (kind == prim::RaiseException || kind == aten::warn || kind == prim::Print) return true;
  return std::find(std::begin(kModeQueries), std::end(kModeQueries), kind) != std::end(kModeQueries);
}

// Why a node (or a node in its blocks) cannot be recomputed, or "".
std::string effectPreventingRecompute(const Node* node) {
  if (node->hasSideEffects() && !isReplayableEffect(node))
    return fmt::format("{} has side effects", node->kind().toQualString());
  for (const torch::jit::Block* block : node->blocks())
    for (const Node* inner : block->nodes()) {
      std::string reason = effectPreventingRecompute(inner);
      if (!reason.empty()) return reason + fmt::format(" (inside {})", node->kind().toQualString());
    }
  return "";
}

// Values a top-level node reads from outside itself: its inputs, what nodes in
// its blocks read from the enclosing graph, and outer values its blocks return.
void collectOuterReads(const Node* node, const Node* top, std::vector<const Value*>& out) {
  auto definedOutsideTop = [&](const Value* value) {
    for (const torch::jit::Block* b = value->node()->owningBlock(); b && b->owningNode(); b = b->owningNode()->owningBlock())
      if (b->owningNode() == top) return false;
    return value->node() != top;
  };
  for (const Value* input : node->inputs())
    if (node == top || definedOutsideTop(input)) out.push_back(input);
  for (const torch::jit::Block* block : node->blocks()) {
    for (const Node* inner : block->nodes()) collectOuterReads(inner, top, out);
    for (const Value* returned : block->outputs())
      if (definedOutsideTop(returned)) out.push_back(returned);
  }
}

class FactsBuilder {
 public:
  FactsBuilder(const torch::jit::Module& module, const std::shared_ptr<torch::jit::Graph>& graph)
      : module_(module),
        graph_(graph),
        nodes_(topLevelNodes(*graph)),
        assigned_attributes_(assignedAttributes(*graph)) {}

  GraphCutFacts build() {
    for (const Value* input : graph_->inputs()) addValue(input, -1);
    for (size_t id = 0; id < nodes_.size(); ++id)
      for (const Value* output : nodes_[id]->outputs()) addValue(output, static_cast<int>(id));
    analysis_ = aliasAnalysisGraph(module_, graph_, nodes_, facts_.values, graph_values_);
    alias_db_ = std::make_unique<torch::jit::AliasDb>(analysis_.graph);
    facts_.nodes.resize(nodes_.size());
    for (size_t id = 0; id < nodes_.size(); ++id) describeNode(static_cast<int>(id));
    // Entries depend on roles (a Duplicable producer's values are cloned).
    for (GraphValue& value : facts_.values) {
      value.entry = entryOf(value);
      if (value.entry == ValueEntry::Input)
        value.input_form = inputFormOf(graph_values_[value.id]).value_or(InputForm::Tensor);
      value.requires_grad = mayRequireGrad(value);
    }
    for (size_t id = 0; id < nodes_.size(); ++id) facts_.nodes[id].reads = rootsReadBy(static_cast<int>(id));
    collectWrites();
    std::unordered_set<int> seen;
    for (const Value* returned : graph_->outputs())
      for (int root : rootsOf(returned))
        if (seen.insert(root).second) facts_.graph_outputs.push_back(root);
    return std::move(facts_);
  }

 private:
  void addValue(const Value* value, int producer) {
    GraphValue v;
    v.id = static_cast<int>(facts_.values.size());
    v.name = value->debugName();
    v.producer_node = producer;
    v.type = value->type()->repr_str();
    v.is_tensor = isTensor(value);
    // Walks branches: computed once per value, for can_leave here and entryOf later.
    const bool may_be_uninitialized = mayBeUninitialized(value);
    v.can_leave = (v.is_tensor || isScalar(value) || isOptionalTensor(value)) && !may_be_uninitialized;
    facts_.value_ids[value] = v.id;
    graph_values_.push_back(value);
    may_be_uninitialized_.push_back(may_be_uninitialized);
    facts_.values.push_back(std::move(v));
  }

  void describeNode(int id) {
    const Node* node = nodes_[id];
    ForwardNode& n = facts_.nodes[id];
    n.id = id;
    n.kind = node->kind().toQualString();
    n.scope = moduleScope(node);
    for (const Value* v : node->inputs()) n.inputs.push_back(v->debugName());
    for (const Value* v : node->outputs()) n.outputs.push_back(v->debugName());
    n.barrier_reason = effectPreventingRecompute(node);
    // Assigning a module attribute (prim::SetAttr, also inside a branch) is a
    // write to the module object itself.
    if (n.barrier_reason.empty() &&
        alias_db_->writesToAlias(analysis_.nodes[id], torch::jit::ValueSet{analysis_.graph->inputs().at(0)}))
      n.barrier_reason = fmt::format("{} changes the module's attributes", n.kind);
    if (!n.barrier_reason.empty()) {
      n.role = CutRole::Barrier;
    } else if (isDuplicable(id)) {
      n.role = CutRole::Duplicable;
    } else {
      n.role = CutRole::Compute;
    }
  }

  // Copying the node into a segment recomputes exactly its value and costs
  // nothing: it allocates no tensor, writes nothing, has no effects and no
  // randomness, and nothing writes to what it makes afterwards (a list that
  // is appended to later is not the list its construct made).
  bool isDuplicable(int id) {
    const Node* node = nodes_[id];
    const auto kind = node->kind();
    if (kind == prim::Constant || kind == prim::GetAttr || kind == prim::Uninitialized) return true;
    if (!node->blocks().empty() || node->hasSideEffects() || node->isNondeterministic()) return false;
    if (!node->maybeSchema() && !kind.is_prim()) return false;
    for (const Value* output : node->outputs())
      if (isTensor(output) || isScalar(output)) return false;
    Node* analysed = analysis_.nodes[id];
    for (const Value* output : analysed->outputs())
      if (alias_db_->hasWriters(output)) return false;
    return !alias_db_->writesToAlias(analysed, torch::jit::ValueSet(analysed->inputs().begin(), analysed->inputs().end()));
  }

  ValueEntry entryOf(const GraphValue& v) const {
    const Value* value = graph_values_[v.id];
    const Node* producer = v.producer_node >= 0 ? nodes_[v.producer_node] : nullptr;
    if (producer && producer->kind() == prim::Uninitialized) return ValueEntry::Clone;
    if (producer && producer->kind() == prim::Constant) {
      const auto constant = torch::jit::toIValue(value);
      // Tensor constants and inf/nan cannot be written as IR text: they enter as inputs.
      if (v.is_tensor || (constant && !isFiniteNumber(*constant))) return ValueEntry::Input;
      return ValueEntry::Clone;
    }
    if (producer && producer->kind() == prim::GetAttr) return attributeEntry(value);
    if (may_be_uninitialized_[v.id]) return ValueEntry::Blocked;
    if (v.is_tensor || isScalar(value) || isOptionalTensor(value)) return ValueEntry::Input;
    if (value->type()->kind() == c10::TypeKind::NoneType) return ValueEntry::Constant;
    if (producer && facts_.nodes[v.producer_node].role == CutRole::Duplicable) return ValueEntry::Clone;
    return ValueEntry::Blocked;
  }

  // Whether a value may need grad, decided from the graph alone so that the
  // recorder and the rewriter agree: module attributes as they are, constants
  // and graph inputs not, anything computed from them conservatively yes.
  bool mayRequireGrad(const GraphValue& v) const {
    if (!v.is_tensor || v.producer_node < 0) return false;
    const Node* producer = nodes_[v.producer_node];
    if (producer->kind() == prim::Constant || producer->kind() == prim::Uninitialized) return false;
    if (producer->kind() == prim::GetAttr) {
      const auto attribute = attributeRead(graph_values_[v.id], module_);
      return !attribute || !attribute->value().isTensor() || attribute->value().toTensor().requires_grad();
    }
    return true;
  }

  // A module attribute: what the module holds decides (a conv's Optional bias
  // holds a tensor or None). Numbers and flags enter with the value they have
  // when read: `training` is one, and model.eval() changes it from outside the
  // graph. Lists and strings that the graph never assigns (a window size, a
  // padding mode) are constants of the model. A list of tensors that the graph
  // never assigns (a scripted nn.LSTM's _flat_weights, its parameters) has a
  // length fixed by the model: it crosses as its tensors.
  ValueEntry attributeEntry(const Value* value) const {
    const auto attribute = attributeRead(value, module_);
    if (!attribute) return isTensor(value) ? ValueEntry::Input : ValueEntry::Blocked;
    const c10::IValue held = attribute->value();
    if (held.isTensor() || isScalar(value)) return ValueEntry::Input;
    if (held.isNone()) return ValueEntry::Constant;
    const bool assigned = assigned_attributes_.count(attribute->name) > 0;
    if (isIrConstant(held) && !assigned) return ValueEntry::Constant;
    if (isTensorList(value, held) && !assigned) return ValueEntry::Elements;
    return ValueEntry::Blocked;
  }

  static bool isTensorList(const Value* value, const c10::IValue& held) {
    const auto list_type = value->type()->cast<c10::ListType>();
    if (!list_type || list_type->getElementType()->kind() != c10::TypeKind::TensorType || !held.isList()) return false;
    for (const c10::IValue& element : held.toListRef())
      if (!element.isTensor()) return false;
    return true;
  }

  // The values a node needs, looking through Duplicable producers.
  std::vector<int> rootsReadBy(int id) {
    std::vector<const Value*> reads;
    collectOuterReads(nodes_[id], nodes_[id], reads);
    std::vector<int> roots;
    std::unordered_set<int> seen;
    for (const Value* read : reads)
      for (int root : rootsOf(read))
        if (seen.insert(root).second) roots.push_back(root);
    return roots;
  }

  const std::vector<int>& rootsOf(const Value* value) {
    const int id = facts_.value_ids.at(value);
    if (auto it = roots_.find(id); it != roots_.end()) return it->second;
    std::vector<int> roots;
    const GraphValue& v = facts_.values[id];
    if (v.entry == ValueEntry::Clone) {
      roots = rootsReadBy(v.producer_node);
    } else if (v.entry != ValueEntry::Constant) {
      roots.push_back(id);
    }
    return roots_[id] = std::move(roots);
  }

  // AliasDb answers, for every op's schema and through views and containers,
  // whether a node (its blocks included) may write to a value's memory. Only
  // nodes that write to some value are asked about each value.
  void collectWrites() {
    torch::jit::ValueSet mutable_values;
    std::vector<int> mutable_ids;
    for (const GraphValue& v : facts_.values) {
      const Value* value = analysis_.values[v.id];
      // Scalars, strings and None hold no memory a node could write to.
      const auto kind = value->type()->kind();
      if (isScalar(value) || kind == c10::TypeKind::NoneType || kind == c10::TypeKind::StringType) continue;
      mutable_values.insert(value);
      mutable_ids.push_back(v.id);
    }
    for (size_t id = 0; id < nodes_.size(); ++id) {
      Node* node = analysis_.nodes[id];
      if (node->kind() == prim::Constant || !alias_db_->writesToAlias(node, mutable_values)) continue;
      // A node with blocks writes what its inner nodes write, less the writes
      // to tensors it made itself: scripted nn.MultiheadAttention's mask
      // canonicalisation fills a zeros_like in place inside a branch, and
      // because that tensor later joins AliasDb's wildcard set (which knows no
      // order), the branch seemed to write some hundred values, so no segment
      // could span it.
      std::vector<Node*> writers;
      if (node->blocks().empty()) {
        writers.push_back(node);
      } else {
        collectOutsideWriters(node, mutable_values, writers);
        if (writers.empty()) continue;
      }
      for (int v : mutable_ids) {
        const torch::jit::ValueSet one{analysis_.values[v]};
        if (std::any_of(writers.begin(), writers.end(), [&](Node* w) { return alias_db_->writesToAlias(w, one); }))
          facts_.nodes[id].writes.push_back(v);
      }
    }
  }

  // The nodes inside `outer`'s blocks, at any depth, that may write to memory
  // made before `outer` ran: every writer but those whose written arguments
  // are all tensors made fresh inside `outer`.
  void collectOutsideWriters(Node* outer, const torch::jit::ValueSet& mutable_values, std::vector<Node*>& writers) {
    for (torch::jit::Block* block : outer->blocks())
      for (Node* inner : block->nodes()) {
        if (!inner->blocks().empty()) {
          collectOutsideWriters(inner, mutable_values, writers);
          continue;
        }
        if (!alias_db_->writesToAlias(inner, mutable_values)) continue;
        if (!writesOnlyFreshInside(inner, outer)) writers.push_back(inner);
      }
  }

  // Whether every argument `node`'s schema marks as written is a tensor made
  // inside `outer` by an op that returns new memory (no alias annotation on
  // its output), directly or through in-place ops on such a tensor.
  static bool writesOnlyFreshInside(const Node* node, const Node* outer) {
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema) return false;
    bool writes_any = false;
    for (size_t i = 0; i < schema->arguments().size() && i < node->inputs().size(); ++i) {
      const c10::AliasInfo* alias = schema->arguments()[i].alias_info();
      if (!alias || !alias->isWrite()) continue;
      writes_any = true;
      if (!freshInside(node->inputs()[i], outer)) return false;
    }
    return writes_any;
  }

  static bool nestedIn(const Node* node, const Node* outer) {
    for (const torch::jit::Block* block = node->owningBlock(); block && block->owningNode(); block = block->owningNode()->owningBlock())
      if (block->owningNode() == outer) return true;
    return false;
  }

  static bool freshInside(const Value* value, const Node* outer) {
    for (int depth = 0; depth < 64; ++depth) {
      const Node* producer = value->node();
      if (producer->kind() == prim::Param || !nestedIn(producer, outer)) return false;
      const c10::FunctionSchema* schema = producer->maybeSchema();
      if (!schema || schema->returns().size() != 1 || producer->outputs().size() != 1) return false;
      const c10::AliasInfo* returned = schema->returns()[0].alias_info();
      if (!returned) return isTensor(value);  // new memory
      // An in-place op returns its written self: fresh if that self is.
      if (!returned->isWrite() || schema->arguments().empty() || !schema->arguments()[0].alias_info() ||
          !schema->arguments()[0].alias_info()->isWrite())
        return false;
      value = producer->inputs()[0];
    }
    return false;
  }

  const torch::jit::Module& module_;
  std::shared_ptr<torch::jit::Graph> graph_;
  std::vector<Node*> nodes_;
  AliasAnalysisGraph analysis_;  // the copy AliasDb analyses
  std::unique_ptr<torch::jit::AliasDb> alias_db_;
  std::unordered_set<std::string> assigned_attributes_;  // not constants of the model
  std::vector<const Value*> graph_values_;  // by value id
  std::vector<bool> may_be_uninitialized_;  // by value id
  std::unordered_map<int, std::vector<int>> roots_;
  GraphCutFacts facts_;
};

}  // namespace

bool isTensor(const Value* value) { return value->type()->isSubtypeOf(*c10::TensorType::get()); }

bool isScalar(const Value* value) {
  const auto kind = value->type()->kind();
  return kind == c10::TypeKind::IntType || kind == c10::TypeKind::FloatType || kind == c10::TypeKind::BoolType;
}

bool isOptionalTensor(const Value* value) {
  return !isTensor(value) && value->type()->isSubtypeOf(*c10::OptionalType::ofTensor()) &&
         value->type()->kind() != c10::TypeKind::NoneType;
}

std::optional<InputForm> inputFormOf(const Value* value) {
  if (isTensor(value)) return InputForm::Tensor;
  if (isOptionalTensor(value))
    return value->node()->kind() == prim::GetAttr ? InputForm::HeldOptional : InputForm::OptionalWithFlag;
  if (value->type()->kind() == c10::TypeKind::BoolType) return InputForm::Bool;
  if (isScalar(value)) return InputForm::Number;
  return std::nullopt;
}

std::optional<AttributeRef> attributeRead(const Value* value, const torch::jit::Module& module) {
  const Node* node = value->node();
  if (node->kind() != prim::GetAttr) return std::nullopt;
  const Value* base = node->input(0);
  c10::intrusive_ptr<c10::ivalue::Object> owner;
  if (base == base->owningGraph()->inputs().at(0)) {
    owner = module._ivalue();
  } else {
    const auto parent = attributeRead(base, module);
    if (!parent) return std::nullopt;
    const c10::IValue parent_value = parent->value();
    if (!parent_value.isObject()) return std::nullopt;
    owner = parent_value.toObject();
  }
  const std::string name = node->s(torch::jit::attr::name);
  if (!owner->type()->hasAttribute(name)) return std::nullopt;
  return AttributeRef{owner, name};
}

GraphCutFacts describeCutFacts(const torch::jit::Module& module, const std::shared_ptr<torch::jit::Graph>& graph) {
  return FactsBuilder(module, graph).build();
}

}  // namespace acprof
