// Tensors made from input specs: what acprof feeds a model it profiles,
// verifies or times, the same from the same seed in every stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include "acprof/input_spec.h"

namespace acprof {

// Draws each spec's tensor on the device: normal floats, integers uniform in
// [low, high), the generator seeded with `seed` first.
std::vector<at::Tensor> makeInputs(const std::vector<InputSpec>& specs, const std::string& device, uint64_t seed);
at::Tensor makeTensor(const InputSpec& spec, const std::string& device);

// The name input specs and profiles give a dtype: "float32", "int64", "uint8"; LibTorch's own for the rest.
std::string dtypeName(at::ScalarType type);

}  // namespace acprof
