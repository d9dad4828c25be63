#include "graph_surgery.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include "acprof/cut_facts.h"
#include "acprof/cut_rules.h"
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


c10::Symbol scalarFromTensorOp(const Value* value) {
  switch (value->type()->kind()) {
    case c10::TypeKind::IntType: return aten::Int;
    case c10::TypeKind::FloatType: return aten::Float;
    default: return aten::Bool;
  }
}

// An Optional[Tensor] crosses a checkpoint's Tensor[] boundary as a flag (is
// it a tensor?) and a tensor (itself, or an empty one for None). Inserted at
// the graph's insert point.
std::pair<Value*, Value*> splitOptional(Graph& graph, Value* optional) {
  Value* flag = graph.insert(aten::__isnot__, {optional, graph.insertConstant(c10::IValue())});
  Node* branch = graph.insertNode(graph.create(prim::If, {flag}, 1));
  branch->output()->setType(c10::TensorType::get());
  torch::jit::Block* present = branch->addBlock();
  torch::jit::Block* absent = branch->addBlock();
  {
    torch::jit::WithInsertPoint inside(present);
    present->registerOutput(graph.insertUncheckedCast(optional, c10::TensorType::get()));
  }
  {
    torch::jit::WithInsertPoint inside(absent);
    absent->registerOutput(graph.insert(aten::empty, {graph.insertConstant(std::vector<int64_t>{0})}));
  }
  return {flag, branch->output()};
}

Value* joinOptional(Graph& graph, Value* flag, Value* tensor) {
  Node* branch = graph.insertNode(graph.create(prim::If, {flag}, 1));
  branch->output()->setType(c10::OptionalType::ofTensor());
  torch::jit::Block* present = branch->addBlock();
  torch::jit::Block* absent = branch->addBlock();
  present->registerOutput(tensor);
  {
    torch::jit::WithInsertPoint inside(absent);
    absent->registerOutput(graph.insertConstant(c10::IValue()));
  }
  return branch->output();
}

std::string describe(const Node* node) {
  const std::string scope = moduleScope(node);
  return fmt::format("{}{}", node->kind().toQualString(), scope.empty() ? "" : " in " + scope);
}

std::string joinNames(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "%" : ", %") + name;
  return out.empty() ? "none" : out;
}

// The graph, its numbering and its cut facts, computed once before any cut,
// so that every segment is judged on the graph the plan was made for. Cutting
// replaces values with a call's outputs and destroys nodes, and a new value
// can reuse a destroyed one's address: the map from values to fact ids is
// kept current at each step, or a lookup would find another value's facts.
struct CutContext {
  torch::jit::Module& module;
  Graph& graph;
  std::vector<Node*> nodes;
  GraphCutFacts facts;
  std::vector<Value*> value_of_id;

  void replaceValue(Value* old_value, Value* new_value) {
    const auto it = facts.value_ids.find(old_value);
    if (it == facts.value_ids.end()) return;
    const int id = it->second;
    facts.value_ids.erase(it);
    facts.value_ids[new_value] = id;
    value_of_id[id] = new_value;
  }
  void destroyNode(Node* node) {
    for (Value* output : node->outputs()) {
      const auto it = facts.value_ids.find(output);
      if (it == facts.value_ids.end()) continue;
      value_of_id[it->second] = nullptr;
      facts.value_ids.erase(it);
    }
    node->destroy();
  }
};

// Cuts one planned region out of the outer graph into a Segment: the Compute
// nodes move into the segment's subgraph, Duplicable nodes stay outside (and
// are copied in where the segment reads them), exactly as acprof/cut_rules.h
// describes the boundary.
class SegmentCutter {
 public:
  SegmentCutter(CutContext& context, const CutRules& rules, const SegmentCut& cut, size_t index)
      : context_(context),
        graph_(context.graph),
        rules_(rules),
        plan_cut_(cut),
        index_(index),
        insert_before_(context.nodes[cut.last_node]->next()),
        subgraph_(std::make_shared<Graph>()) {
    for (int id = cut.first_node; id <= cut.last_node; ++id) region_.push_back(context.nodes[id]);
  }

  void cut() {
    checkAgainstPlan();
    for (int id = plan_cut_.first_node; id <= plan_cut_.last_node; ++id)
      if (context_.facts.nodes[id].role == CutRole::Compute) moved_.insert(context_.nodes[id]);
    torch::jit::WithInsertPoint outer_insert_point(insert_before_);
    for (Node* node : region_)
      if (moved_.count(node)) cloneIntoSubgraph(node);
    const std::vector<Value*> outputs = registerOutputs();
    installCall(createSegment(), outputs);
    // Users first: a Duplicable node that only the segment read goes with it.
    std::vector<Node*> kept;
    for (auto it = region_.rbegin(); it != region_.rend(); ++it) {
      if (moved_.count(*it) || !(*it)->hasUses()) {
        context_.destroyNode(*it);
      } else {
        kept.insert(kept.begin(), *it);
      }
    }
    moveAfterCallWhereNeeded(kept);
  }

 private:
  // The rules must accept the range, and the boundary they draw on this graph
  // must be the one the plan names: a plan is cut as planned or not at all.
  void checkAgainstPlan() {
    const std::string problem = rules_.problem(plan_cut_.first_node, plan_cut_.last_node);
    if (!problem.empty()) {
      throw RewriteError(fmt::format("plan segment {} (nodes {}..{}) cannot be cut: {}; make the plan again from a "
                                     "profile of this model",
                                     index_, plan_cut_.first_node, plan_cut_.last_node, problem));
    }
    boundary_ = rules_.boundary(plan_cut_.first_node, plan_cut_.last_node);
    const auto names = [&](const std::vector<int>& ids) {
      std::vector<std::string> out;
      for (int v : ids) out.push_back(context_.facts.values[v].name);
      return out;
    };
    const std::pair<const char*, std::pair<std::vector<std::string>, std::vector<std::string>>> sides[] = {
        {"inputs", {plan_cut_.input_values, names(boundary_.inputs)}},
        {"outputs", {plan_cut_.output_values, names(boundary_.outputs)}},
        {"replayed inputs", {plan_cut_.replayed_inputs, names(boundary_.replayed_inputs)}}};
    for (const auto& [side, lists] : sides) {
      if (joinNames(lists.first) == joinNames(lists.second)) continue;
      throw RewriteError(fmt::format(
          "plan segment {} (nodes {}..{}) names {} {}, but on this model's graph they are {}; the plan was made for "
          "another model or by another acprof: profile and plan this model again",
          index_, plan_cut_.first_node, plan_cut_.last_node, side, joinNames(lists.first), joinNames(lists.second)));
    }
  }

  int valueId(const Value* value) const {
    const auto it = context_.facts.value_ids.find(value);
    return it == context_.facts.value_ids.end() ? -1 : it->second;
  }

  void cloneIntoSubgraph(Node* node) {
    Node* clone = subgraph_->createClone(node, [&](Value* input) { return importForUse(input); });
    subgraph_->insertNode(clone);
    for (size_t i = 0; i < node->outputs().size(); ++i) env_[node->output(i)] = clone->output(i);
  }

  // Each use of an outside tensor that may carry a gradient enters through a
  // checkpoint input of its own. Then the autograd engine adds the gradients
  // of its uses to the tensor's gradient one by one, as in the original model,
  // instead of adding one gradient the recompute summed first: float addition
  // does not associate, and the last bits would differ (a DenseNet feature
  // read by several concatenations inside a segment and one after it).
  Value* importForUse(Value* outer) {
    if (moved_.count(outer->node())) return env_.at(outer);
    const int id = valueId(outer);
    const ValueEntry entry = id >= 0 ? context_.facts.values[id].entry : ValueEntry::Input;
    if (entry == ValueEntry::Clone) {
      Node* producer = outer->node();
      Node* clone = subgraph_->createClone(producer, [&](Value* input) { return importForUse(input); });
      subgraph_->insertNode(clone);
      return clone->output(outer->offset());
    }
    const bool replayed = std::find(boundary_.replayed_inputs.begin(), boundary_.replayed_inputs.end(), id) !=
                          boundary_.replayed_inputs.end();
    const bool may_need_grad = id < 0 || context_.facts.values[id].requires_grad;
    if (entry == ValueEntry::Input && isTensor(outer) && may_need_grad && !replayed) return addSubgraphInput(outer, id);
    return subgraphValue(outer);
  }

  Value* addSubgraphInput(Value* outer_tensor, int value_id) {
    outer_inputs_.push_back(outer_tensor);
    outer_input_ids_.push_back(value_id);
    return subgraph_->addInput()->setType(c10::TensorType::get());
  }

  // The subgraph's version of a value the segment reads.
  Value* subgraphValue(Value* outer) {
    if (const auto it = env_.find(outer); it != env_.end()) return it->second;
    Value* mapped = importExternalValue(outer);
    env_[outer] = mapped;
    return mapped;
  }

  // How an outside value enters is a fact of the graph (GraphValue::entry).
  // Values made by an earlier segment's call are not in the facts: they are
  // that call's tensors and scalars, which enter as inputs. Values whose
  // producer is cloned never come here: importForUse clones them per use.
  Value* importExternalValue(Value* outer) {
    const int id = valueId(outer);
    const ValueEntry entry = id >= 0 ? context_.facts.values[id].entry : ValueEntry::Input;
    Node* producer = outer->node();
    switch (entry) {
      case ValueEntry::Input:
        if (const std::optional<InputForm> form = inputFormOf(outer)) return importInput(outer, *form, id);
        break;
      case ValueEntry::Constant: {
        const auto attribute = attributeRead(outer, context_.module);
        Value* constant = subgraph_->insertConstant(attribute ? attribute->value() : c10::IValue());
        constant->setType(outer->type());
        return constant;
      }
      case ValueEntry::Elements: {
        // The list's length is the module's: unpacked outside, one input per tensor, rebuilt inside.
        const auto attribute = attributeRead(outer, context_.module);
        if (!attribute) break;
        const size_t count = attribute->value().toListRef().size();
        Node* unpack = graph_.insertNode(graph_.create(prim::ListUnpack, {outer}, count));
        std::vector<Value*> elements;
        for (Value* element : unpack->outputs())
          elements.push_back(addSubgraphInput(element->setType(c10::TensorType::get()), id));
        return subgraph_->insertNode(subgraph_->createList(c10::TensorType::get(), elements))->output();
      }
      case ValueEntry::Clone:
      case ValueEntry::Blocked:
        break;
    }
    throw RewriteError(fmt::format("plan segment {} reads %{} of type {}, made by {} outside the segment, which "
                                   "cannot be passed into a checkpoint; this is a bug in acprof's cut rules, please "
                                   "report it with the plan",
                                   index_, outer->debugName(), outer->type()->repr_str(), describe(producer)),
                       ErrorKind::Internal);
  }

  // An outside value as the checkpoint input(s) its form says (InputForm: the
  // planner counts what each form keeps).
  Value* importInput(Value* outer, InputForm form, int id) {
    switch (form) {
      case InputForm::Tensor:
        return addSubgraphInput(outer, id);
      case InputForm::HeldOptional:  // a conv's bias
        return addSubgraphInput(graph_.insertUncheckedCast(outer, c10::TensorType::get()), id);
      case InputForm::Number:
      case InputForm::Bool: {
        Value* as_tensor = graph_.insert(prim::NumToTensor, {outer});
        return subgraph_->insert(scalarFromTensorOp(outer), {addSubgraphInput(as_tensor, id)});
      }
      case InputForm::OptionalWithFlag: {
        const auto [flag, tensor] = splitOptional(graph_, outer);
        Value* inner_flag =
            subgraph_->insert(aten::Bool, {addSubgraphInput(graph_.insert(prim::NumToTensor, {flag}), id)});
        Value* inner_tensor = addSubgraphInput(tensor, id);
        return joinOptional(*subgraph_, inner_flag, inner_tensor);
      }
    }
    return nullptr;  // not reached: the switch names every form
  }

  // The boundary's outputs, in its order, as subgraph outputs (scalars as 0-dim tensors).
  std::vector<Value*> registerOutputs() {
    std::vector<Value*> outputs;
    for (int id : boundary_.outputs) {
      Value* value = context_.value_of_id[id];
      Value* inner = env_.at(value);
      if (isOptionalTensor(value)) {
        const auto [flag, tensor] = splitOptional(*subgraph_, inner);
        subgraph_->registerOutput(subgraph_->insert(prim::NumToTensor, {flag}));
        subgraph_->registerOutput(tensor);
      } else {
        subgraph_->registerOutput(isTensor(value) ? inner : subgraph_->insert(prim::NumToTensor, {inner}));
      }
      outputs.push_back(value);
    }
    if (outputs.empty()) {
      throw RewriteError(fmt::format("plan segment {} computes nothing that is used later; "
                                     "make the plan again from a profile of this model", index_));
    }
    return outputs;
  }

  // Indices (into the checkpoint's inputs) of the inputs the segment writes in place.
  std::vector<int64_t> replayedInputIndices() const {
    std::vector<int64_t> indices;
    for (int id : boundary_.replayed_inputs) {
      const auto it = std::find(outer_input_ids_.begin(), outer_input_ids_.end(), id);
      if (it != outer_input_ids_.end()) indices.push_back(static_cast<int64_t>(it - outer_input_ids_.begin()));
    }
    std::sort(indices.begin(), indices.end());
    return indices;
  }

  // The subgraph carries no shapes: a Segment must work for any input shape the outer graph accepts.
  c10::intrusive_ptr<Segment> createSegment() {
    // The engine adds the gradients a checkpoint returns in input order; uses
    // were added in forward order, and the original backward reaches the
    // later use first.
    const size_t count = outer_inputs_.size();
    std::vector<size_t> reversed(count);
    for (size_t i = 0; i < count; ++i) reversed[i] = count - 1 - i;
    subgraph_->block()->permuteInputs(reversed);
    std::reverse(outer_inputs_.begin(), outer_inputs_.end());
    std::reverse(outer_input_ids_.begin(), outer_input_ids_.end());
    auto erase_shape = [](Value* value) {
      if (value->type()->kind() == c10::TypeKind::TensorType) value->setType(c10::TensorType::get());
    };
    for (Value* input : subgraph_->inputs()) erase_shape(input);
    for (Node* node : subgraph_->nodes()) {
      for (Value* output : node->outputs()) erase_shape(output);
    }
    return c10::make_intrusive<Segment>(Segment::serializeGraph(*subgraph_), replayedInputIndices());
  }

  void installCall(const c10::intrusive_ptr<Segment>& segment, const std::vector<Value*>& outputs) {
    torch::jit::Module& module = context_.module;
    std::string attribute = fmt::format("_acprof_segment_{}", index_);
    for (int suffix = 1; module.hasattr(attribute); ++suffix) {
      attribute = fmt::format("_acprof_segment_{}_{}", index_, suffix);
    }
    module.register_attribute(attribute, c10::getCustomClassType<c10::intrusive_ptr<Segment>>(),
                              c10::IValue(segment));
    Value* segment_value = graph_.insertGetAttr(graph_.inputs().at(0), attribute);
    Node* input_list = graph_.insertNode(graph_.createList(c10::TensorType::get(), outer_inputs_));
    Node* call = graph_.insertNode(graph_.create(c10::Symbol::fromQualString(kCheckpointOpName),
                                                 {segment_value, input_list->output()}, 1));
    call->output()->setType(c10::ListType::ofTensors());
    size_t slots = 0;
    for (Value* output : outputs) slots += isOptionalTensor(output) ? 2 : 1;
    Node* unpack = graph_.insertNode(graph_.createListUnpack(call->output(), slots));
    size_t slot = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value* replacement = unpack->output(slot++);
      if (isOptionalTensor(outputs[i])) {
        Value* flag = graph_.insert(aten::Bool, {replacement});
        replacement = joinOptional(graph_, flag, unpack->output(slot++));
      } else if (isTensor(outputs[i])) {
        replacement->setType(outputs[i]->type());
        if (neededNoGrad(outputs[i])) {
          // The original made it without autograd history; the checkpoint's
          // output has one, and nodes after it would save for a backward
          // towards it (a masked_fill its mask) that the original never ran.
          replacement = graph_.insert(aten::detach, {replacement});
          replacement->setType(outputs[i]->type());
        }
      } else {
        replacement = graph_.insert(scalarFromTensorOp(outputs[i]), {replacement});
      }
      outputs[i]->replaceAllUsesWith(replacement);
      context_.replaceValue(outputs[i], replacement);
    }
  }

  bool neededNoGrad(const Value* output) const {
    const int id = valueId(output);
    const std::vector<std::string>& names = plan_cut_.outputs_without_grad;
    return id >= 0 && std::find(names.begin(), names.end(), context_.facts.values[id].name) != names.end();
  }

  // Duplicable nodes of the region that read what the segment made now read
  // the call's outputs, which are defined after them: they go after the call.
  void moveAfterCallWhereNeeded(const std::vector<Node*>& kept) {
    for (Node* node : kept) {
      const bool reads_later_value = std::any_of(node->inputs().begin(), node->inputs().end(),
                                                 [&](const Value* input) { return !input->node()->isBefore(node); });
      if (reads_later_value) node->moveBefore(insert_before_);
    }
  }

  CutContext& context_;
  Graph& graph_;
  const CutRules& rules_;
  const SegmentCut& plan_cut_;
  size_t index_;
  Node* insert_before_;
  std::vector<Node*> region_;
  SegmentBoundary boundary_;
  std::shared_ptr<Graph> subgraph_;
  std::unordered_set<const Node*> moved_;
  std::unordered_map<Value*, Value*> env_;  // outer value -> its subgraph value
  std::vector<Value*> outer_inputs_;        // the Tensor[] passed to the checkpoint, in order
  std::vector<int> outer_input_ids_;        // their value ids in the facts (-1: made by an earlier call)
};

void checkSegmentRanges(const std::vector<SegmentCut>& segments, size_t node_count) {
  int previous_last = -1;
  for (size_t i = 0; i < segments.size(); ++i) {
    const SegmentCut& cut = segments[i];
    if (cut.first_node < 0 || cut.last_node < cut.first_node || static_cast<size_t>(cut.last_node) >= node_count) {
      throw RewriteError(fmt::format(
          "plan segment {} covers nodes {}..{}, but the model's forward graph has nodes 0..{}; the plan was edited "
          "or is damaged: make it again with 'acprof plan'",
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

// Swaps the module's forward for `graph`, so that Module::save writes it. The
// schema stays the original's: a schema made from the graph would drop the
// arguments' defaults (`mask: Optional[Tensor] = None`), and callers that
// leave them out, as the original allowed, would fail.
void installForward(torch::jit::Module& module, const std::shared_ptr<Graph>& graph) {
  const c10::ClassTypePtr type = module.type();
  const auto unit = module._ivalue()->compilation_unit();
  const c10::QualifiedName name(*type->name(), "forward");
  const c10::FunctionSchema schema = module.get_method("forward").function().getSchema();
  type->unsafeRemoveMethod("forward");
  unit->unsafeRemoveMethod(name);
  torch::jit::Function* forward = unit->create_function(name, graph);
  forward->setSchema(schema);
  type->addMethod(forward);
}

}  // namespace

void checkpointSegments(torch::jit::Module& module, const std::vector<SegmentCut>& segments) {
  std::shared_ptr<Graph> graph = inlinedForwardGraph(module);
  CutContext context{module, *graph, topLevelNodes(*graph), describeCutFacts(module, graph), {}};
  context.value_of_id.resize(context.facts.values.size());
  for (const auto& [value, id] : context.facts.value_ids) context.value_of_id[id] = const_cast<Value*>(value);
  const CutRules rules(context.facts.nodes, context.facts.values, context.facts.graph_outputs);
  checkSegmentRanges(segments, context.nodes.size());
  for (size_t i = 0; i < segments.size(); ++i) SegmentCutter(context, rules, segments[i], i).cut();
  torch::jit::EliminateDeadCode(graph);
  graph->lint();
  installForward(module, graph);
}

}  // namespace acprof
