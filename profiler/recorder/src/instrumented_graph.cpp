#include "instrumented_graph.h"

#include <torch/library.h>
#include <torch/csrc/jit/ir/ir.h>

#include "acprof/forward_graph.h"
#include "recording_session.h"

namespace acprof {
namespace {

void markForwardNode(int64_t node) {
  if (RecordingSession* session = RecordingSession::active()) session->onForwardNodeMarker(static_cast<int>(node));
}

void observeTensor(int64_t node, int64_t output_index, const at::Tensor& value) {
  if (RecordingSession* session = RecordingSession::active())
    session->onObservedValue(static_cast<int>(node), static_cast<int>(output_index), -1, value);
}

void observeTensorList(int64_t node, int64_t output_index, const std::vector<at::Tensor>& values) {
  RecordingSession* session = RecordingSession::active();
  if (!session) return;
  for (size_t i = 0; i < values.size(); ++i)
    session->onObservedValue(static_cast<int>(node), static_cast<int>(output_index), static_cast<int>(i), values[i]);
}

const c10::Symbol kMarkSymbol = c10::Symbol::fromQualString("acprof_probe::mark_node");
const c10::Symbol kObserveSymbol = c10::Symbol::fromQualString("acprof_probe::observe_tensor");
const c10::Symbol kObserveListSymbol = c10::Symbol::fromQualString("acprof_probe::observe_tensor_list");

}  // namespace

// CONSERVATIVE alias analysis marks the probes as having side effects, so no
// pass removes or reorders them.
TORCH_LIBRARY(acprof_probe, m) {
  m.def(torch::schema("acprof_probe::mark_node(int node) -> ()", c10::AliasAnalysisKind::CONSERVATIVE),
        &markForwardNode);
  m.def(torch::schema("acprof_probe::observe_tensor(int node, int output, Tensor value) -> ()",
                      c10::AliasAnalysisKind::CONSERVATIVE),
        &observeTensor);
  m.def(torch::schema("acprof_probe::observe_tensor_list(int node, int output, Tensor[] values) -> ()",
                      c10::AliasAnalysisKind::CONSERVATIVE),
        &observeTensorList);
}

InstrumentedForward::InstrumentedForward(const std::shared_ptr<torch::jit::Graph>& source) {
  using namespace torch::jit;
  graph_ = source->copy();
  input_count_ = graph_->inputs().size() - 1;
  const std::vector<Node*> nodes = topLevelNodes(*graph_);
  const TypePtr tensor_type = TensorType::get();
  const TypePtr tensor_list_type = ListType::ofTensors();
  for (size_t id = 0; id < nodes.size(); ++id) {
    Node* node = nodes[id];
    if (node->kind() == prim::Constant) continue;  // constants never run as steps
    {
      WithInsertPoint before(node);
      graph_->insert(kMarkSymbol, {static_cast<int64_t>(id)});
    }
    WithInsertPoint after(node->next());
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      Value* output = node->output(i);
      if (output->type()->isSubtypeOf(*tensor_type))
        graph_->insert(kObserveSymbol, {static_cast<int64_t>(id), static_cast<int64_t>(i), output});
      else if (output->type()->isSubtypeOf(*tensor_list_type))
        graph_->insert(kObserveListSymbol, {static_cast<int64_t>(id), static_cast<int64_t>(i), output});
    }
  }
  executor_ = std::make_unique<GraphExecutor>(graph_, "acprof_instrumented_forward");
}

c10::IValue InstrumentedForward::run(torch::jit::Module& module, const std::vector<at::Tensor>& inputs) {
  torch::jit::Stack stack;
  stack.reserve(inputs.size() + 1);
  stack.emplace_back(module._ivalue());
  for (const at::Tensor& input : inputs) stack.emplace_back(input);
  executor_->run(stack);
  return stack.back();
}

}  // namespace acprof
