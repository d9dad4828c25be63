// GPU time per step on CUDA, from CUPTI activity records.
//
// Kernels run asynchronously, so a step's wall time on the CPU is only its
// launch time. CUPTI reports every kernel's start and end on the GPU; an
// external correlation id pushed when a step starts (on the thread that
// launches its kernels: the main thread for forward, the autograd thread for
// backward) ties each kernel to its step, the way PyTorch's own profiler ties
// kernels to ops.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

namespace acprof {

class GpuKernelTimer {
 public:
  virtual ~GpuKernelTimer() = default;

  // A timer, or null when this build has no CUPTI or CUPTI cannot start.
  static std::unique_ptr<GpuKernelTimer> create();

  // Kernels launched on the calling thread from now on belong to `step_key`
  // until leaveStep(); calls nest per thread.
  virtual void enterStep(uint64_t step_key) = 0;
  virtual void leaveStep() = 0;

  // Waits for the GPU, then returns the summed kernel time per step key of
  // everything launched since the last call.
  virtual std::unordered_map<uint64_t, double> collectKernelTimeUs() = 0;
};

}  // namespace acprof
