// Verification: one training step of the original and of the rewritten model,
// freshly loaded as a TrainingPair, on the same inputs and seed; loss, gradients and buffers
// are compared bit for bit under deterministic algorithms, or within a tolerance.
#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/Context.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/runtime/graph_iterator.h>

#include "acprof/cut_facts.h"
#include "acprof/forward_graph.h"
#include "acprof/model_file.h"
#include "acprof/run_modes.h"
#include "acprof/rewriter.h"
#include "acprof/training_pair.h"
#include "acprof/training_step.h"

namespace acprof {
namespace {

// A sparse gradient (nn.Embedding(sparse=True)) compared by its values: its
// coalesced dense form, as the optimizer applies it.
at::Tensor denseOf(const at::Tensor& t) { return t.is_sparse() ? t.detach().coalesce().to_dense() : t.detach(); }

// NaN-safe: a tensor missing on one side, or of another shape, differs
// infinitely, and so does a NaN on one side only; NaNs in the same places on
// both sides (a model whose loss is NaN on these inputs) do not differ.
double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() && !b.defined()) return 0;
  if (!a.defined() || !b.defined() || a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
  if (a.numel() == 0) return 0;
  const at::Tensor da = denseOf(a).to(at::kCPU, at::kDouble);
  const at::Tensor db = denseOf(b).to(at::kCPU, at::kDouble);
  const at::Tensor both_nan = da.isnan().logical_and(db.isnan());
  const double diff = (da - db).masked_fill(both_nan, 0).abs().max().item<double>();
  // std::max would drop a NaN depending on argument order; a NaN is a difference.
  return std::isnan(diff) ? std::numeric_limits<double>::infinity() : diff;
}

// The same bits: a NaN equals a NaN of the same pattern, which Tensor::equal,
// comparing values, would call different.
bool bitwiseEqual(const at::Tensor& sparse_or_dense_a, const at::Tensor& sparse_or_dense_b) {
  if (!sparse_or_dense_a.defined() || !sparse_or_dense_b.defined())
    return sparse_or_dense_a.defined() == sparse_or_dense_b.defined();
  if (sparse_or_dense_a.is_sparse() != sparse_or_dense_b.is_sparse()) return false;
  const at::Tensor a = denseOf(sparse_or_dense_a);
  const at::Tensor b = denseOf(sparse_or_dense_b);
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (!at::isFloatingType(a.scalar_type())) return a.equal(b);
  const c10::ScalarType bits = a.element_size() == 8   ? at::kLong
                               : a.element_size() == 4 ? at::kInt
                                                       : at::kShort;
  return a.contiguous().view(bits).equal(b.contiguous().view(bits));
}

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

void compareNamed(const NamedTensors& original, const NamedTensors& rewritten, const char* what,
                  double& max_diff, size_t& compared, bool& equal) {
  if (original.size() != rewritten.size()) {
    throw RewriteError(fmt::format("verification: the rewritten model has {} {} but the original has {}; "
                                   "this is a bug in acprof rewrite, please report it with the plan",
                                   rewritten.size(), what, original.size()),
                       ErrorKind::Internal);
  }
  for (size_t i = 0; i < original.size(); ++i) {
    const auto match = std::find_if(rewritten.begin(), rewritten.end(),
                                    [&](const auto& entry) { return entry.first == original[i].first; });
    if (match == rewritten.end()) {
      throw RewriteError(fmt::format("verification: the rewritten model lacks {} '{}'; this is a bug in acprof "
                                     "rewrite, please report it with the plan", what, original[i].first),
                       ErrorKind::Internal);
    }
    max_diff = std::max(max_diff, maxAbsDiff(original[i].second, match->second));
    equal = equal && bitwiseEqual(original[i].second, match->second);
    ++compared;
  }
}

// Deterministic algorithms on and cuDNN benchmarking off (so that both runs
// pick the same kernels) for its lifetime; the caller's settings come back after.
class DeterministicAlgorithmsGuard {
 public:
  DeterministicAlgorithmsGuard()
      : enabled_(at::globalContext().deterministicAlgorithms()),
        warn_only_(at::globalContext().deterministicAlgorithmsWarnOnly()),
        cudnn_benchmark_(at::globalContext().benchmarkCuDNN()) {
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
    at::globalContext().setBenchmarkCuDNN(false);
  }
  ~DeterministicAlgorithmsGuard() {
    at::globalContext().setDeterministicAlgorithms(enabled_, warn_only_);
    at::globalContext().setBenchmarkCuDNN(cudnn_benchmark_);
  }
  DeterministicAlgorithmsGuard(const DeterministicAlgorithmsGuard&) = delete;
  DeterministicAlgorithmsGuard& operator=(const DeterministicAlgorithmsGuard&) = delete;

 private:
  bool enabled_;
  bool warn_only_;
  bool cudnn_benchmark_;
};

// The line of an error that is at::Context::alertNotDeterministic's alert (its
// words in 1.13 and 2.x), or "" if none is: TorchScript's interpreter and the
// autograd engine put their own lines before it.
std::string nondeterministicAlert(const std::exception& e) {
  const std::string text = e.what();
  const size_t at = text.find("does not have a deterministic implementation");
  if (at == std::string::npos) return "";
  const size_t start = text.rfind('\n', at);
  const size_t begin = start == std::string::npos ? 0 : start + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

// The ops that read the parameter `name` in the inlined forward graph, "aten::linear in fc", up to
// three, in graph order: its gradient is made by their backward. "" where no read is found.
std::string readersOfParameter(const torch::jit::Module& module, const std::string& name) {
  at::Tensor parameter;
  for (const auto& slot : module.named_parameters(/*recurse=*/true))
    if (slot.name == name) parameter = slot.value;
  if (!parameter.defined()) return "";
  std::shared_ptr<torch::jit::Graph> graph = inlinedForwardGraph(module);
  std::vector<std::string> readers;
  torch::jit::DepthFirstGraphNodeIterator nodes(graph);
  for (torch::jit::Node* node = nodes.next(); node != nullptr; node = nodes.next()) {
    if (node->kind() != c10::prim::GetAttr) continue;
    const std::optional<AttributeRef> attribute = attributeRead(node->output(), module);
    if (!attribute || !attribute->value().isTensor() || !attribute->value().toTensor().is_same(parameter)) continue;
    for (const torch::jit::Use& use : node->output()->uses()) {
      const std::string scope = moduleScope(use.user);
      const std::string reader = std::string(use.user->kind().toQualString()) + (scope.empty() ? "" : " in " + scope);
      if (std::find(readers.begin(), readers.end(), reader) == readers.end()) readers.push_back(reader);
    }
  }
  if (readers.size() > 3) readers.resize(3);
  return fmt::format("{}", fmt::join(readers, ", "));
}

}  // namespace

std::optional<StepDifference> firstDifference(const StepOutcome& first, const StepOutcome& second,
                                              std::optional<double> tolerance) {
  const auto differ = [&](const at::Tensor& a, const at::Tensor& b) {
    return tolerance ? maxAbsDiff(a, b) > *tolerance : !bitwiseEqual(a, b);
  };
  if (differ(first.loss, second.loss)) return StepDifference{"the loss", maxAbsDiff(first.loss, second.loss), "", ""};
  const auto named = [&](const NamedTensors& a, const NamedTensors& b, bool gradients) -> std::optional<StepDifference> {
    for (const auto& [name, tensor] : a) {
      const auto match = std::find_if(b.begin(), b.end(), [&](const auto& entry) { return entry.first == name; });
      const at::Tensor other = match == b.end() ? at::Tensor() : match->second;
      if (!differ(tensor, other)) continue;
      return StepDifference{fmt::format("{} '{}'", gradients ? "the gradient of" : "buffer", name),
                            maxAbsDiff(tensor, other), gradients ? name : "", ""};
    }
    return std::nullopt;
  };
  if (auto d = named(first.gradients, second.gradients, /*gradients=*/true)) return d;
  return named(first.buffers, second.buffers, /*gradients=*/false);
}

double VerificationResult::maxAbsDiff() const {
  return std::max({loss_abs_diff, max_gradient_abs_diff, max_buffer_abs_diff});
}

VerificationResult verifyRewrite(const std::string& original_path, const std::string& rewritten_path,
                                 const StepConfig& config, std::optional<double> tolerance) {
  TrainingPair pair(original_path, rewritten_path, config);
  return verifyRewrite(pair, tolerance);
}

VerificationResult verifyRewrite(TrainingPair& pair, std::optional<double> tolerance) {
  const StepConfig& config = pair.config;
  // The plain interpreter on both: the comparison is about the models' computations.
  const ExecutorModeGuard executor_mode(/*optimize=*/false);
  const IntraOpThreadsGuard threads(config.run.intra_op_threads);

  std::optional<DeterministicAlgorithmsGuard> deterministic;
  if (!tolerance) deterministic.emplace();

  // Both models see the same tensors; the step reseeds before each forward.
  StepOutcome expected, actual;
  try {
    expected = runTrainingStep(pair.original, pair.inputs, pair.target, config);
    actual = runTrainingStep(pair.rewritten, pair.inputs, pair.target, config);
    ++pair.steps_taken;
  } catch (const std::exception& e) {
    const std::string alert = deterministic ? nondeterministicAlert(e) : "";
    if (alert.empty()) throw;
    throw RewriteError(fmt::format("verification needs deterministic algorithms, and the model uses an op that has "
                                   "none ({}); pass --tolerance with the largest difference you accept (e.g. 1e-5), "
                                   "or --no-verify",
                                   alert));
  }

  VerificationResult result;
  result.tolerance = tolerance;
  result.loss_abs_diff = maxAbsDiff(expected.loss, actual.loss);
  result.bitwise_equal = bitwiseEqual(expected.loss, actual.loss);
  compareNamed(expected.gradients, actual.gradients, "parameter gradients", result.max_gradient_abs_diff,
               result.gradients_compared, result.bitwise_equal);
  compareNamed(expected.buffers, actual.buffers, "buffers", result.max_buffer_abs_diff, result.buffers_compared,
               result.bitwise_equal);
  // Before blaming the rewrite: does the original agree with itself? Only
  // where the rewrite failed, so a passing verification costs no third step.
  if (!result.passed()) {
    torch::jit::Module original = loadModel(pair.original_path, config.run.device);
    const StepOutcome repeated = runTrainingStep(original, pair.inputs, pair.target, config);
    result.original_difference = firstDifference(expected, repeated, tolerance);
    if (result.original_difference && !result.original_difference->parameter.empty())
      result.original_difference->made_by = readersOfParameter(original, result.original_difference->parameter);
  }
  return result;
}

}  // namespace acprof
