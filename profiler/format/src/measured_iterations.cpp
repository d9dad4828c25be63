#include "acprof/measured_iterations.h"

#include <algorithm>
#include <numeric>

#include "acprof/command_budget.h"
#include "acprof/statistics.h"

namespace acprof {
namespace {

bool majorityAgrees(const std::vector<double>& iteration_us) {
  std::vector<double> sorted = iteration_us;
  std::sort(sorted.begin(), sorted.end());
  const size_t majority = sorted.size() / 2 + 1;
  const double allowed = kAgreeingIterationSpread * median(iteration_us);
  // A majority that agrees is a run of neighbours in sorted order.
  for (size_t first = 0; first + majority <= sorted.size(); ++first)
    if (sorted[first + majority - 1] - sorted[first] <= allowed) return true;
  return false;
}

}  // namespace

bool moreIterationsWanted(const std::vector<double>& iteration_us, int most_iterations,
                          const std::optional<ProfileCost>& cost) {
  const int taken = static_cast<int>(iteration_us.size());
  if (taken >= most_iterations) return false;
  if (taken < kFewestMeasuredIterations) return true;
  if (majorityAgrees(iteration_us)) return false;
  if (!cost) return true;
  const double taken_seconds = std::accumulate(iteration_us.begin(), iteration_us.end(), 0.0) / 1e6;
  if (taken_seconds < kLeastRoundSeconds) return true;
  const double next_seconds = median(iteration_us) / 1e6;
  return cost->spent_seconds + next_seconds + cost->after_seconds <= kProfileStepBudget * cost->step_seconds;
}

std::vector<double> stepTimeMedians(const std::vector<std::vector<double>>& iterations_step_us) {
  if (iterations_step_us.empty()) return {};
  const size_t step_count = iterations_step_us.front().size();
  std::vector<std::vector<double>> samples(step_count);
  for (const std::vector<double>& iteration : iterations_step_us) {
    if (iteration.size() != step_count) continue;
    for (size_t s = 0; s < step_count; ++s) samples[s].push_back(iteration[s]);
  }
  std::vector<double> medians(step_count);
  for (size_t s = 0; s < step_count; ++s) medians[s] = median(samples[s]);
  return medians;
}

}  // namespace acprof
