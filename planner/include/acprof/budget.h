// Memory budgets as users type them (--budget). The convention:
//   6442450944      plain bytes
//   512MB, 6GB, 1.5TB, 64KB, 64K, 2M, 1G   powers of 1000 (K = KB = 10^3, M = MB = 10^6, ...)
//   512MiB, 6GiB, 64KiB                     powers of 1024
//   60%                                     of the profiled peak (the simulated no-recompute peak)
// Units are case-insensitive, a space may separate number and unit, a trailing
// "B" alone means bytes, fractions are allowed and rounded down to whole bytes.
// Zero, negative and unparsable budgets are errors, of the usage kind (exit 2):
// --budget is a command-line argument, and its fix is always to retype it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "acprof/error.h"

namespace acprof {

class BudgetError : public Error {
 public:
  explicit BudgetError(const std::string& message) : Error(ErrorKind::Usage, message) {}
};

// Bytes of a budget; `profiled_peak_bytes` resolves percentages. Throws BudgetError.
int64_t parseBudget(const std::string& text, int64_t profiled_peak_bytes);

}  // namespace acprof
