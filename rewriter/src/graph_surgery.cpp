#include "graph_surgery.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "acprof/forward_graph.h"
#include "acprof/rewriter.h"
#include "ops/checkpoint_op.h"
#include "ops/segment.h"

namespace acprof {
namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;
namespace aten = torch::jit::aten;

bool isTensor(const Value* value) { return value->type()->isSubtypeOf(*c10::TensorType::get()); }

// Scalars travel through the Tensor[] list as 0-dim tensors.
bool isScalar(const Value* value) {
  const auto kind = value->type()->kind();
  return kind == c10::TypeKind::IntType || kind == c10::TypeKind::FloatType || kind == c10::TypeKind::BoolType;
}

// The IR parser reads no "inf" or "nan" literal; such constants travel as scalars.
bool isNonFiniteFloat(const Value* value) {
  if (value->type()->kind() != c10::TypeKind::FloatType) return false;
  const auto constant = torch::jit::toIValue(value);
  return constant && constant->isDouble() && !std::isfinite(constant->toDouble());
}

c10::Symbol scalarFromTensorOp(const Value* value) {
  switch (value->type()->kind()) {
    case c10::TypeKind::IntType: return aten::Int;
    case c10::TypeKind::FloatType: return aten::Float;
    default: return aten::Bool;
  }
}

std::string describe(const Node* node) {
  const std::string scope = moduleScope(node);
  return fmt::format("{}{}", node->kind().toQualString(), scope.empty() ? "" : " in " + scope);
}

// The module attribute a chain of prim::GetAttr from the graph's self reads.
struct AttributeRef {
  c10::intrusive_ptr<c10::ivalue::Object> owner;
  std::string name;

  c10::IValue value() const { return owner->getAttr(name); }
  bool isBuffer() const {
    const auto slot = owner->type()->findAttributeSlot(name);
    return slot && owner->type()->is_buffer(*slot);
  }
};

std::optional<AttributeRef> attributeRead(const Value* value, const torch::jit::Module& module, const Value* self) {
  const Node* node = value->node();
  if (node->kind() != prim::GetAttr) return std::nullopt;
  const Value* base = node->input(0);
  c10::intrusive_ptr<c10::ivalue::Object> owner;
  if (base == self) {
    owner = module._ivalue();
  } else {
    const auto parent = attributeRead(base, module, self);
    if (!parent) return std::nullopt;
    const c10::IValue parent_value = parent->value();
    if (!parent_value.isObject()) return std::nullopt;
    owner = parent_value.toObject();
  }
  return AttributeRef{owner, node->s(torch::jit::attr::name)};
}

// Nodes whose copy computes the same value anywhere: no side effects, no writes, no sub-blocks.
bool isPureProducer(const Node* node) {
  if (!node->blocks().empty() || node->hasSideEffects() || node->kind() == prim::GetAttr) return false;
  if (!mutatedInputNames(node).empty()) return false;
  const auto kind = node->kind();
  if (kind == prim::ListConstruct || kind == prim::TupleConstruct || kind == prim::Constant) return true;
  return node->maybeSchema() != nullptr && !node->isNondeterministic();
}

// Cuts one planned region out of the outer graph into a Segment.
class SegmentCutter {
 public:
  SegmentCutter(torch::jit::Module& module, Graph& graph, std::vector<Node*> region, size_t index, int first_id)
      : module_(module),
        graph_(graph),
        self_(graph.inputs().at(0)),
        region_(std::move(region)),
        index_(index),
        first_id_(first_id),
        insert_before_(region_.back()->next()),
        subgraph_(std::make_shared<Graph>()) {}

  void cut() {
    classifyRegion();
    torch::jit::WithInsertPoint outer_insert_point(insert_before_);
    for (Node* node : region_) {
      if (moved_.count(node)) cloneIntoSubgraph(node);
    }
    const std::vector<Value*> outputs = collectOutputs();
    installCall(createSegment(), outputs);
    for (auto it = region_.rbegin(); it != region_.rend(); ++it) {
      if (moved_.count(*it)) (*it)->destroy();
    }
  }

 private:
  // Attribute reads, constants and pure non-tensor computations that do not
  // depend on the segment stay in the outer graph: they allocate nothing worth recomputing,
  // and parameters read here must stay visible to autograd as segment inputs.
  void classifyRegion() {
    for (Node* node : region_) {
      if (!node->blocks().empty() || !isCuttable(node)) {
        throw RewriteError(fmt::format(
            "plan segment {} contains node {} ({}), which cannot be recomputed (control flow or side effects); "
            "make the plan again from a profile of this model",
            index_, nodeId(node), describe(node)));
      }
      const bool depends_on_segment = std::any_of(node->inputs().begin(), node->inputs().end(),
                                                  [&](const Value* input) { return moved_.count(input->node()); });
      const bool produces_tensor =
          std::any_of(node->outputs().begin(), node->outputs().end(), [](const Value* v) { return isTensor(v); });
      // Constants stay too: a tensor constant cannot be written as IR text, so it enters as an input.
      const bool stays_outside = node->kind() == prim::GetAttr || node->kind() == prim::Constant ||
                                 (!depends_on_segment && !produces_tensor && isPureProducer(node));
      if (!stays_outside) moved_.insert(node);
    }
    if (moved_.empty()) {
      throw RewriteError(fmt::format("plan segment {} holds no computation (only attribute reads and constants); "
                                     "make the plan again from a profile of this model", index_));
    }
  }

  int nodeId(const Node* node) const {
    return first_id_ + static_cast<int>(std::find(region_.begin(), region_.end(), node) - region_.begin());
  }

  void cloneIntoSubgraph(Node* node) {
    checkInPlaceWrites(node);
    Node* clone = subgraph_->createClone(node, [&](Value* input) { return subgraphValue(input); });
    subgraph_->insertNode(clone);
    for (size_t i = 0; i < node->outputs().size(); ++i) env_[node->output(i)] = clone->output(i);
  }

  // In-place writes inside a segment happen twice (forward and recompute).
  // That is harmless for values made inside, and for module buffers, whose
  // recompute writes to a copy; anything else would be corrupted.
  void checkInPlaceWrites(Node* node) {
    for (Value* input : writtenInputs(node)) {
      if (moved_.count(input->node())) continue;
      const auto attribute = attributeRead(input, module_, self_);
      if (!attribute || !attribute->isBuffer()) {
        throw RewriteError(fmt::format(
            "plan segment {} writes in place to %{} (node {}, {}), which is defined outside the segment and is not "
            "a module buffer; make the plan again so the segment starts before %{} is made",
            index_, input->debugName(), nodeId(node), describe(node), input->debugName()));
      }
      written_inputs_.push_back(static_cast<int64_t>(inputIndexOf(subgraphValue(input))));
    }
  }

  // The inputs a node writes: those its schema marks as written, plus batch
  // norm's running statistics, which aten::batch_norm updates in training
  // without declaring it in its schema.
  static std::vector<Value*> writtenInputs(Node* node) {
    std::vector<Value*> written;
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema) return written;
    const auto& arguments = schema->arguments();
    for (size_t i = 0; i < arguments.size() && i < node->inputs().size(); ++i) {
      const auto* alias = arguments[i].alias_info();
      const bool declared = alias && alias->isWrite();
      const bool running_statistic = arguments[i].name() == "running_mean" || arguments[i].name() == "running_var";
      if ((declared || running_statistic) && isTensor(node->input(i))) written.push_back(node->input(i));
    }
    return written;
  }

  size_t inputIndexOf(const Value* subgraph_input) const {
    const auto inputs = subgraph_->inputs();
    return static_cast<size_t>(std::find(inputs.begin(), inputs.end(), subgraph_input) - inputs.begin());
  }

  Value* addSubgraphInput(Value* outer_tensor) {
    outer_inputs_.push_back(outer_tensor);
    return subgraph_->addInput()->setType(c10::TensorType::get());
  }

  // The subgraph's version of a value the segment reads.
  Value* subgraphValue(Value* outer) {
    if (const auto it = env_.find(outer); it != env_.end()) return it->second;
    Value* mapped = importExternalValue(outer);
    env_[outer] = mapped;
    return mapped;
  }

  Value* importExternalValue(Value* outer) {
    Node* producer = outer->node();
    if (isTensor(outer)) return addSubgraphInput(outer);
    if (producer->kind() == prim::Constant && !isNonFiniteFloat(outer)) {
      return subgraph_->insertNode(subgraph_->createClone(producer, [](Value* v) { return v; }))->output();
    }
    if (outer->type()->kind() == c10::TypeKind::NoneType) return subgraph_->insertConstant(c10::IValue());
    if (isScalar(outer)) {
      Value* as_tensor = graph_.insert(prim::NumToTensor, {outer});
      return subgraph_->insert(scalarFromTensorOp(outer), {addSubgraphInput(as_tensor)});
    }
    if (const auto attribute = attributeRead(outer, module_, self_)) {
      // An optional module attribute, such as a conv's bias: what the module holds decides.
      const c10::IValue held = attribute->value();
      if (held.isNone()) return subgraph_->insertConstant(c10::IValue());
      if (held.isTensor()) return addSubgraphInput(graph_.insertUncheckedCast(outer, c10::TensorType::get()));
    }
    if (isPureProducer(producer)) {
      Node* clone = subgraph_->createClone(producer, [&](Value* input) { return subgraphValue(input); });
      subgraph_->insertNode(clone);
      for (size_t i = 0; i < producer->outputs().size(); ++i) env_[producer->output(i)] = clone->output(i);
      return env_.at(outer);
    }
    throw RewriteError(fmt::format(
        "plan segment {} reads %{} of type {}, made by {} outside the segment, which cannot be passed into a "
        "checkpoint; make the plan again so the segment starts before %{}",
        index_, outer->debugName(), outer->type()->repr_str(), describe(producer), outer->debugName()));
  }

  // Values made inside and read after the segment (or returned).
  std::vector<Value*> collectOutputs() {
    std::vector<Value*> outputs;
    for (Node* node : region_) {
      if (!moved_.count(node)) continue;
      for (Value* value : node->outputs()) {
        const bool read_outside = std::any_of(value->uses().begin(), value->uses().end(),
                                              [&](const torch::jit::Use& use) { return !moved_.count(use.user); });
        if (!read_outside) continue;
        if (!isTensor(value) && !isScalar(value)) {
          throw RewriteError(fmt::format(
              "plan segment {} makes %{} of type {} (node {}, {}), which is read after the segment but cannot be "
              "returned from a checkpoint; make the plan again so the segment ends after its last use",
              index_, value->debugName(), value->type()->repr_str(), nodeId(node), describe(node)));
        }
        Value* inner = env_.at(value);
        subgraph_->registerOutput(isTensor(value) ? inner : subgraph_->insert(prim::NumToTensor, {inner}));
        outputs.push_back(value);
      }
    }
    if (outputs.empty()) {
      throw RewriteError(fmt::format("plan segment {} computes nothing that is used later; "
                                     "make the plan again from a profile of this model", index_));
    }
    return outputs;
  }

  // The subgraph carries no shapes: a Segment must work for any input shape the outer graph accepts.
  c10::intrusive_ptr<Segment> createSegment() {
    auto erase_shape = [](Value* value) {
      if (value->type()->kind() == c10::TypeKind::TensorType) value->setType(c10::TensorType::get());
    };
    for (Value* input : subgraph_->inputs()) erase_shape(input);
    for (Node* node : subgraph_->nodes()) {
      for (Value* output : node->outputs()) erase_shape(output);
    }
    std::sort(written_inputs_.begin(), written_inputs_.end());
    written_inputs_.erase(std::unique(written_inputs_.begin(), written_inputs_.end()), written_inputs_.end());
    return c10::make_intrusive<Segment>(subgraph_->toString(/*print_source_locations=*/false), written_inputs_);
  }

  void installCall(const c10::intrusive_ptr<Segment>& segment, const std::vector<Value*>& outputs) {
    std::string attribute = fmt::format("_acprof_segment_{}", index_);
    for (int suffix = 1; module_.hasattr(attribute); ++suffix) {
      attribute = fmt::format("_acprof_segment_{}_{}", index_, suffix);
    }
    module_.register_attribute(attribute, c10::getCustomClassType<c10::intrusive_ptr<Segment>>(),
                               c10::IValue(segment));
    Value* segment_value = graph_.insertGetAttr(self_, attribute);
    Node* input_list = graph_.insertNode(graph_.createList(c10::TensorType::get(), outer_inputs_));
    Node* call = graph_.insertNode(graph_.create(c10::Symbol::fromQualString(kCheckpointOpName),
                                                 {segment_value, input_list->output()}, 1));
    call->output()->setType(c10::ListType::ofTensors());
    Node* unpack = graph_.insertNode(graph_.createListUnpack(call->output(), outputs.size()));
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value* replacement = unpack->output(i);
      if (isTensor(outputs[i])) {
        replacement->setType(outputs[i]->type());
      } else {
        replacement = graph_.insert(scalarFromTensorOp(outputs[i]), {replacement});
      }
      outputs[i]->replaceAllUsesWith(replacement);
    }
  }

  torch::jit::Module& module_;
  Graph& graph_;
  Value* self_;
  std::vector<Node*> region_;
  size_t index_;
  int first_id_;  // profile node id of region_[0]
  Node* insert_before_;
  std::shared_ptr<Graph> subgraph_;
  std::unordered_set<const Node*> moved_;
  std::unordered_map<Value*, Value*> env_;  // outer value -> its subgraph value
  std::vector<Value*> outer_inputs_;        // the Tensor[] passed to the checkpoint, in order
  std::vector<int64_t> written_inputs_;
};

void checkSegmentRanges(const std::vector<SegmentCut>& segments, size_t node_count) {
  int previous_last = -1;
  for (size_t i = 0; i < segments.size(); ++i) {
    const SegmentCut& cut = segments[i];
    if (cut.first_node < 0 || cut.last_node < cut.first_node || static_cast<size_t>(cut.last_node) >= node_count) {
      throw RewriteError(fmt::format(
          "plan segment {} covers nodes {}..{}, but the model's forward graph has nodes 0..{}; the plan was made "
          "for another model: profile and plan this model again",
          i, cut.first_node, cut.last_node, static_cast<int>(node_count) - 1));
    }
    if (cut.first_node <= previous_last) {
      throw RewriteError(fmt::format("plan segment {} (nodes {}..{}) overlaps or precedes the previous segment; "
                                     "the plan is damaged, make it again",
                                     i, cut.first_node, cut.last_node));
    }
    previous_last = cut.last_node;
  }
}

// The plan names the values at each segment's boundary as the profile saw
// them; a model whose graph has other names is not the model that was planned.
void checkValueNames(const std::vector<SegmentCut>& segments, const std::vector<Node*>& nodes) {
  for (size_t i = 0; i < segments.size(); ++i) {
    const SegmentCut& cut = segments[i];
    std::unordered_set<std::string> read, made;
    for (int id = cut.first_node; id <= cut.last_node; ++id) {
      for (const Value* input : nodes[id]->inputs()) read.insert(input->debugName());
      for (const Value* output : nodes[id]->outputs()) made.insert(output->debugName());
    }
    for (const std::string& name : cut.input_values) {
      if (!read.count(name)) {
        throw RewriteError(fmt::format("plan segment {} lists input %{}, which nodes {}..{} of the model do not read; "
                                       "the plan was made for another model: profile and plan this model again",
                                       i, name, cut.first_node, cut.last_node));
      }
    }
    for (const std::string& name : cut.output_values) {
      if (!made.count(name)) {
        throw RewriteError(fmt::format("plan segment {} lists output %{}, which nodes {}..{} of the model do not make; "
                                       "the plan was made for another model: profile and plan this model again",
                                       i, name, cut.first_node, cut.last_node));
      }
    }
  }
}

// Swaps the module's forward for `graph`, so that Module::save writes it.
void installForward(torch::jit::Module& module, const std::shared_ptr<Graph>& graph) {
  const c10::ClassTypePtr type = module.type();
  const auto unit = module._ivalue()->compilation_unit();
  const c10::QualifiedName name(*type->name(), "forward");
  type->unsafeRemoveMethod("forward");
  unit->unsafeRemoveMethod(name);
  type->addMethod(unit->create_function(name, graph));
}

}  // namespace

void checkpointSegments(torch::jit::Module& module, const std::vector<SegmentCut>& segments) {
  std::shared_ptr<Graph> graph = inlinedForwardGraph(module);
  const std::vector<Node*> nodes = topLevelNodes(*graph);
  checkSegmentRanges(segments, nodes.size());
  checkValueNames(segments, nodes);
  for (size_t i = 0; i < segments.size(); ++i) {
    const SegmentCut& cut = segments[i];
    SegmentCutter cutter(module, *graph,
                         std::vector<Node*>(nodes.begin() + cut.first_node, nodes.begin() + cut.last_node + 1), i,
                         cut.first_node);
    cutter.cut();
  }
  torch::jit::EliminateDeadCode(graph);
  graph->lint();
  installForward(module, graph);
}

}  // namespace acprof
