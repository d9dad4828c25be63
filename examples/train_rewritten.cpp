// Trains a model rewritten by `acprof rewrite` in a LibTorch training loop and
// shows that it trains exactly like the original.
//
//   train_rewritten --original model.pt --rewritten model.ckpt.pt [--steps 5]
//
// The program links libacprof_ops.so (CMake: find_package(acprof), target
// acprof::ops; see examples/CMakeLists.txt), which registers the operator the
// rewritten model calls. Both models start from the same weights (the rewrite
// keeps them) and train --steps steps with torch::optim::AdamW and a StepLR
// schedule, on the same inputs and dropout masks at every step: the inputs come
// from the specs that the export scripts in models/ store in the archive,
// drawn from seed `step`. The losses must be equal step for step and the final
// parameters and buffers equal, bit for bit on the CPU.
//
// Prints one summary line; on any mismatch exits 1 with a one-line reason.
#include <torch/optim/adamw.h>
#include <torch/optim/schedulers/step_lr.h>
#include <torch/script.h>
// torch::jit::setGraphExecutorOptimize: no narrower public header declares it.
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <acprof/ops.h>

#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string& reason) {
  std::cerr << "train_rewritten: " << reason << "\n";
  std::exit(1);
}

// --- What stands for your data and your loss ------------------------------------------------
// The archive's extra files "acprof_inputs" (one spec per line), "acprof_target" and
// "acprof_loss", as models/training_step.py reads them.
struct StoredSpecs {
  std::vector<std::string> inputs;
  std::string target;
  std::string loss;
  std::string autocast;
};

StoredSpecs readStoredSpecs(const std::string& path) {
  torch::jit::ExtraFilesMap extra{{"acprof_inputs", ""}, {"acprof_target", ""}, {"acprof_loss", ""},
                                  {"acprof_autocast", ""}};
  torch::jit::load(path, torch::Device(torch::kCPU), extra);
  StoredSpecs stored{{}, extra["acprof_target"], extra["acprof_loss"], extra["acprof_autocast"]};
  std::istringstream lines(extra["acprof_inputs"]);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) stored.inputs.push_back(line);
  return stored;
}

// One tensor from a spec such as "float32[32,3,32,32]" or "int64[4,32]:0..128".
torch::Tensor makeTensor(const std::string& spec) {
  const auto open = spec.find('['), close = spec.find(']');
  if (open == std::string::npos || close == std::string::npos) fail("cannot read the input spec '" + spec + "'");
  const std::string dtype = spec.substr(0, open);
  std::vector<int64_t> shape;
  std::istringstream dims(spec.substr(open + 1, close - open - 1));
  for (std::string dim; std::getline(dims, dim, ',');) shape.push_back(std::stoll(dim));
  if (dtype == "int64") {
    const auto range = spec.find(':', close), dots = spec.find("..", close);
    const int64_t low = range == std::string::npos ? 0 : std::stoll(spec.substr(range + 1, dots - range - 1));
    const int64_t high = range == std::string::npos ? 2 : std::stoll(spec.substr(dots + 2));
    return torch::randint(low, high, shape, torch::kLong);
  }
  if (dtype == "float32") return torch::randn(shape);
  fail("this example makes float32 and int64 inputs, not '" + dtype + "'; extend makeTensor");
}

struct StepData {
  std::vector<torch::jit::IValue> inputs;
  torch::Tensor target;
};

StepData makeStepData(const StoredSpecs& stored, int64_t seed) {
  torch::manual_seed(seed);
  StepData data;
  for (const std::string& spec : stored.inputs) data.inputs.emplace_back(makeTensor(spec));
  if (!stored.target.empty()) data.target = makeTensor(stored.target);
  return data;
}

// The loss models/training_step.py computes: cross entropy of the logits, classes last
// ([..., C] against [...]) or, for a dense target, second ([N, C, H, W] against [N, H, W]); or
// the mean of a tensor output.
torch::Tensor computeLoss(const torch::jit::IValue& output, const StoredSpecs& stored, const torch::Tensor& target) {
  const torch::Tensor logits = output.isTuple() ? output.toTupleRef().elements()[0].toTensor() : output.toTensor();
  if (stored.loss == "cross_entropy" && target.numel() * logits.size(-1) == logits.numel())
    return torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), target.reshape({-1}));
  if (stored.loss == "cross_entropy") return torch::cross_entropy_loss(logits, target);
  if (logits.dim() == 0 || stored.loss == "mean") return logits.mean();
  fail("this example computes cross_entropy or mean losses, not '" + stored.loss + "'; extend computeLoss");
}
// ----------------------------------------------------------------------------------------------

// The module's parameters, each once: a weight tied to two attributes appears twice in
// Module::parameters(), and the optimizer must step it once (as Python's parameters() does).
std::vector<torch::Tensor> distinctParameters(const torch::jit::Module& model) {
  std::vector<torch::Tensor> parameters;
  std::set<const c10::TensorImpl*> seen;
  for (const torch::Tensor& parameter : model.parameters())
    if (seen.insert(parameter.unsafeGetTensorImpl()).second) parameters.push_back(parameter);
  return parameters;
}

// The training loop a user writes. Returns the loss of every step.
std::vector<torch::Tensor> train(torch::jit::Module& model, const StoredSpecs& stored, int steps) {
  model.train();
  torch::optim::AdamW optimizer(distinctParameters(model), torch::optim::AdamWOptions(1e-3));
  torch::optim::StepLR scheduler(optimizer, /*step_size=*/3, /*gamma=*/0.5);
  std::vector<torch::Tensor> losses;
  for (int step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    // Same inputs and target for both models at a step, and the same dropout masks: the
    // checkpoint's recompute restores the RNG state the forward started from.
    const StepData data = makeStepData(stored, step);
    torch::manual_seed(step);
    const torch::Tensor loss = computeLoss(model.forward(data.inputs), stored, data.target);
    loss.backward();
    optimizer.step();
    scheduler.step();
    losses.push_back(loss.detach());
  }
  return losses;
}

// Parameters and buffers must be equal, name for name and bit for bit.
template <typename NamedList>
void compareNamed(const NamedList& expected, const NamedList& actual, const std::string& what) {
  std::unordered_map<std::string, torch::Tensor> by_name;
  for (const auto& entry : actual) by_name.emplace(entry.name, entry.value);
  for (const auto& entry : expected) {
    const auto found = by_name.find(entry.name);
    if (found == by_name.end()) fail(what + ": the rewritten model has no " + entry.name);
    if (!torch::equal(entry.value, found->second)) fail(what + ": " + entry.name + " differs");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string original_path, rewritten_path;
  int steps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--original") original_path = argv[i + 1];
    else if (flag == "--rewritten") rewritten_path = argv[i + 1];
    else if (flag == "--steps") steps = std::atoi(argv[i + 1]);
    else fail("unknown argument '" + flag + "'; usage: train_rewritten --original M.pt --rewritten M.ckpt.pt [--steps N]");
  }
  if (original_path.empty() || rewritten_path.empty() || steps < 1)
    fail("usage: train_rewritten --original model.pt --rewritten model.ckpt.pt [--steps N >= 1]");

  // The rewritten model's forward calls acprof::checkpoint, which linking libacprof_ops.so registers.
  if (!acprof::checkpointOperatorRegistered())
    fail("acprof::checkpoint is not registered; link libacprof_ops.so (CMake target acprof::ops)");
  // Train in the executor mode acprof profiled in (off by default, `acprof profile
  // --jit-optimize`): its plan and the checkpoint segments assume it.
  torch::jit::setGraphExecutorOptimize(false);

  const StoredSpecs stored = readStoredSpecs(original_path);
  if (stored.inputs.empty())
    fail(original_path + " stores no input specs (acprof_inputs); export it with python3 models export (from the acprof repository)");
  if (!stored.autocast.empty())
    fail(original_path + " trains under autocast, which this example does not set up; use a model without it");

  torch::jit::Module original = torch::jit::load(original_path);
  torch::jit::Module rewritten = torch::jit::load(rewritten_path);
  if (rewritten.get_method("forward").graph()->toString().find("acprof::checkpoint") == std::string::npos)
    fail(rewritten_path + " calls no acprof::checkpoint; pass the output of acprof rewrite");
  compareNamed(original.named_parameters(), rewritten.named_parameters(), "initial state");

  const std::vector<torch::Tensor> original_losses = train(original, stored, steps);
  const std::vector<torch::Tensor> rewritten_losses = train(rewritten, stored, steps);
  for (int step = 0; step < steps; ++step) {
    // torch::equal: exact equality, no tolerance.
    if (!torch::equal(original_losses[step], rewritten_losses[step])) {
      fail("loss differs at step " + std::to_string(step) + ": " + std::to_string(original_losses[step].item<double>()) +
           " vs " + std::to_string(rewritten_losses[step].item<double>()));
    }
  }
  compareNamed(original.named_parameters(), rewritten.named_parameters(), "final parameters");
  compareNamed(original.named_buffers(), rewritten.named_buffers(), "final buffers");

  std::cout << "train_rewritten (C++): " << steps << " AdamW + StepLR steps, losses "
            << original_losses.front().item<double>() << " -> " << original_losses.back().item<double>()
            << " equal bit for bit, and " << original.named_parameters().size() << " parameters and "
            << original.named_buffers().size() << " buffers equal\n";
  return 0;
}
