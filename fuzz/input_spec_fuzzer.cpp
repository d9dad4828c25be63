// --input and --target specs as users type them ("float32[32,3,224,224]",
// "int64[8,512]:0..50257"). parseInputSpec either returns a spec the recorder
// can materialize (a known dtype, positive dimensions, a non-empty range only
// on an integer dtype) that reads back the same from its own text, or throws
// one line of acprof::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "acprof/input_spec.h"
#include "fuzz_checks.h"

namespace {

using acprof::fuzz::require;

std::string specText(const acprof::InputSpec& spec) {
  std::string text = spec.dtype + "[";
  for (size_t i = 0; i < spec.shape.size(); ++i) text += (i ? "," : "") + std::to_string(spec.shape[i]);
  text += "]";
  if (spec.range) text += ":" + std::to_string(spec.range->first) + ".." + std::to_string(spec.range->second);
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  acprof::InputSpec spec;
  try {
    spec = acprof::parseInputSpec(text);
  } catch (const acprof::Error& error) {
    acprof::fuzz::checkOneLineError(error);
    return 0;
  }
  for (const int64_t dimension : spec.shape) require(dimension > 0, "a dimension that is not positive was accepted");
  const bool integer = spec.dtype == "int64" || spec.dtype == "int32";
  if (spec.range) {
    require(integer, "a value range on a non-integer dtype was accepted");
    require(spec.range->first < spec.range->second, "an empty value range was accepted");
  }
  try {
    const acprof::InputSpec again = acprof::parseInputSpec(specText(spec));
    require(again.dtype == spec.dtype && again.shape == spec.shape && again.range == spec.range,
            "a spec reads back differently from its own text");
  } catch (const acprof::Error& error) {
    require(false, "a spec's own text is rejected");
  }
  return 0;
}
