// Input specifications: "float32[32,3,224,224]", "int64[8,512]:0..50257".
//
// Parsed without LibTorch so that errors are plain values; materialized into
// tensors by synthetic_inputs.h.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "acprof/error.h"

namespace acprof {

class InputSpecError : public Error {
 public:
  explicit InputSpecError(const std::string& message) : Error(ErrorKind::BadInput, message) {}
};

struct InputSpec {
  std::string text;            // as written
  std::string dtype;           // float32, float16, bfloat16, float64, int64, int32, bool
  std::vector<int64_t> shape;
  // For integer dtypes: values drawn uniformly from [low, high). Default [0, 2).
  std::optional<std::pair<int64_t, int64_t>> range;
};

// Throws InputSpecError with the spec, what is wrong and an example of the fix.
InputSpec parseInputSpec(const std::string& text);

}  // namespace acprof
