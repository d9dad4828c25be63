#include "acprof/recorder.h"

#include <algorithm>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <set>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <fmt/format.h>

#include "acprof/loss.h"
#include "acprof/model_file.h"
#include "acprof/run_modes.h"
#include "acprof/statistics.h"
#include "acprof/synthetic_inputs.h"
#include "acprof/cut_facts.h"
#include "acprof/files.h"
#include "acprof/forward_graph.h"
#include "fixed_devices.h"
#include "acprof/optimizer.h"
#include "acprof/training_step.h"
#include "instrumented_graph.h"
#include "kernel_time_table.h"
#include "acprof/command_budget.h"
#include "acprof/measured_iterations.h"
#include "recording_session.h"
#include "acprof/event_stream.h"

namespace acprof {
namespace {

// Everything needed to run the iterations, resolved and validated up front so
// that bad input fails before any work.
struct PreparedRun {
  torch::jit::Module module;
  std::vector<InputSpec> input_specs;
  std::optional<InputSpec> target_spec;
  std::vector<at::Tensor> inputs;
  at::Tensor target;
  std::string loss_kind;  // as requested, possibly "auto"
  std::string autocast;   // "" or the dtype forward runs under
};

// forward's leading arguments that take a tensor: --input makes tensors only, so an
// argument of another type (2.x's nn.TransformerEncoder ends with is_causal:
// Optional[bool]) and every one after it is left to its default.
size_t tensorArgumentCount(const torch::jit::Graph& graph) {
  size_t count = 0;
  for (size_t i = 1; i < graph.inputs().size(); ++i) {
    c10::TypePtr type = graph.inputs()[i]->type();
    if (const auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
    if (!type->isSubtypeOf(*c10::TensorType::get())) break;
    ++count;
  }
  return count;
}

// The spec to suggest for forward's argument i: token ids where the argument
// is the indices of an embedding (with the table's row count as their range),
// floating-point values otherwise.
std::string suggestedSpec(const torch::jit::Graph& graph, const torch::jit::Module& module, size_t i) {
  for (const torch::jit::Use& use : graph.inputs()[i]->uses()) {
    if (use.user->kind() != c10::Symbol::fromQualString("aten::embedding") || use.offset != 1) continue;
    const std::optional<AttributeRef> table = attributeRead(use.user->input(0), module);
    const c10::IValue weight = table ? table->value() : c10::IValue();
    const std::string rows = weight.isTensor() ? std::to_string(weight.toTensor().size(0)) : "N";
    return "int64[...]:0.." + rows;
  }
  return "float32[...]";
}

// "tokens (int64[...]:0..50257), mask (optional, float32[...])": forward's
// tensor arguments by the names the user wrote, with the spec to give each.
std::string forwardSignature(const torch::jit::Graph& graph, const torch::jit::Module& module) {
  const std::vector<c10::Argument>& arguments = forwardSchema(module).arguments();
  std::string names;
  const size_t count = tensorArgumentCount(graph);
  for (size_t i = 1; i <= count && i < arguments.size(); ++i)
    names += fmt::format("{}{} ({}{})", names.empty() ? "" : ", ", arguments[i].name(),
                         arguments[i].default_value() ? "optional, " : "", suggestedSpec(graph, module, i));
  return names;
}

// " --input int64[...]:0..50257 --input float32[...]": the required arguments' specs.
std::string exampleInputs(const torch::jit::Graph& graph, const torch::jit::Module& module) {
  const size_t required = std::max<size_t>(requiredForwardArguments(module), 1);
  std::string example;
  for (size_t i = 1; i <= required && i < graph.inputs().size(); ++i)
    example += " --input " + suggestedSpec(graph, module, i);
  return example;
}

PreparedRun prepare(const RecordOptions& options, const torch::jit::Module& module, const torch::jit::Graph& graph) {
  if (options.run.warmup_iters < 0 || options.run.measured_iters < 1)
    throw RecordError(fmt::format("--warmup must be >= 0 and --iters >= 1 (got {} and {})", options.run.warmup_iters,
                                  options.run.measured_iters));
  PreparedRun run;
  const StoredSpecs stored = readStoredSpecs(options.model_path);
  std::vector<std::string> spec_texts = options.run.input_specs.empty() ? stored.inputs : options.run.input_specs;
  const size_t most = tensorArgumentCount(graph), least = requiredForwardArguments(module);
  if (spec_texts.empty()) {
    throw RecordError(fmt::format("{}: the model does not record its input shapes; pass one --input per forward "
                                  "argument ({}), e.g.{}",
                                  options.model_path, forwardSignature(graph, module), exampleInputs(graph, module)));
  }
  if (spec_texts.size() < least || spec_texts.size() > most) {
    const std::string takes = least == most ? std::to_string(most) : fmt::format("{} to {}", least, most);
    throw RecordError(fmt::format("{} input spec(s) given but forward takes {} ({}); pass one --input per argument{}",
                                  spec_texts.size(), takes, forwardSignature(graph, module),
                                  least == most ? "" : " up to the last one you do not leave to its default"));
  }
  for (const std::string& text : spec_texts) run.input_specs.push_back(parseInputSpec(text));
  const std::string target_text = !options.run.target_spec.empty() ? options.run.target_spec : stored.target;
  if (!target_text.empty()) run.target_spec = parseInputSpec(target_text);
  run.loss_kind = options.run.loss != "auto" ? options.run.loss : (stored.loss.empty() ? "auto" : stored.loss);
  if (!isLossKind(run.loss_kind))
    throw RecordError(fmt::format("unknown loss '{}'; use {}", run.loss_kind, explicitLossKindsText()));
  if (run.loss_kind == "cross_entropy" && !run.target_spec)
    throw RecordError("--loss cross_entropy needs a target; pass --target, e.g. --target int64[32]:0..1000");
  // Only the cross-entropy loss reads a target: any other would train without it, unsaid.
  if (!options.run.target_spec.empty() && run.loss_kind != "cross_entropy")
    throw RecordError(fmt::format("--target is read only by --loss cross_entropy, and the loss is {}; add --loss "
                                  "cross_entropy, or drop --target",
                                  run.loss_kind));
  run.autocast = !options.run.autocast.empty() ? options.run.autocast : stored.autocast;
  if (run.autocast == "off") run.autocast = "";
  checkAutocastDtype(run.autocast);
  return run;
}



void addStatic(std::vector<StaticStorage>& out, std::set<const void*>& seen, const at::Tensor& t, Category category,
               const std::string& name) {
  if (!t.defined() || !t.has_storage()) return;
  const void* ptr = t.storage().data();
  if (!ptr || !seen.insert(ptr).second) return;  // tied weights share one storage
  out.push_back(StaticStorage{ptr, static_cast<int64_t>(t.storage().nbytes()), category, name, t.sizes().vec(),
                              dtypeName(t.scalar_type())});
}

std::vector<StaticStorage> staticStorages(const torch::jit::Module& module, const PreparedRun& run,
                                          const Optimizer& optimizer) {
  std::vector<StaticStorage> out;
  std::set<const void*> seen;
  for (const auto& p : module.named_parameters(true)) addStatic(out, seen, p.value, Category::Weight, p.name);
  for (const auto& b : module.named_buffers(true)) addStatic(out, seen, b.value, Category::Weight, b.name);
  for (size_t i = 0; i < run.inputs.size(); ++i)
    addStatic(out, seen, run.inputs[i], Category::Input, fmt::format("input{}", i));
  addStatic(out, seen, run.target, Category::Input, "target");
  for (const auto& p : module.named_parameters(true))
    for (const auto& [state_name, t] : optimizer.stateOf(p.value))
      addStatic(out, seen, t, Category::OptimizerState, fmt::format("{}.{}", p.name, state_name));
  return out;
}

std::set<const void*> storagePtrs(const std::vector<at::Tensor>& tensors) {
  std::set<const void*> ptrs;
  for (const at::Tensor& t : tensors)
    if (t.defined() && t.has_storage() && t.storage().data()) ptrs.insert(t.storage().data());
  return ptrs;
}

// What one training iteration leaves behind besides its event record.
struct IterationOutcome {
  IterationRecord record;
  std::set<const void*> gradient_ptrs;  // parameters' .grad storages at the end
  std::set<const void*> output_ptrs;    // the model's output and the loss
  std::string resolved_loss;
};

// Where the graph writes in place to a tensor an earlier node read: the
// likely cause of autograd's "modified by an inplace operation", which names
// the saved tensor's maker but not the write. "" where there is none. A write
// to a tensor nothing has read yet (zeros_like, then masked_fill_) is no such cause.
std::string inPlaceWriteAfterRead(const GraphCutFacts& facts) {
  std::vector<int> first_reader(facts.values.size(), -1);
  const auto where = [](const ForwardNode& node) {
    return node.scope.empty() ? node.kind : fmt::format("{} in {}", node.kind, node.scope);
  };
  for (const ForwardNode& node : facts.nodes) {
    for (const int written : node.writes)
      // Graph inputs (the module, its weights and buffers) are written by
      // design: BatchNorm's running statistics.
      if (facts.values[written].producer_node >= 0 && first_reader[written] >= 0)
        return fmt::format("{} writes in place to a tensor that {} read before it", where(node),
                           where(facts.nodes[first_reader[written]]));
    for (const int read : node.reads)
      if (first_reader[read] < 0) first_reader[read] = node.id;
  }
  return "";
}

class IterationRunner {
 public:
  IterationRunner(torch::jit::Module& module, PreparedRun& run, Optimizer& optimizer, RecordingSession& session,
                  uint64_t seed, c10::DeviceType device_type, std::string in_place_write_after_read)
      : module_(module),
        run_(run),
        optimizer_(optimizer),
        session_(session),
        seed_(seed),
        module_device_type_(device_type),
        in_place_write_after_read_(std::move(in_place_write_after_read)) {}

  // `forward` runs the model's forward on run.inputs: instrumented for the
  // profile, plain for the other-executor-mode comparison.
  IterationOutcome runOnce(const std::function<c10::IValue()>& forward) {
    clearGradients(module_);
    at::manual_seed(seed_);
    IterationOutcome outcome;
    // The model's output and the loss are freed after the record closes, as a
    // training loop drops them after the step: they are outputs, not activations.
    c10::IValue output;
    at::Tensor loss;
    session_.beginIteration();
    try {
      runSteps(forward, outcome, output, loss);
    } catch (...) {
      session_.endIteration();  // an iteration that failed records nothing
      throw;
    }
    outcome.record = session_.endIteration();
    return outcome;
  }

 private:
  // A forward that failed in a graph that makes tensors on another device: that
  // is the cause to name, not the inputs.
  void throwIfTracedOnAnotherDevice(const std::exception& failure) {
    const std::optional<FixedDeviceUse> fixed = fixedOtherDevice(module_, module_device_type_);
    if (!fixed) return;
    const std::string run_device = c10::DeviceTypeName(module_device_type_, /*lower_case=*/true);
    const bool profilable_there = fixed->device.is_cpu() || fixed->device.is_cuda();
    throw RecordError(fmt::format(
        "the model's graph fixes the device {} in {} op(s) (first: {}; torch.jit.trace records the device of "
        "every tensor forward makes), so it cannot run on {} ({}); export it with the model and inputs on {}{}",
        fixed->device.str(), fixed->op_count, fixed->first_op, run_device, oneLineTorchError(failure), run_device,
        profilable_there
            ? fmt::format(", or profile it with --device {}", c10::DeviceTypeName(fixed->device.type(), true))
            : ""));
  }

  void runSteps(const std::function<c10::IValue()>& forward, IterationOutcome& outcome, c10::IValue& output,
                at::Tensor& loss) {
    // Forward and the loss run under autocast, as `with torch.autocast(...)` around them would.
    std::optional<AutocastScope> autocast;
    if (!run_.autocast.empty()) autocast.emplace(run_.autocast, module_device_type_);
    try {
      output = forward();
    } catch (const RecordError&) {
      throw;
    } catch (const std::exception& e) {  // c10::Error, or the interpreter's own error types
      throwIfTracedOnAnotherDevice(e);
      std::string specs;
      for (const InputSpec& s : run_.input_specs) specs += (specs.empty() ? "" : " ") + s.text;
      throw RecordError(fmt::format("the inputs {} do not fit the model: {}; pass the shapes forward expects with "
                                    "--input",
                                    specs, oneLineTorchError(e)));
    }
    session_.beginStep(Phase::Loss, -1, "loss");
    outcome.resolved_loss = resolveLossKind(output, run_.loss_kind);
    try {
      loss = computeLoss(output, outcome.resolved_loss, run_.target);
    } catch (const RecordError&) {
      throw;
    } catch (const std::exception& e) {
      throw RecordError(fmt::format("the {} loss of the model's output failed: {}; pass --loss (and --target) that "
                                    "fit the output",
                                    outcome.resolved_loss, oneLineTorchError(e)));
    }
    autocast.reset();
    if (!loss.requires_grad())
      throw RecordError("the loss does not require grad: the model has no trainable parameters on this path");
    session_.beginStep(Phase::Backward, -1, "autograd.engine");
    session_.reportGradientsOf(loss);
    // A backward that fails here fails in the user's own loop: the hooks make
    // autograd's in-place check (saved_tensor_hooks.h) and change nothing else.
    try {
      loss.backward();
    } catch (const std::exception& e) {
      throw Error(ErrorKind::ModelFails,
                  fmt::format("the model's own training step fails in PyTorch: {}{}; fix the model (acprof profiles "
                              "only a step PyTorch accepts)",
                              oneLineTorchError(e),
                              in_place_write_after_read_.empty() ? "" : "; the graph's " + in_place_write_after_read_));
    }
    if (optimizer_.kind() != "none") {
      session_.beginStep(Phase::Optimizer, -1, "optimizer.step");
      optimizer_.step();
    }
    std::vector<at::Tensor> grads;
    for (const at::Tensor& p : module_.parameters()) grads.push_back(p.grad());
    outcome.gradient_ptrs = storagePtrs(grads);
    std::vector<at::Tensor> outputs = tensorsIn(output);
    outputs.push_back(loss);
    outcome.output_ptrs = storagePtrs(outputs);
  }

 private:
  torch::jit::Module& module_;
  PreparedRun& run_;
  Optimizer& optimizer_;
  RecordingSession& session_;
  uint64_t seed_;
  c10::DeviceType module_device_type_;
  std::string in_place_write_after_read_;  // "" where the graph has none
};

// What the checkpoint operator keeps per call on the profiled device: the
// default generators' states (rewriter/ops/rng_state.h). CUDA generator states
// are host tensors, so on CUDA nothing of them is on the device.
int64_t checkpointRngStateBytes(c10::DeviceType device_type) {
  if (device_type != c10::DeviceType::CPU) return 0;
  at::Generator generator = at::globalContext().defaultGenerator(c10::DeviceType::CPU);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return static_cast<int64_t>(generator.get_state().nbytes());
}

bool isForwardNodeStep(const IterationRecord& record, size_t s) {
  return record.steps[s].phase == Phase::Forward && record.steps[s].node >= 0;
}

// The forward node steps' time added up, and how many there are.
struct ForwardStepsTime {
  double us = 0;
  int steps = 0;
};
ForwardStepsTime forwardStepsTime(const IterationRecord& record, const std::vector<double>& step_time_us) {
  ForwardStepsTime forward;
  for (size_t s = 0; s < record.steps.size(); ++s) {
    if (!isForwardNodeStep(record, s)) continue;
    forward.us += step_time_us[s];
    ++forward.steps;
  }
  return forward;
}

// Wall-clock forward step times include the marker and observer probes around
// each node; the plain forward of the same mode does not. The difference,
// spread evenly over the forward steps, is the probes' cost per step (0 where
// the plain forward took as long).
double probeCostPerStepUs(const IterationRecord& record, double plain_forward_us,
                          const std::vector<double>& step_time_us) {
  const ForwardStepsTime instrumented = forwardStepsTime(record, step_time_us);
  if (instrumented.steps == 0 || plain_forward_us >= instrumented.us) return 0;
  return (instrumented.us - plain_forward_us) / instrumented.steps;
}

// Takes the probes' cost out of each forward step's time (never below 0), so
// that a segment's recompute time is the time its ops take.
void removeProbeCost(const IterationRecord& record, double probe_us, std::vector<double>& step_time_us) {
  for (size_t s = 0; s < record.steps.size(); ++s)
    if (isForwardNodeStep(record, s)) step_time_us[s] = std::max(0.0, step_time_us[s] - probe_us);
}

// Duration of each step: a backward function's own start..end when the
// RecordFunction end was seen, else until the next step starts.
std::vector<double> stepDurationsUs(const IterationRecord& record) {
  std::vector<double> durations(record.steps.size());
  for (size_t i = 0; i < record.steps.size(); ++i) {
    const StepTiming& s = record.steps[i];
    const int64_t next_start = i + 1 < record.steps.size() ? record.steps[i + 1].start_ns : record.end_ns;
    const int64_t end = s.end_ns >= s.start_ns ? s.end_ns : next_start;
    durations[i] = s.gpu_time_us >= 0 ? s.gpu_time_us : static_cast<double>(end - s.start_ns) / 1000.0;
  }
  return durations;
}

// What the probes add to each forward step: the cost given (a re-profile
// takes the original profile's), else what the plain forward measured.
double probeCostPerStepUs(const IterationRecord& record, const std::vector<double>& step_time_us,
                          const std::vector<double>& plain_forward_us, const std::optional<double>& given_us) {
  return given_us ? *given_us : probeCostPerStepUs(record, median(plain_forward_us), step_time_us);
}

// Where the profile's cost stands (measured_iterations.h): a plain step is a
// measured iteration's median less what the probes added to its forward; what
// is left to run is deriving and writing the profile.
ProfileCost profileCost(const IterationRecord& record, const std::vector<double>& iteration_us,
                        const std::vector<double>& plain_forward_us, const std::optional<double>& probe_cost_us) {
  const std::vector<double> step_us = stepDurationsUs(record);
  const double probes_us = probeCostPerStepUs(record, step_us, plain_forward_us, probe_cost_us) *
                           forwardStepsTime(record, step_us).steps;
  const double step_seconds = std::max(0.0, median(iteration_us) - probes_us) / 1e6;
  return ProfileCost{processAgeSeconds(), step_seconds, kDerivingAndWritingSeconds};
}

void checkDevice(const std::string& device) {
  if (device != "cpu" && device.rfind("cuda", 0) != 0)
    throw RecordError(fmt::format("unknown device '{}'; use cpu or cuda", device));
  if (device.rfind("cuda", 0) == 0 && !at::hasCUDA())
    throw RecordError(
        "--device cuda, but no CUDA GPU is visible to this process (none installed, or hidden by "
        "CUDA_VISIBLE_DEVICES); run on a machine with a GPU, or use --device cpu");
}

// The profile of `module`, loaded from options.model_path (whose sha256 is
// `model_sha256`), trained by `optimizer`.
Profile recordModel(const RecordOptions& options, torch::jit::Module& module, Optimizer& optimizer,
                    const std::string& model_sha256) {
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  const std::shared_ptr<torch::jit::Graph> graph = inlinedForwardGraph(module);
  GraphCutFacts facts = describeCutFacts(module, graph);
  PreparedRun run = prepare(options, module, *graph);
  run.inputs = makeInputs(run.input_specs, options.run.device, options.run.seed);
  if (run.target_spec) run.target = makeTensor(*run.target_spec, options.run.device);

  Profile profile;
  // Absolute: plan and rewrite find the model from any directory (issue 36).
  profile.meta.model_path = absolutePath(options.model_path);
  profile.meta.model_sha256 = model_sha256;
  profile.meta.torch_version = TORCH_VERSION;
  profile.meta.command = options.command_line;
  // The run as it happened: the archive's specs and autocast where none were
  // asked for, and (below) the loss resolved on the
  // model's output.
  profile.meta.run = options.run;
  profile.meta.run.input_specs.clear();
  for (const InputSpec& s : run.input_specs) profile.meta.run.input_specs.push_back(s.text);
  profile.meta.run.target_spec = run.target_spec ? run.target_spec->text : "";
  profile.meta.run.autocast = run.autocast;
  profile.meta.run.intra_op_threads = intraOpThreads();

  InstrumentedForward forward(graph);
  const c10::DeviceType device_type = c10::Device(options.run.device).type();

  // A model trained before (recordTrainedModel) holds its last step's
  // gradients: dropped before the session, which would see them freed but
  // not made.
  clearGradients(module);
  std::vector<IterationOutcome> measured;
  std::vector<StaticStorage> statics;
  std::vector<double> plain_forward_us, no_grad_forward_us;
  int64_t other_mode_peak_bytes = -1;
  {
    RecordingSession session(device_type, options.record_gradients);
    ExecutorModeGuard executor_mode(options.run.executor_optimize);
    IterationRunner runner(module, run, optimizer, session, options.run.seed, device_type,
                           inPlaceWriteAfterRead(facts));
    auto instrumented = [&] { return forward.run(module, run.inputs); };
    for (int i = 0; i < options.run.warmup_iters; ++i) {
      progress(fmt::format("warm-up iteration {}/{}", i + 1, options.run.warmup_iters));
      runner.runOnce(instrumented);
    }
    clearGradients(module);
    statics = staticStorages(module, run, optimizer);
    std::vector<double> iteration_us;
    auto measureIteration = [&] {
      progress(fmt::format("measured iteration {} (at most {})", measured.size() + 1, options.run.measured_iters));
      const int64_t start_ns = nowNs();
      measured.push_back(runner.runOnce(instrumented));
      iteration_us.push_back(static_cast<double>(nowNs() - start_ns) / 1000.0);
    };
    // A plain forward (no probes) in the same mode: the probes' cost, which the
    // forward step times then do not carry (on small ops it rivals the op).
    // A forward alone: its output and autograd graph are dropped at once, as
    // no backward is timed here. One: the instrumented side is already a median
    // over the measured iterations, and a second plain forward cost half a
    // training step of a transformer (issue 36: a profile in at most five
    // steps); a plain forward the machine slowed makes the probes' cost lower,
    // never negative. And, where asked, one plain forward without grad,
    // recorded beside it (forward_without_grad_ratio, profile_format.h).
    auto plainForward = [&] {
      std::vector<c10::IValue> stack = forwardArguments(module, run.inputs);
      std::optional<AutocastScope> autocast;
      if (!run.autocast.empty()) autocast.emplace(run.autocast, device_type);
      return module.forward(stack);
    };
    auto timedForward = [&](std::vector<double>& times_us) {
      // On CUDA the clock reads the kernels' end, not their launches'.
      if (device_type == c10::DeviceType::CUDA) torch::cuda::synchronize();
      const int64_t start_ns = nowNs();
      plainForward();
      if (device_type == c10::DeviceType::CUDA) torch::cuda::synchronize();
      times_us.push_back(static_cast<double>(nowNs() - start_ns) / 1000.0);
    };
    // The fewest iterations, then the plain forward, so that the profile's
    // cost in plain steps is known when more iterations are considered.
    while (static_cast<int>(measured.size()) < std::min(kFewestMeasuredIterations, options.run.measured_iters))
      measureIteration();
    if (!options.probe_cost_us) {
      progress("plain forward: what the probes cost");
      timedForward(plain_forward_us);
    }
    // Only `acprof profile` keeps to the budget (RecordOptions::keep_to_step_budget).
    auto costSoFar = [&]() -> std::optional<ProfileCost> {
      if (!options.keep_to_step_budget) return std::nullopt;
      return profileCost(measured.back().record, iteration_us, plain_forward_us, options.probe_cost_us);
    };
    while (moreIterationsWanted(iteration_us, options.run.measured_iters, costSoFar())) measureIteration();
    if (options.measure_forward_without_grad) {
      const at::NoGradGuard no_grad;
      timedForward(no_grad_forward_us);
    }
    if (options.measure_other_executor_mode) {
      // One plain iteration under the other mode tells the user whether it would
      // hold less. Turning optimization on needs a profiling run first: a
      // forward, which is all the profiling executor records (autodiff
      // differentiates the optimized graph it builds at the next call).
      progress("comparing with executor optimization " + std::string(options.run.executor_optimize ? "off" : "on"));
      ExecutorModeGuard other_mode(!options.run.executor_optimize);
      auto plain = [&] {
        std::vector<c10::IValue> stack = forwardArguments(module, run.inputs);
        return module.forward(stack);
      };
      IterationRecord last;
      try {
        if (!options.run.executor_optimize) plainForward();
        last = runner.runOnce(plain).record;
      } catch (const std::exception& e) {
        // Only a comparison: the profile stands without it (e.g. TorchScript's
        // autodiff under autocast fails where eager autograd does not).
        progress("executor optimization " + std::string(options.run.executor_optimize ? "off" : "on") +
                 " could not run one iteration: " + oneLineTorchError(e));
        last = IterationRecord{};
      }
      int64_t static_bytes = 0;
      for (const StaticStorage& s : statics) static_bytes += s.bytes;
      int64_t start_total = last.events.empty() ? 0 : last.events[0].allocator_total - last.events[0].delta_bytes;
      int64_t max_total = start_total;
      for (const AllocationEvent& e : last.events) max_total = std::max(max_total, e.allocator_total);
      if (!last.events.empty()) other_mode_peak_bytes = static_bytes + (max_total - start_total);
    }
  }
  const IterationRecord& record = measured.front().record;
  profile.meta.run.loss = measured.front().resolved_loss;
  profile.meta.run.measured_iters = static_cast<int>(measured.size());
  profile.meta.checkpoint_rng_state_bytes = checkpointRngStateBytes(device_type);
  profile.meta.other_executor_mode_peak_bytes = other_mode_peak_bytes;
  profile.meta.time_source = record.time_source;

  // Step times: medians over the measured iterations that ran the same steps.
  std::vector<std::vector<double>> iterations_step_us;
  for (const IterationOutcome& m : measured) iterations_step_us.push_back(stepDurationsUs(m.record));
  std::vector<double> step_time_us = stepTimeMedians(iterations_step_us);
  if (record.time_source == "cpu_wall") {
    profile.meta.probe_cost_us = probeCostPerStepUs(record, step_time_us, plain_forward_us, options.probe_cost_us);
    removeProbeCost(record, profile.meta.probe_cost_us, step_time_us);
  }
  // A timer that linked no kernel to any step would leave a profile whose op
  // times are all 0, which no plan's time could be weighed by. Not acprof's
  // bug: the machine's CUPTI did not give what ACPROF_CUPTI=1 asked for (a
  // driver that keeps kernel records from this user, say), and the fix is in
  // how acprof is run.
  if (record.time_source == "cupti_kernels" && noKernelTimeLinked(step_time_us))
    throw Error(ErrorKind::Usage,
                fmt::format("CUPTI linked no kernel time to any of the iteration's {} steps, so the profile would "
                            "have no op times; profile without ACPROF_CUPTI=1 (op times then come from wall clocks "
                            "with the device synchronized at each op)",
                            step_time_us.size()));
  if (!no_grad_forward_us.empty() && median(plain_forward_us) > 0)
    profile.meta.forward_without_grad_ratio =
        std::min(1.0, median(no_grad_forward_us) / median(plain_forward_us));

  // Everything else is derived from the first measured iteration's events.
  profile.nodes = std::move(facts.nodes);
  profile.values = std::move(facts.values);
  profile.graph_outputs = std::move(facts.graph_outputs);
  IterationOutcome& outcome = measured.front();
  MeasuredIteration iteration;
  iteration.record = std::move(outcome.record);
  iteration.step_time_us = std::move(step_time_us);
  iteration.statics = std::move(statics);
  iteration.gradient_ptrs = std::move(outcome.gradient_ptrs);
  iteration.output_ptrs = std::move(outcome.output_ptrs);
  for (const at::Tensor& input : run.inputs) {
    iteration.input_ptrs.push_back(input.has_storage() ? input.storage().data() : nullptr);
    iteration.input_bytes.push_back(static_cast<int64_t>(input.numel()) * input.element_size());
  }
  progress("deriving tensors and their categories");
  deriveProfile(profile, iteration);
  return profile;
}

}  // namespace

Profile recordProfile(const RecordOptions& options) {
  checkDevice(options.run.device);
  const IntraOpThreadsGuard threads(options.run.intra_op_threads);
  if (options.progress) options.progress("loading " + options.model_path);
  // Hashing and loading read the same file: the hash on a thread of its own
  // beside the load (0.28 s of 47 MB on the 2-core machine), before any
  // iteration runs, so that it takes no time from a measured one.
  std::future<std::string> model_sha256 = std::async(std::launch::async, sha256OfFile, options.model_path);
  torch::jit::Module module = loadModel(options.model_path, options.run.device);
  Optimizer optimizer(options.run.optimizer, module);
  return recordModel(options, module, optimizer, model_sha256.get());
}

Profile recordTrainedModel(const RecordOptions& options, torch::jit::Module& module, Optimizer& optimizer) {
  if (optimizer.kind() != options.run.optimizer)
    throw Error(ErrorKind::Internal, fmt::format("recordTrainedModel: the model trained with optimizer {} but the "
                                                 "profile asks for {}; this is a bug in acprof",
                                                 optimizer.kind(), options.run.optimizer));
  checkDevice(options.run.device);
  const IntraOpThreadsGuard threads(options.run.intra_op_threads);
  return recordModel(options, module, optimizer, sha256OfFile(options.model_path));
}

}  // namespace acprof
