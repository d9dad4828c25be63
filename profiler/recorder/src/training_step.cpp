#include "acprof/training_step.h"

#include <filesystem>
#include <optional>

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/passes/autocast.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <fmt/format.h>

#include "acprof/recorder.h"

namespace acprof {
namespace {

at::ScalarType scalarTypeOf(const std::string& dtype) {
  if (dtype == "float32") return at::kFloat;
  if (dtype == "float64") return at::kDouble;
  if (dtype == "float16") return at::kHalf;
  if (dtype == "bfloat16") return at::kBFloat16;
  if (dtype == "int64") return at::kLong;
  if (dtype == "int32") return at::kInt;
  return at::kBool;
}


}  // namespace

std::vector<at::Tensor> tensorsIn(const c10::IValue& value) {
  std::vector<at::Tensor> out;
  if (value.isTensor()) {
    out.push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements())
      for (at::Tensor& t : tensorsIn(element)) out.push_back(std::move(t));
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toListRef())
      for (at::Tensor& t : tensorsIn(element)) out.push_back(std::move(t));
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict())
      for (at::Tensor& t : tensorsIn(entry.value())) out.push_back(std::move(t));
  }
  return out;
}

void checkAutocastDtype(const std::string& dtype) {
  if (!dtype.empty() && dtype != "bfloat16" && dtype != "float16")
    throw RecordError(fmt::format("unknown autocast dtype '{}'; use bfloat16, float16 or off", dtype));
}

AutocastScope::AutocastScope(const std::string& dtype, c10::DeviceType device_type)
    : state_(AutocastState::current().enabledFor(device_type, dtype == "float16" ? at::kHalf : at::kBFloat16)),
      previous_jit_pass_(torch::jit::setAutocastMode(false)) {}

AutocastScope::~AutocastScope() { torch::jit::setAutocastMode(previous_jit_pass_); }

std::string oneLineTorchError(const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  const std::string text = torch_error ? torch_error->what_without_backtrace() : error.what();
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (lines.empty()) return "unknown LibTorch error";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const auto marker = it->find("Error: ");
    if (marker != std::string::npos && it->rfind(" ", 0) != 0) return it->substr(marker + 7);
  }
  return lines.front();
}

torch::jit::Module loadModel(const std::string& path, const std::string& device) {
  if (!std::filesystem::exists(path))
    throw RecordError(fmt::format("{}: no such file; pass the path of a TorchScript model (torch.jit.save)", path));
  if (std::filesystem::is_directory(path))
    throw RecordError(fmt::format("{}: is a directory; pass the path of a TorchScript model file", path));
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, c10::Device(device));
  } catch (const std::exception& e) {
    throw RecordError(fmt::format("{}: not a loadable TorchScript model ({}); export it with torch.jit.trace or "
                                  "torch.jit.script and save it with torch.jit.save",
                                  path, oneLineTorchError(e)));
  }
  if (!module.find_method("forward"))
    throw RecordError(fmt::format("{}: the TorchScript module has no forward method; export the training module",
                                  path));
  module.train(true);
  return module;
}

StoredSpecs readStoredSpecs(const std::string& model_path) {
  StoredSpecs stored;
  try {
    caffe2::serialize::PyTorchStreamReader reader(model_path);
    auto readRecord = [&](const std::string& name) -> std::string {
      // The archive's records live under "<archive name>/extra/<name>".
      for (const std::string& record : reader.getAllRecords()) {
        const std::string suffix = "/extra/" + name;
        const bool nested = record.size() > suffix.size() &&
                            record.compare(record.size() - suffix.size(), std::string::npos, suffix) == 0;
        if (record == "extra/" + name || nested) {
          auto [data, size] = reader.getRecord(record);
          return std::string(static_cast<const char*>(data.get()), size);
        }
      }
      return "";
    };
    std::string inputs = readRecord("acprof_inputs");
    size_t start = 0;
    while (start < inputs.size()) {
      const auto end = inputs.find('\n', start);
      const std::string line = inputs.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!line.empty()) stored.inputs.push_back(line);
      if (end == std::string::npos) break;
      start = end + 1;
    }
    stored.target = readRecord("acprof_target");
    stored.loss = readRecord("acprof_loss");
    stored.autocast = readRecord("acprof_autocast");
  } catch (const c10::Error&) {
    // Not a zip archive: loadModel reports that with a better message.
  }
  return stored;
}

at::Tensor makeTensor(const InputSpec& spec, const std::string& device) {
  const auto options = at::TensorOptions().dtype(scalarTypeOf(spec.dtype));
  at::Tensor tensor;
  if (spec.dtype == "bool") {
    tensor = at::randint(0, 2, spec.shape, at::TensorOptions().dtype(at::kLong)).to(at::kBool);
  } else if (spec.dtype == "int64" || spec.dtype == "int32") {
    const auto [low, high] = spec.range.value_or(std::make_pair<int64_t, int64_t>(0, 2));
    tensor = at::randint(low, high, spec.shape, options);
  } else {
    tensor = at::randn(spec.shape, at::TensorOptions().dtype(at::kFloat)).to(options.dtype());
  }
  return tensor.to(c10::Device(device));
}

std::vector<at::Tensor> makeInputs(const std::vector<InputSpec>& specs, const std::string& device, uint64_t seed) {
  // Generated on the CPU from one seed so CPU and CUDA runs see the same values.
  at::manual_seed(seed);
  std::vector<at::Tensor> inputs;
  for (const InputSpec& spec : specs) inputs.push_back(makeTensor(spec, device));
  return inputs;
}

std::string resolveLossKind(const c10::IValue& output, const std::string& requested) {
  if (requested != "auto") return requested;
  if (output.isTensor() && output.toTensor().dim() == 0) return "model";
  return "mean";
}

at::Tensor computeLoss(const c10::IValue& output, const std::string& loss_kind, const at::Tensor& target) {
  const std::vector<at::Tensor> tensors = tensorsIn(output);
  if (tensors.empty()) throw RecordError("the model's output holds no tensor; return a tensor or the loss");
  if (loss_kind == "model") {
    if (tensors[0].numel() != 1)
      throw RecordError("the model's output is not a scalar loss; pass --loss mean|sum|cross_entropy");
    return tensors[0].reshape({});
  }
  if (loss_kind == "cross_entropy") {
    if (!target.defined()) throw RecordError("--loss cross_entropy needs --target, e.g. --target int64[32]:0..1000");
    const at::Tensor& logits = tensors[0];
    if (logits.dim() < 2) throw RecordError("--loss cross_entropy needs logits with a class dimension last");
    // [..., C] logits against [...] targets, as for language models' [B, T, V].
    return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), target.reshape({-1}));
  }
  at::Tensor total;
  for (const at::Tensor& t : tensors) {
    if (!t.is_floating_point()) continue;
    at::Tensor part = loss_kind == "sum" ? t.sum() : t.mean();
    total = total.defined() ? total + part : part;
  }
  if (!total.defined()) throw RecordError("the model's output has no floating-point tensor to take a loss of");
  return total;
}

void clearGradients(torch::jit::Module& module) {
  for (at::Tensor parameter : module.parameters()) parameter.mutable_grad() = at::Tensor();
}

ExecutorModeGuard::ExecutorModeGuard(bool optimize) : previous_(torch::jit::getGraphExecutorOptimize()) {
  torch::jit::setGraphExecutorOptimize(optimize);
}
ExecutorModeGuard::~ExecutorModeGuard() { torch::jit::setGraphExecutorOptimize(previous_); }

StepConfig stepConfigOf(const RunConfig& run) {
  StepConfig config;
  config.run = run;
  for (const std::string& spec : run.input_specs) config.inputs.push_back(parseInputSpec(spec));
  if (!run.target_spec.empty()) config.target = parseInputSpec(run.target_spec);
  return config;
}

StepOutcome runTrainingStep(torch::jit::Module& module, const std::vector<at::Tensor>& inputs,
                            const at::Tensor& target, const StepConfig& config) {
  clearGradients(module);
  at::manual_seed(config.run.seed);
  // Its own copy of the inputs: a model that writes to an input in place must
  // not change what the next run (the other model, in verification) sees.
  std::vector<c10::IValue> stack;
  for (const at::Tensor& input : inputs) stack.emplace_back(input.clone());
  at::Tensor loss;
  {
    std::optional<AutocastScope> autocast;
    if (!config.run.autocast.empty()) autocast.emplace(config.run.autocast, c10::Device(config.run.device).type());
    const c10::IValue output = module.forward(stack);
    loss = computeLoss(output, resolveLossKind(output, config.run.loss), target);
  }
  loss.backward();
  StepOutcome outcome;
  outcome.loss = loss.detach().clone();
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    const at::Tensor& grad = parameter.value.grad();
    outcome.gradients.emplace_back(parameter.name, grad.defined() ? grad.clone() : at::Tensor());
  }
  for (const auto& buffer : module.named_buffers(/*recurse=*/true))
    outcome.buffers.emplace_back(buffer.name, buffer.value.clone());
  return outcome;
}

}  // namespace acprof
