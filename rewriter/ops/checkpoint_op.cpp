#include "ops/checkpoint_op.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "ops/rng_state.h"

namespace acprof {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kSegmentKey = "segment";
constexpr const char* kCpuRngKey = "cpu_rng";
constexpr const char* kCudaRngKey = "cuda_rng";
constexpr const char* kCudaDevicesKey = "cuda_devices";

void saveRngStates(AutogradContext* ctx, const RngStates& states) {
  ctx->saved_data[kCpuRngKey] = states.cpu;
  std::vector<at::Tensor> cuda_states;
  std::vector<int64_t> cuda_devices;
  for (const auto& [device, state] : states.cuda) {
    cuda_devices.push_back(device);
    cuda_states.push_back(state);
  }
  ctx->saved_data[kCudaRngKey] = cuda_states;
  ctx->saved_data[kCudaDevicesKey] = cuda_devices;
}

RngStates loadRngStates(AutogradContext* ctx) {
  RngStates states;
  states.cpu = ctx->saved_data[kCpuRngKey].toTensor();
  const auto cuda_states = ctx->saved_data[kCudaRngKey].toTensorVector();
  const auto cuda_devices = ctx->saved_data[kCudaDevicesKey].toIntVector();
  for (size_t i = 0; i < cuda_states.size(); ++i) states.cuda.emplace_back(cuda_devices[i], cuda_states[i]);
  return states;
}

// The recompute works on detached inputs so that its graph ends at them;
// inputs the segment writes in place (buffers) are copied so that the
// recompute does not update running statistics a second time.
std::vector<at::Tensor> recomputeInputs(const Segment& segment, const variable_list& saved) {
  std::vector<at::Tensor> inputs;
  inputs.reserve(saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    at::Tensor input = saved[i].detach();
    if (segment.writesInput(i)) input = input.clone();
    if (saved[i].requires_grad()) input.requires_grad_(true);
    inputs.push_back(std::move(input));
  }
  return inputs;
}

struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static variable_list forward(AutogradContext* ctx, c10::intrusive_ptr<Segment> segment, at::TensorList inputs) {
    saveRngStates(ctx, RngStates::capture(inputs));
    // Function::apply already runs forward with grad disabled: nothing inside is kept.
    variable_list outputs = segment->run(inputs.vec());
    ctx->saved_data[kSegmentKey] = segment;
    ctx->save_for_backward(inputs.vec());
    return outputs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto segment = ctx->saved_data[kSegmentKey].toCustomClass<Segment>();
    variable_list inputs = recomputeInputs(*segment, ctx->get_saved_variables());
    std::vector<at::Tensor> outputs;
    {
      const ReplayedRngScope replayed(loadRngStates(ctx));
      at::AutoGradMode grad_enabled(true);
      outputs = segment->run(inputs);
    }
    variable_list differentiated_outputs;
    variable_list output_grads;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].requires_grad() && i < grad_outputs.size() && grad_outputs[i].defined()) {
        differentiated_outputs.push_back(outputs[i]);
        output_grads.push_back(grad_outputs[i]);
      }
    }
    outputs.clear();
    grad_outputs.clear();
    variable_list differentiable_inputs;
    std::vector<size_t> differentiable_input_indices;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].requires_grad()) {
        differentiable_inputs.push_back(inputs[i]);
        differentiable_input_indices.push_back(i);
      }
    }
    // One gradient per forward argument: the segment first (none), then each input.
    variable_list input_grads(1 + inputs.size());
    inputs.clear();
    if (differentiated_outputs.empty() || differentiable_inputs.empty()) return input_grads;
    variable_list grads = torch::autograd::grad(differentiated_outputs, differentiable_inputs, output_grads,
                                                /*retain_graph=*/false, /*create_graph=*/false,
                                                /*allow_unused=*/true);
    for (size_t k = 0; k < grads.size(); ++k) input_grads[1 + differentiable_input_indices[k]] = std::move(grads[k]);
    return input_grads;
  }
};

}  // namespace

std::vector<at::Tensor> checkpoint(c10::intrusive_ptr<Segment> segment, at::TensorList inputs) {
  // at::TensorList, not std::vector: Function::apply only tracks tensors it can see as tensors.
  return CheckpointFunction::apply(std::move(segment), inputs);
}

}  // namespace acprof

TORCH_LIBRARY(acprof, m) {
  m.class_<acprof::Segment>("Segment")
      .def(torch::init<std::string, std::vector<int64_t>>())
      .def("graph_ir", [](const c10::intrusive_ptr<acprof::Segment>& self) { return self->graphIr(); })
      .def_pickle(
          [](const c10::intrusive_ptr<acprof::Segment>& self) { return self->pickledState(); },
          [](acprof::Segment::PickledState state) {
            return c10::make_intrusive<acprof::Segment>(std::move(std::get<0>(state)), std::move(std::get<1>(state)));
          });
  m.def("checkpoint(__torch__.torch.classes.acprof.Segment seg, Tensor[] inputs) -> Tensor[]");
}

// Registered as a composite kernel, not a catch-all def: then the dispatcher
// calls it above the autograd layer and the outputs carry the Function's grad_fn.
TORCH_LIBRARY_IMPL(acprof, CompositeImplicitAutograd, m) {
  m.impl("checkpoint", &acprof::checkpoint);
}
