#include "acprof/loss.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

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

}  // namespace acprof
