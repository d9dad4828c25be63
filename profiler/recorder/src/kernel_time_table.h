// GPU kernel time per step, from what CUPTI's activity records say: a kernel
// record carries a correlation id and its start and end on the GPU; an external
// correlation record ties a correlation id to the step key pushed on the thread
// that launched it (gpu_kernel_timer.h). CUPTI delivers buffers in any order, so
// either half may come first; both are kept until collected. Free of CUPTI and
// of LibTorch, so that the CPU tests check the bookkeeping the GPU runs.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace acprof {

class KernelTimeTable {
 public:
  void addKernel(uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns);
  void linkToStep(uint32_t correlation_id, uint64_t step_key);

  // Summed kernel time per step of everything added since the last call; a
  // kernel whose correlation never reached a step (launched outside any step)
  // counts nowhere. Empties the table.
  std::unordered_map<uint64_t, double> takeKernelTimeUsByStep();

 private:
  std::unordered_map<uint32_t, double> kernel_us_by_correlation_;
  std::unordered_map<uint32_t, uint64_t> step_by_correlation_;
};

// Whether an iteration's step times from kernels say nothing: steps, and every
// one at 0. On an H100 CUPTI once linked no kernel to any step; a profile of
// such times is refused rather than written (its plans would weigh nothing).
bool noKernelTimeLinked(const std::vector<double>& step_time_us);

}  // namespace acprof
