#include "ops/segment.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

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

}  // namespace

Segment::Segment(std::string graph_ir, std::vector<int64_t> written_inputs)
    : graph_ir_(std::move(graph_ir)),
      written_inputs_(std::move(written_inputs)),
      graph_(parseSegmentGraph(graph_ir_)),
      compares_identity_(asksIdentity(graph_->block())),
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
