// Memory budgets as users type them (--budget). The convention:
//   6442450944      plain bytes
//   512MB, 6GB, 1.5TB, 64KB, 64K, 2M, 1G   powers of 1000 (K = KB = 10^3, M = MB = 10^6, ...)
//   512MiB, 6GiB, 64KiB                     powers of 1024
//   60%                                     of the profiled peak (the simulated no-recompute peak)
// Units are case-insensitive, a space may separate number and unit, a trailing
// "B" alone means bytes, fractions are allowed and rounded down to whole bytes.
// A bare number is bytes, unless it is below what the step starts with
// (checkBareBudget).
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

// Note: [a bare budget below the step's start]
// A percentage or unit left off ("--budget 60") reads as a few bytes, which no
// plan fits: the solver ran to its floor and the command printed all of it,
// when the user meant 60%. Every plan keeps what the profile holds before its
// step begins (weights, inputs, optimizer state: the storages alive before the
// first event; recompute changes only what the step makes), so a bare number
// below those bytes is a budget no one can mean, whatever the model: it is
// refused as a usage error that asks "did you mean 60%?". A number with a unit
// ("1B", as scripts probing for the floor write it) is taken as typed, and a
// bare number at or above those bytes is bytes, as the convention says.
// Throws BudgetError where `text`, a budget parseBudget reads, is such a slip.
void checkBareBudget(const std::string& text, int64_t bytes_before_step);

// Whether `word` alone is a unit of the convention ("%", "GB", "MiB", "b"):
// what a budget typed as two words (`--budget 60 %`) leaves behind.
bool isBudgetUnit(const std::string& word);

}  // namespace acprof
