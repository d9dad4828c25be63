// The loss acprof trains a model's output with, and the tensors in an output.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace acprof {

// Every tensor in a model output, depth first: a tensor, or the tensors in a
// tuple, list or dict (values in insertion order), nested.
std::vector<at::Tensor> tensorsIn(const c10::IValue& value);

// The losses --loss takes, in the order help and errors list them: "auto"
// (resolveLossKind), then python/acprof/contract.json's ("mean", "sum",
// "cross_entropy"), which the eager front end takes too.
const std::vector<std::string>& requestableLossKinds();
// A requestable kind, or "model" (the output is the loss), which "auto" resolves
// to and a profile or a model's stored specs may carry.
bool isLossKind(const std::string& kind);
// "sum, mean or cross_entropy": the kinds a user picks instead of auto.
std::string explicitLossKindsText();

// The resolved loss kind for a model output: "model" when the output is a scalar
// and the config says auto; otherwise the config's choice ("auto" means "mean").
std::string resolveLossKind(const c10::IValue& output, const std::string& requested);
at::Tensor computeLoss(const c10::IValue& output, const std::string& loss_kind, const at::Tensor& target);

}  // namespace acprof
