#include "measured_iterations.h"

#include <algorithm>

#include "acprof/statistics.h"

namespace acprof {

bool moreIterationsWanted(const std::vector<double>& iteration_us, int most_iterations) {
  const int taken = static_cast<int>(iteration_us.size());
  if (taken >= most_iterations) return false;
  if (taken < kFewestMeasuredIterations) return true;
  std::vector<double> sorted = iteration_us;
  std::sort(sorted.begin(), sorted.end());
  const size_t majority = sorted.size() / 2 + 1;
  const double allowed = kAgreeingIterationSpread * median(iteration_us);
  // A majority that agrees is a run of neighbours in sorted order.
  for (size_t first = 0; first + majority <= sorted.size(); ++first)
    if (sorted[first + majority - 1] - sorted[first] <= allowed) return false;
  return true;
}

}  // namespace acprof
