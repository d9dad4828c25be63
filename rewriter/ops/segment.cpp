#include "ops/segment.h"

#include <algorithm>

#include <torch/csrc/jit/ir/irparser.h>

namespace acprof {
namespace {

std::shared_ptr<torch::jit::Graph> parseSegmentGraph(const std::string& graph_ir) {
  auto graph = std::make_shared<torch::jit::Graph>();
  try {
    torch::jit::parseIR(graph_ir, graph.get());
  } catch (const std::exception& e) {
    // The parser's messages span lines and start with one; keep the first that says something.
    std::string message = e.what();
    message.erase(0, message.find_first_not_of("\n "));
    message = message.substr(0, message.find('\n'));
    TORCH_CHECK(false, "acprof.Segment: the subgraph IR does not parse (", message,
                "); the model file is damaged or was written by another acprof version, rewrite it again");
  }
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

}  // namespace

Segment::Segment(std::string graph_ir, std::vector<int64_t> written_inputs)
    : graph_ir_(std::move(graph_ir)),
      written_inputs_(std::move(written_inputs)),
      graph_(parseSegmentGraph(graph_ir_)),
      code_(graph_, "acprof_segment") {
  for (const int64_t index : written_inputs_) {
    TORCH_CHECK(index >= 0 && static_cast<size_t>(index) < graph_->inputs().size(),
                "acprof.Segment: written input index ", index, " is out of range for a subgraph with ",
                graph_->inputs().size(), " inputs; the model file is damaged, rewrite it again");
  }
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
