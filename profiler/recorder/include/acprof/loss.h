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

// The resolved loss kind for a model output: "model" when the output is a scalar
// and the config says auto; otherwise the config's choice ("auto" means "mean").
std::string resolveLossKind(const c10::IValue& output, const std::string& requested);
at::Tensor computeLoss(const c10::IValue& output, const std::string& loss_kind, const at::Tensor& target);

}  // namespace acprof
