// The one order on plans that every solver uses to choose between two.
#pragma once

#include <cstdint>

#include "acprof/solver.h"

namespace acprof {

// Whether a plan (peak, extra time) is better for the budget than another:
// fitting beats not fitting; between plans that fit, less extra time wins,
// then the lower peak; between plans that do not fit, the lower peak wins,
// then less time.
inline bool betterForBudget(int64_t peak_bytes, double time_us, int64_t other_peak_bytes, double other_time_us,
                            int64_t budget_bytes) {
  const bool fits = peak_bytes <= budget_bytes, other_fits = other_peak_bytes <= budget_bytes;
  if (fits != other_fits) return fits;
  if (fits) return time_us < other_time_us || (time_us == other_time_us && peak_bytes < other_peak_bytes);
  return peak_bytes < other_peak_bytes || (peak_bytes == other_peak_bytes && time_us < other_time_us);
}

// Whether `a` is the better plan for the budget, in the order above.
inline bool betterForBudget(const SolverResult& a, const SolverResult& b, int64_t budget_bytes) {
  return betterForBudget(a.simulation.peak_bytes, a.simulation.extra_time_us, b.simulation.peak_bytes,
                         b.simulation.extra_time_us, budget_bytes);
}

}  // namespace acprof
