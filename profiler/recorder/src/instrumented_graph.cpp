#include "instrumented_graph.h"

#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/csrc/jit/ir/ir.h>

#include "acprof/forward_graph.h"
#include "acprof/training_step.h"
#include "recording_session.h"

namespace acprof {
namespace {

void markForwardNode(int64_t node) {
  if (RecordingSession* session = RecordingSession::active()) session->onForwardNodeMarker(static_cast<int>(node));
}

void observeTensor(RecordingSession& session, int64_t node, int64_t output_index, int64_t list_index,
                   const at::Tensor& value) {
  if (value.defined() && value.has_storage())
    session.onObservedValue(static_cast<int>(node), static_cast<int>(output_index), static_cast<int>(list_index), value);
}

// Takes any IValue: a value typed Tensor can hold prim::Uninitialized (the
// placeholder scripted code leaves on a branch that raises or returns early),
// and lists of tensors are observed element by element.
void observeValue(torch::jit::Stack& stack) {
  const c10::IValue value = torch::jit::pop(stack);
  const int64_t output_index = torch::jit::pop(stack).toInt();
  const int64_t node = torch::jit::pop(stack).toInt();
  RecordingSession* session = RecordingSession::active();
  if (!session) return;
  if (value.isTensor()) {
    observeTensor(*session, node, output_index, -1, value.toTensor());
  } else if (value.isTensorList()) {
    const auto list = value.toTensorList();
    for (size_t i = 0; i < list.size(); ++i) observeTensor(*session, node, output_index, static_cast<int64_t>(i), list.get(i));
  }
}

const c10::Symbol kMarkSymbol = c10::Symbol::fromQualString("acprof_probe::mark_node");
const c10::Symbol kObserveSymbol = c10::Symbol::fromQualString("acprof_probe::observe");

// CONSERVATIVE alias analysis marks the probes as having side effects, so no
// pass removes or reorders them.
torch::jit::RegisterOperators probe_operators({
    torch::jit::Operator(
        "acprof_probe::mark_node(int node) -> ()",
        [](torch::jit::Stack& stack) { markForwardNode(torch::jit::pop(stack).toInt()); },
        c10::AliasAnalysisKind::CONSERVATIVE),
    torch::jit::Operator("acprof_probe::observe(int node, int output, Any value) -> ()", observeValue,
                         c10::AliasAnalysisKind::CONSERVATIVE),
});

}  // namespace

InstrumentedForward::InstrumentedForward(const std::shared_ptr<torch::jit::Graph>& source) {
  using namespace torch::jit;
  graph_ = source->copy();
  input_count_ = graph_->inputs().size() - 1;
  const std::vector<Node*> nodes = topLevelNodes(*graph_);
  const TypePtr tensor_type = TensorType::get();
  const TypePtr tensor_list_type = ListType::ofTensors();
  const TypePtr optional_tensor_type = OptionalType::create(tensor_type);
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
      const TypePtr& type = output->type();
      if (type->isSubtypeOf(*optional_tensor_type) || type->isSubtypeOf(*tensor_list_type))
        graph_->insert(kObserveSymbol, {static_cast<int64_t>(id), static_cast<int64_t>(i), output});
    }
  }
  executor_ = std::make_unique<GraphExecutor>(graph_, "acprof_instrumented_forward");
}

c10::IValue InstrumentedForward::run(torch::jit::Module& module, const std::vector<at::Tensor>& inputs) {
  torch::jit::Stack stack{module._ivalue()};
  for (c10::IValue& argument : forwardArguments(module, inputs)) stack.push_back(std::move(argument));
  executor_->run(stack);
  return stack.back();
}

}  // namespace acprof
