#include "acprof/loss.h"

#include <algorithm>
#include <iterator>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "acprof/contract.h"
#include "acprof/recorder.h"

namespace acprof {

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

namespace {

std::string shapeText(at::IntArrayRef sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

std::vector<int64_t> sizesWithout(const at::Tensor& t, int64_t dim) {
  std::vector<int64_t> sizes = t.sizes().vec();
  sizes.erase(sizes.begin() + dim);
  return sizes;
}

// Which dimension of the logits holds the classes is read from the target: the
// last one when the target has one element per row of classes, as for language
// models' [B, T, V] against [B, T] or [B*T] (and [N, C] against [N]); else the
// second, torch's own convention for dense prediction, [N, C, H, W] against
// [N, H, W] (segmentation).
at::Tensor crossEntropy(const at::Tensor& logits, const at::Tensor& target) {
  if (logits.dim() < 2)
    throw RecordError(fmt::format("--loss cross_entropy needs logits with a class dimension; the output's first "
                                  "tensor is {}", shapeText(logits.sizes())));
  if (target.numel() * logits.size(-1) == logits.numel())
    return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), target.reshape({-1}));
  if (logits.dim() >= 3 && target.sizes() == sizesWithout(logits, 1)) return at::cross_entropy_loss(logits, target);
  throw RecordError(fmt::format(
      "--target {} does not fit logits {}: pass a target shaped as the logits without their class dimension, "
      "{} (classes last) or {} (classes second)",
      shapeText(target.sizes()), shapeText(logits.sizes()), shapeText(sizesWithout(logits, logits.dim() - 1)),
      logits.dim() >= 3 ? shapeText(sizesWithout(logits, 1)) : std::string("none")));
}

}  // namespace

const std::vector<std::string>& requestableLossKinds() {
  // "auto", then the losses python/acprof/contract.json names for both front ends.
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> all{"auto"};
    all.insert(all.end(), std::begin(contract::kLossNames), std::end(contract::kLossNames));
    return all;
  }();
  return kinds;
}

bool isLossKind(const std::string& kind) {
  const auto& kinds = requestableLossKinds();
  return kind == "model" || std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

std::string explicitLossKindsText() {
  const std::vector<std::string> kinds(requestableLossKinds().begin() + 1, requestableLossKinds().end());
  return fmt::format("{} or {}", fmt::join(kinds.begin(), kinds.end() - 1, ", "), kinds.back());
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
      throw RecordError(
          fmt::format("the model's output is not a scalar loss; pass --loss {}", explicitLossKindsText()));
    return tensors[0].reshape({});
  }
  if (loss_kind == "cross_entropy") {
    if (!target.defined()) throw RecordError("--loss cross_entropy needs --target, e.g. --target int64[32]:0..1000");
    return crossEntropy(tensors[0], target);
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

}  // namespace acprof
