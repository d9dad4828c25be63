#include "ops/checkpoint_op.h"

#include <unordered_map>

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "acprof/autocast_state.h"
#include "acprof/ops.h"
#include "ops/rng_state.h"

namespace acprof {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kSegmentKey = "segment";
constexpr const char* kInputCountKey = "input_count";
constexpr const char* kCudaDevicesKey = "cuda_devices";
constexpr const char* kAutocastKey = "autocast";
constexpr const char* kFirstOccurrenceKey = "first_occurrence";

// For each input, the index of the input whose detached tensor it gets inside
// the segment. The rewriter gives each use of a tensor its own input, so that
// the autograd engine adds the gradients of the uses in the order the original
// model did (bit for bit); each then gets its own detached tensor. But a
// segment that asks whether two values are one object (nn.MultiheadAttention
// takes its packed projection when `query is key is value`) would then take
// another branch than the original, with other kernels, numerics and saved
// tensors: there, inputs that are one tensor object get one detached tensor,
// and the recompute adds their gradients itself. Views of one storage stay
// distinct objects, as they were.
std::vector<int64_t> firstOccurrences(const Segment& segment, at::TensorList inputs) {
  std::vector<int64_t> first(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    first[i] = static_cast<int64_t>(i);
    if (!segment.comparesIdentity()) continue;
    for (size_t j = 0; j < i; ++j) {
      if (inputs[j].unsafeGetTensorImpl() == inputs[i].unsafeGetTensorImpl()) {
        first[i] = first[j];
        break;
      }
    }
  }
  return first;
}

// Whether the segment writes the tensor object at `index` through any of the
// arguments it was passed as.
bool writesObject(const Segment& segment, const std::vector<int64_t>& first, size_t index) {
  for (size_t i = 0; i < first.size(); ++i)
    if (first[i] == first[index] && segment.writesInput(i)) return true;
  return false;
}

// The copy of a written input's storage that the checkpoint keeps, and the
// input as a view on it: one copy per storage, shared by every written input on
// it, so that the recompute's writes through one are seen through the others,
// as forward's were (a buffer read twice, as two attribute reads, is written
// through one and read through the other: the planner's kept bytes count one
// copy per storage, [kept-state] in docs/memory-model.md).
at::Tensor snapshotOnStorageCopy(std::unordered_map<const c10::StorageImpl*, at::Tensor>& copies,
                                 const at::Tensor& input) {
  const c10::StorageImpl* key = input.storage().unsafeGetStorageImpl();
  auto copy = copies.find(key);
  if (copy == copies.end()) {
    at::Tensor bytes = at::empty({0}, input.options().dtype(at::kByte));
    const auto nbytes = static_cast<int64_t>(input.storage().nbytes());
    bytes.set_(input.storage(), 0, {nbytes}, {1});
    copy = copies.emplace(key, bytes.clone()).first;
  }
  at::Tensor view = at::empty({0}, input.options());
  view.set_(copy->second.storage(), input.storage_offset(), input.sizes(), input.strides());
  return view;
}

// The autocast state forward ran under, kept in the context as integers.
std::vector<int64_t> packAutocastState(const AutocastState& state) {
  return {state.cpu_enabled, static_cast<int64_t>(state.cpu_dtype), state.cuda_enabled,
          static_cast<int64_t>(state.cuda_dtype), state.cache_enabled};
}

AutocastState unpackAutocastState(const std::vector<int64_t>& packed) {
  AutocastState state;
  state.cpu_enabled = packed.at(0) != 0;
  state.cpu_dtype = static_cast<c10::ScalarType>(packed.at(1));
  state.cuda_enabled = packed.at(2) != 0;
  state.cuda_dtype = static_cast<c10::ScalarType>(packed.at(3));
  state.cache_enabled = packed.at(4) != 0;
  return state;
}

// Forward runs without grad, so a weight cast it put in autocast's cache would
// carry no history: a later use of the same weight outside the segment would
// then get a cast that gradients cannot flow through. Forward casts uncached.
class NoAutocastCacheScope {
 public:
  NoAutocastCacheScope() : previous_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~NoAutocastCacheScope() { at::autocast::set_autocast_cache_enabled(previous_); }

 private:
  bool previous_;
};

// A Function's outputs that are views may not be written in place afterwards
// ("... is a view and is being modified inplace"), though in the original model
// a view made inside the segment (a slice of its result) could be. An output
// that views a tensor made inside the segment, and shares its storage with no
// input and no other output, is the only holder of that storage once the
// segment returns: the same storage as a plain tensor is the same value, and
// may be written as the original wrote it. Views of an input, or outputs that
// share storage, stay views (writing one would change another unseen).
void unviewPrivateOutputs(variable_list& outputs, at::TensorList inputs) {
  const auto storage_of = [](const at::Tensor& t) {
    return t.defined() && t.has_storage() ? t.storage().unsafeGetStorageImpl() : nullptr;
  };
  for (size_t o = 0; o < outputs.size(); ++o) {
    at::Tensor& output = outputs[o];
    if (!output.defined() || !output.is_view() || !storage_of(output)) continue;
    bool shared = false;
    for (const at::Tensor& input : inputs) shared = shared || storage_of(input) == storage_of(output);
    for (size_t other = 0; other < outputs.size(); ++other)
      shared = shared || (other != o && storage_of(outputs[other]) == storage_of(output));
    if (shared) continue;
    at::Tensor plain = at::empty({0}, output.options());
    plain.set_(output.storage(), output.storage_offset(), output.sizes(), output.strides());
    output = plain;
  }
}

// Saved variables (released by the autograd engine when backward returns):
// the inputs, with a snapshot in place of each input the segment writes, then
// the CPU generator state, then one state per CUDA device.
struct CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
  static variable_list forward(AutogradContext* ctx, c10::intrusive_ptr<Segment> segment, at::TensorList inputs,
                               bool caller_grad_enabled) {
    const std::vector<int64_t> first = firstOccurrences(*segment, inputs);
    variable_list saved;
    saved.reserve(inputs.size() + 1);
    std::unordered_map<const c10::StorageImpl*, at::Tensor> storage_copies;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (first[i] != static_cast<int64_t>(i)) {
        const at::Tensor same = saved[first[i]];  // the same snapshot, when the object is written
        saved.push_back(same);
      } else {
        saved.push_back(writesObject(*segment, first, i) ? snapshotOnStorageCopy(storage_copies, inputs[i]) : inputs[i]);
      }
    }
    storage_copies.clear();
    const RngStates rng = RngStates::capture(inputs);
    saved.push_back(rng.cpu);
    std::vector<int64_t> cuda_devices;
    for (const auto& [device, state] : rng.cuda) {
      cuda_devices.push_back(device);
      saved.push_back(state);
    }
    ctx->saved_data[kSegmentKey] = segment;
    ctx->saved_data[kInputCountKey] = static_cast<int64_t>(inputs.size());
    ctx->saved_data[kCudaDevicesKey] = cuda_devices;
    ctx->saved_data[kAutocastKey] = packAutocastState(AutocastState::current());
    ctx->saved_data[kFirstOccurrenceKey] = first;
    variable_list outputs;
    {
      // Nothing inside is kept: the ops run below autograd, so none records
      // history. Grad mode stays the caller's (Function::apply turned it off),
      // so code that asks torch.is_grad_enabled() takes the branch it took in
      // the original model, as the recompute will. The inputs keep their
      // requires_grad, because kernels choose their arithmetic by it:
      // matmul folds a transposed [L, N, E] input into one mm when the weight
      // requires grad, and runs a bmm otherwise, which rounds differently
      // (nn.MultiheadAttention's input projection; the loss moved by 1e-9).
      std::vector<at::Tensor> detached;
      detached.reserve(inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (first[i] != static_cast<int64_t>(i)) {
          detached.push_back(detached[first[i]]);
          continue;
        }
        at::Tensor one = inputs[i].detach();
        if (inputs[i].requires_grad()) one.requires_grad_(true);
        detached.push_back(std::move(one));
      }
      const at::AutoGradMode caller_mode(caller_grad_enabled);
      const at::AutoDispatchBelowAutograd no_history;
      const NoAutocastCacheScope uncached;
      outputs = segment->run(std::move(detached));
      unviewPrivateOutputs(outputs, inputs);
    }
    ctx->save_for_backward(saved);
    // An output nothing differentiated (a size, a tensor made without grad)
    // gets no gradient; by default the engine would hand backward a zero
    // tensor of its shape for each, memory the original model never held.
    ctx->set_materialize_grads(false);
    // A Function's outputs all get its history, but in the original model an
    // output computed only from tensors without grad had none: left with one,
    // a later checkpoint would differentiate towards it and return a gradient
    // that this one's input buffer holds until its backward ends.
    std::vector<bool> input_requires_grad(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) input_requires_grad[i] = caller_grad_enabled && inputs[i].requires_grad();
    const std::vector<bool> may_need_grad = segment->outputsThatMayNeedGrad(input_requires_grad);
    variable_list without_grad;
    for (size_t o = 0; o < outputs.size(); ++o)
      if (!may_need_grad[o]) without_grad.push_back(outputs[o]);
    if (!without_grad.empty()) ctx->mark_non_differentiable(without_grad);
    return outputs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto segment = ctx->saved_data[kSegmentKey].toCustomClass<Segment>();
    const size_t input_count = static_cast<size_t>(ctx->saved_data[kInputCountKey].toInt());
    variable_list saved = ctx->get_saved_variables();
    RngStates rng;
    rng.cpu = saved.at(input_count);
    const auto cuda_devices = ctx->saved_data[kCudaDevicesKey].toIntVector();
    for (size_t i = 0; i < cuda_devices.size(); ++i) rng.cuda.emplace_back(cuda_devices[i], saved.at(input_count + 1 + i));
    saved.resize(input_count);
    const std::vector<int64_t> first = ctx->saved_data[kFirstOccurrenceKey].toIntVector();

    // The recompute's graph ends at detached inputs, one per tensor object as
    // in forward; snapshots are the checkpoint's own, so the recompute writes to them.
    variable_list inputs;
    inputs.reserve(input_count);
    for (size_t i = 0; i < input_count; ++i) {
      if (first[i] != static_cast<int64_t>(i)) {
        const at::Tensor same = inputs[first[i]];
        inputs.push_back(same);
        continue;
      }
      at::Tensor input = saved[i].detach();
      if (!writesObject(*segment, first, i) && saved[i].requires_grad()) input.requires_grad_(true);
      inputs.push_back(std::move(input));
    }
    saved.clear();
    std::vector<at::Tensor> outputs;
    {
      const ReplayedRngScope replayed(rng);
      const AutocastStateScope autocast(unpackAutocastState(ctx->saved_data[kAutocastKey].toIntVector()));
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
    // A tensor passed as several arguments gets its whole gradient once, at its
    // first argument: the recompute already summed its uses.
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (first[i] == static_cast<int64_t>(i) && inputs[i].requires_grad()) {
        differentiable_inputs.push_back(inputs[i]);
        differentiable_input_indices.push_back(i);
      }
    }
    // One gradient per forward argument: the segment first (none), then each input, then the grad mode (none).
    variable_list input_grads(2 + inputs.size());
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
  return CheckpointFunction::apply(std::move(segment), inputs, at::GradMode::is_enabled());
}

bool checkpointOperatorRegistered() {
  return c10::Dispatcher::singleton().findSchema({kCheckpointOperator, ""}).has_value();
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
