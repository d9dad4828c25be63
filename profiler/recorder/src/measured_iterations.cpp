#include "measured_iterations.h"

#include <algorithm>

#include "acprof/statistics.h"

namespace acprof {

bool moreIterationsWanted(const std::vector<double>& iteration_us, int most_iterations) {
  const int taken = static_cast<int>(iteration_us.size());
  if (taken >= most_iterations) return false;
  if (taken < kFewestMeasuredIterations) return true;
  const auto [fastest, slowest] = std::minmax_element(iteration_us.begin(), iteration_us.end());
  return *slowest - *fastest > kAgreeingIterationSpread * median(iteration_us);
}

}  // namespace acprof
