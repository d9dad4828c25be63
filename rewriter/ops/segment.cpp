#include "ops/segment.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/irparser.h>

namespace acprof {
namespace {

const c10::Symbol kStatementStub = c10::Symbol::fromQualString("prim::AcprofStatement");

void makeParseable(torch::jit::Block* block) {
  torch::jit::Graph& graph = *block->owningGraph();
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* node = *it;
    ++it;
    for (torch::jit::Block* inner : node->blocks()) makeParseable(inner);
    if (!node->outputs().empty()) continue;
    if (node->kind() == torch::jit::prim::If) {
      node->addOutput()->setType(c10::NoneType::get());
      for (torch::jit::Block* branch : node->blocks()) {
        torch::jit::WithInsertPoint at_return(branch->return_node());
        branch->registerOutput(graph.insertConstant(c10::IValue()));
      }
      continue;
    }
    if (node->kind() == torch::jit::prim::Loop) {
      // A loop-carried None: passed in, handed from each iteration to the
      // next unchanged, and returned. The loop runs as before.
      torch::jit::Block* body = node->blocks()[0];
      {
        torch::jit::WithInsertPoint before_loop(node);
        node->addInput(graph.insertConstant(c10::IValue()));
      }
      body->registerOutput(body->addInput()->setType(c10::NoneType::get()));
      node->addOutput()->setType(c10::NoneType::get());
      continue;
    }
    TORCH_CHECK(node->blocks().empty(), "acprof.Segment: cannot write ", node->kind().toQualString(),
                " without outputs as IR text; make the plan again with this node outside the segment");
    torch::jit::Node* stub = graph.create(kStatementStub, node->inputs(), 1);
    stub->s_(torch::jit::attr::name, node->kind().toQualString());
    stub->output()->setType(c10::NoneType::get());
    stub->insertBefore(node);
    node->destroy();
  }
}

void restoreStatements(torch::jit::Block* block) {
  torch::jit::Graph& graph = *block->owningGraph();
  for (auto it = block->nodes().begin(); it != block->nodes().end();) {
    torch::jit::Node* node = *it;
    ++it;
    for (torch::jit::Block* inner : node->blocks()) restoreStatements(inner);
    if (node->kind() != kStatementStub) continue;
    torch::jit::Node* statement =
        graph.create(c10::Symbol::fromQualString(node->s(torch::jit::attr::name)), node->inputs(), 0);
    statement->insertBefore(node);
    node->destroy();
  }
}

std::shared_ptr<torch::jit::Graph> parseSegmentGraph(const std::string& graph_ir) {
  auto graph = std::make_shared<torch::jit::Graph>();
  try {
    torch::jit::parseIR(graph_ir, graph.get());
  } catch (const std::exception& e) {
    if (std::getenv("ACPROF_FULL_ERRORS")) std::cerr << graph_ir << "\n" << e.what() << std::endl;
    // The parser's messages span lines and start with one; keep the first that says something.
    std::string message = e.what();
    message.erase(0, message.find_first_not_of("\n "));
    message = message.substr(0, message.find('\n'));
    TORCH_CHECK(false, "acprof.Segment: the subgraph IR does not parse (", message,
                "); the model file is damaged or was written by another acprof version, rewrite it again");
  }
  restoreStatements(graph->block());
  for (const torch::jit::Value* input : graph->inputs()) {
    TORCH_CHECK(input->type()->isSubtypeOf(*c10::TensorType::get()),
                "acprof.Segment: subgraph input %", input->debugName(), " is ", input->type()->repr_str(),
                ", but a segment takes only tensors; re-run 'acprof rewrite' with this acprof version");
  }
  for (const torch::jit::Value* output : graph->outputs()) {
    TORCH_CHECK(output->type()->isSubtypeOf(*c10::TensorType::get()),
                "acprof.Segment: subgraph output %", output->debugName(), " is ", output->type()->repr_str(),
                ", but a segment returns only tensors; re-run 'acprof rewrite' with this acprof version");
  }
  return graph;
}

bool asksIdentity(const torch::jit::Block* block) {
  for (const torch::jit::Node* node : block->nodes()) {
    if (node->kind() == c10::Symbol::fromQualString("aten::__is__") ||
        node->kind() == c10::Symbol::fromQualString("aten::__isnot__"))
      return true;
    for (const torch::jit::Block* sub : node->blocks())
      if (asksIdentity(sub)) return true;
  }
  return false;
}

// Whether a value of this type can hold a tensor, and so carry a gradient:
// numbers, strings, devices and dtypes cannot; a tensor made from them alone
// has no history. Classes and types not known here are assumed to.
bool canHoldTensor(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
      return true;
    case c10::TypeKind::IntType:
    case c10::TypeKind::FloatType:
    case c10::TypeKind::ComplexType:
    case c10::TypeKind::NumberType:
    case c10::TypeKind::BoolType:
    case c10::TypeKind::StringType:
    case c10::TypeKind::NoneType:
    case c10::TypeKind::DeviceObjType:
    case c10::TypeKind::ScalarTypeType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:
      return false;
    default:
      break;
  }
  const auto contained = type->containedTypes();
  if (contained.empty()) return true;
  return std::any_of(contained.begin(), contained.end(), [](const c10::TypePtr& t) { return canHoldTensor(t); });
}

// Which graph inputs each value may be computed from, by one forward pass
// over the graph and its blocks. A node's outputs come from all its inputs
// and what its blocks return; a loop body is walked again until its carried
// values stop gaining sources. A node that writes in place adds its inputs'
// sources to every value that may alias what it writes (TorchScript's own
// alias analysis), so a later read of that value, or of a view of it, sees them.
class InputSources {
 public:
  explicit InputSources(const std::shared_ptr<torch::jit::Graph>& graph)
      : alias_db_(graph), input_count_(graph->inputs().size()) {
    for (size_t i = 0; i < input_count_; ++i) {
      Sources only(input_count_, false);
      only[i] = true;
      assign(graph->inputs()[i], std::move(only));
    }
    visit(graph->block());
    for (const torch::jit::Value* output : graph->outputs()) output_sources_.push_back(of(output));
  }

  std::vector<std::vector<bool>> outputSources() && { return std::move(output_sources_); }

 private:
  using Sources = std::vector<bool>;

  Sources of(const torch::jit::Value* value) const {
    const auto it = sources_.find(value);
    return it == sources_.end() ? Sources(input_count_, false) : it->second;
  }

  static bool merge(Sources& into, const Sources& from) {
    bool changed = false;
    for (size_t i = 0; i < into.size(); ++i) {
      if (from[i] && !into[i]) {
        into[i] = true;
        changed = true;
      }
    }
    return changed;
  }

  void assign(const torch::jit::Value* value, Sources sources) {
    if (!canHoldTensor(value->type())) sources.assign(input_count_, false);
    sources_[value] = std::move(sources);
    defined_.insert(value);
  }

  void visit(torch::jit::Block* block) {
    for (torch::jit::Node* node : block->nodes()) visit(node);
  }

  void visit(torch::jit::Node* node) {
    Sources read(input_count_, false);
    for (const torch::jit::Value* input : node->inputs()) merge(read, of(input));
    Sources made = read;
    for (torch::jit::Block* block : node->blocks()) {
      // A block's parameters (a loop's counter and carried values) start from
      // everything the node reads, plus what earlier walks of the body returned.
      Sources entering = read;
      bool again = true;
      while (again) {
        for (const torch::jit::Value* param : block->inputs()) assign(param, entering);
        visit(block);
        Sources returned(input_count_, false);
        for (const torch::jit::Value* output : block->outputs()) merge(returned, of(output));
        merge(made, returned);
        again = node->kind() == torch::jit::prim::Loop && merge(entering, returned);
      }
    }
    for (const torch::jit::Value* output : node->outputs()) assign(output, made);
    if (!node->blocks().empty() || !alias_db_.writesToAlias(node, defined_)) return;
    for (auto& [value, sources] : sources_) {
      if (alias_db_.writesToAlias(node, {value})) merge(sources, read);
    }
  }

  torch::jit::AliasDb alias_db_;
  size_t input_count_;
  std::unordered_map<const torch::jit::Value*, Sources> sources_;
  torch::jit::ValueSet defined_;
  std::vector<std::vector<bool>> output_sources_;
};

}  // namespace

Segment::Segment(std::string graph_ir, std::vector<int64_t> written_inputs)
    : graph_ir_(std::move(graph_ir)),
      written_inputs_(std::move(written_inputs)),
      graph_(parseSegmentGraph(graph_ir_)),
      compares_identity_(asksIdentity(graph_->block())),
      output_sources_(InputSources(graph_).outputSources()),
      code_(graph_, "acprof_segment") {
  for (const int64_t index : written_inputs_) {
    TORCH_CHECK(index >= 0 && static_cast<size_t>(index) < graph_->inputs().size(),
                "acprof.Segment: written input index ", index, " is out of range for a subgraph with ",
                graph_->inputs().size(), " inputs; the model file is damaged, rewrite it again");
  }
}

std::string Segment::serializeGraph(torch::jit::Graph& graph) {
  makeParseable(graph.block());
  return graph.toString(/*print_source_locations=*/false);
}

bool Segment::writesInput(size_t index) const {
  return std::find(written_inputs_.begin(), written_inputs_.end(), static_cast<int64_t>(index)) !=
         written_inputs_.end();
}

std::vector<bool> Segment::outputsThatMayNeedGrad(const std::vector<bool>& input_requires_grad) const {
  std::vector<bool> may_need(output_sources_.size(), false);
  for (size_t o = 0; o < output_sources_.size(); ++o) {
    for (size_t i = 0; i < input_requires_grad.size() && i < output_sources_[o].size(); ++i)
      may_need[o] = may_need[o] || (input_requires_grad[i] && output_sources_[o][i]);
  }
  return may_need;
}

size_t Segment::inputCount() const { return graph_->inputs().size(); }
size_t Segment::outputCount() const { return graph_->outputs().size(); }

std::vector<at::Tensor> Segment::run(std::vector<at::Tensor> inputs) const {
  TORCH_CHECK(inputs.size() == inputCount(), "acprof::checkpoint: the segment takes ", inputCount(),
              " tensors but got ", inputs.size(), "; the model file is damaged, rewrite it again");
  torch::jit::Stack stack;
  stack.reserve(inputs.size());
  for (auto& input : inputs) stack.emplace_back(std::move(input));
  inputs.clear();  // the interpreter alone holds the inputs, and drops each after its last use
  torch::jit::InterpreterState(code_).run(stack);
  std::vector<at::Tensor> outputs;
  outputs.reserve(stack.size());
  for (auto& value : stack) outputs.push_back(std::move(value).toTensor());
  return outputs;
}

}  // namespace acprof
