#include "kernel_time_table.h"

#include <algorithm>

namespace acprof {

void KernelTimeTable::addKernel(uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns) {
  // One launch may run several kernels (a cuBLAS call): they share the id.
  kernel_us_by_correlation_[correlation_id] += static_cast<double>(end_ns - start_ns) / 1000.0;
}

void KernelTimeTable::linkToStep(uint32_t correlation_id, uint64_t step_key) {
  step_by_correlation_[correlation_id] = step_key;
}

std::unordered_map<uint64_t, double> KernelTimeTable::takeKernelTimeUsByStep() {
  std::unordered_map<uint64_t, double> by_step;
  for (const auto& [correlation, us] : kernel_us_by_correlation_) {
    const auto link = step_by_correlation_.find(correlation);
    if (link != step_by_correlation_.end()) by_step[link->second] += us;
  }
  kernel_us_by_correlation_.clear();
  step_by_correlation_.clear();
  return by_step;
}

bool noKernelTimeLinked(const std::vector<double>& step_time_us) {
  return !step_time_us.empty() &&
         std::all_of(step_time_us.begin(), step_time_us.end(), [](double time_us) { return time_us == 0; });
}

}  // namespace acprof
