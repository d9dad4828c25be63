#include "acprof/budget.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "acprof/profile_format.h"

namespace acprof {
namespace {

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

[[noreturn]] void fail(const std::string& text, const std::string& why) {
  throw BudgetError(fmt::format("budget '{}' {}; write it like 6GB, 512MiB, 6442450944 or 60%", printable(text),
                                printable(why)));
}

// Bytes per unit; 0 for an unknown unit.
double unitBytes(const std::string& unit) {
  static const char* const kPrefixes = "kmgtp";
  if (unit.empty() || unit == "b") return 1;
  const size_t power = std::string(kPrefixes).find(unit[0]);
  if (power == std::string::npos) return 0;
  const std::string rest = unit.substr(1);
  if (rest.empty() || rest == "b") return std::pow(1000.0, static_cast<double>(power + 1));
  if (rest == "ib") return std::pow(1024.0, static_cast<double>(power + 1));
  return 0;
}

}  // namespace

int64_t parseBudget(const std::string& text, int64_t profiled_peak_bytes) {
  const std::string trimmed = trim(text);
  if (trimmed.empty()) fail(text, "is empty");
  const char* begin = trimmed.c_str();
  char* number_end = nullptr;
  const double number = std::strtod(begin, &number_end);
  if (number_end == begin || !std::isfinite(number)) fail(text, "does not start with a number");
  const std::string unit = lowercase(trim(std::string(number_end)));
  if (number <= 0) fail(text, "is not positive");
  double bytes = 0;
  if (unit == "%") {
    bytes = std::floor(number / 100.0 * static_cast<double>(profiled_peak_bytes));
  } else {
    const double per_unit = unitBytes(unit);
    if (per_unit == 0) fail(text, fmt::format("has an unknown unit '{}'", unit));
    bytes = std::floor(number * per_unit);
  }
  // "0.5" is a fraction written without its percent sign far more often than half a byte.
  if (bytes < 1 && unit.empty() && number < 1)
    throw BudgetError(fmt::format("budget '{}' is less than one byte; for {:g} % of the profiled peak write "
                                  "--budget {:g}%",
                                  printable(text), number * 100, number * 100));
  if (bytes < 1) fail(text, "is less than one byte");
  if (bytes >= 9.2e18) fail(text, "is too large");
  return static_cast<int64_t>(bytes);
}

void checkBareBudget(const std::string& text, int64_t bytes_before_step) {
  const std::string number = trim(text);
  char* number_end = nullptr;
  std::strtod(number.c_str(), &number_end);
  if (number_end == number.c_str() || !trim(std::string(number_end)).empty()) return;  // no number, or a unit
  // A bare number is bytes whatever the profiled peak: parse it as parseBudget does.
  const int64_t bytes = parseBudget(text, 0);
  if (bytes >= bytes_before_step) return;
  throw BudgetError(fmt::format("budget '{}' has no unit, so it is {} B, below the {} the step holds before it "
                                "begins (weights, inputs), which every plan keeps: did you mean {}%? (or {}GB, {}MiB)",
                                printable(number), bytes, formatBytes(bytes_before_step), printable(number),
                                printable(number), printable(number)));
}

bool isBudgetUnit(const std::string& word) {
  const std::string unit = lowercase(trim(word));
  return unit == "%" || (!unit.empty() && unitBytes(unit) != 0);
}

}  // namespace acprof
