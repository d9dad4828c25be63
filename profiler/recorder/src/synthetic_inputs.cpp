#include "acprof/synthetic_inputs.h"

#include <ATen/ATen.h>

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

std::string dtypeName(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kBool: return "bool";
    case at::kByte: return "uint8";
    case at::kChar: return "int8";
    case at::kShort: return "int16";
    default: return c10::toString(type);
  }
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

}  // namespace acprof
