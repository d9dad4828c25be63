#include "acprof/input_spec.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace acprof {
namespace {

const std::vector<std::string> kDtypes = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "bool"};

bool isIntegerDtype(const std::string& dtype) { return dtype == "int64" || dtype == "int32"; }

[[noreturn]] void fail(const std::string& text, const std::string& problem) {
  throw InputSpecError(fmt::format("input spec '{}': {}; write it like float32[32,3,224,224] or "
                                   "int64[8,512]:0..50257",
                                   printable(text), printable(problem)));
}

int64_t parseInteger(const std::string& text, const std::string& token, const char* what) {
  if (token.empty()) fail(text, fmt::format("{} is empty", what));
  size_t start = token[0] == '-' ? 1 : 0;
  if (start == token.size() || !std::all_of(token.begin() + start, token.end(), ::isdigit) || token.size() > 18)
    fail(text, fmt::format("{} '{}' is not an integer", what, token));
  return std::stoll(token);
}

}  // namespace

InputSpec parseInputSpec(const std::string& raw) {
  std::string text;
  for (char c : raw)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  InputSpec spec;
  spec.text = text;
  const auto open = text.find('[');
  const auto close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open)
    fail(raw, "expected a dtype followed by a shape in brackets");
  spec.dtype = text.substr(0, open);
  if (spec.dtype == "float") spec.dtype = "float32";
  if (spec.dtype == "long") spec.dtype = "int64";
  if (std::find(kDtypes.begin(), kDtypes.end(), spec.dtype) == kDtypes.end())
    fail(raw, fmt::format("unknown dtype '{}' (known: float32, float64, float16, bfloat16, int64, int32, bool)",
                          spec.dtype));
  const std::string dims = text.substr(open + 1, close - open - 1);
  size_t pos = 0;
  while (pos <= dims.size() && !dims.empty()) {
    const auto comma = dims.find(',', pos);
    const std::string token = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const int64_t size = parseInteger(raw, token, "dimension");
    if (size <= 0) fail(raw, fmt::format("dimension {} must be positive", size));
    spec.shape.push_back(size);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  const std::string rest = text.substr(close + 1);
  if (!rest.empty()) {
    if (rest[0] != ':') fail(raw, fmt::format("unexpected '{}' after the shape", rest));
    if (!isIntegerDtype(spec.dtype)) fail(raw, "a value range (:low..high) is only allowed for int64 and int32");
    const auto dots = rest.find("..");
    if (dots == std::string::npos) fail(raw, "a value range is written :low..high");
    const int64_t low = parseInteger(raw, rest.substr(1, dots - 1), "range start");
    const int64_t high = parseInteger(raw, rest.substr(dots + 2), "range end");
    if (high <= low) fail(raw, fmt::format("range {}..{} is empty (high is exclusive)", low, high));
    spec.range = std::make_pair(low, high);
  }
  return spec;
}

}  // namespace acprof
