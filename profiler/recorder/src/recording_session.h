// What the recorder sees while a training iteration runs: every allocation and
// free the allocator reports, the step (forward node, loss, autograd node,
// optimizer) that was running when it happened, and which storage each forward
// value lives on.
//
// LibTorch's hooks are process- or thread-global (a debug-info slot and
// RecordFunction callbacks that take plain function pointers), so one session
// at a time is active; RecordingSession is the single RAII guard that installs
// and removes them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <ATen/record_function.h>

#include "acprof/event_stream.h"
#include "acprof/profile_format.h"
#include "gpu_kernel_timer.h"
#include "gradient_hooks.h"
#include "saved_tensor_hooks.h"

namespace acprof {

class RecordingSession {
 public:
  // `report_gradients`: reportGradientsOf adds its hooks (else it does nothing).
  RecordingSession(c10::DeviceType device_type, bool report_gradients = true);
  ~RecordingSession();
  RecordingSession(const RecordingSession&) = delete;
  RecordingSession& operator=(const RecordingSession&) = delete;

  // Starts a new iteration record. Allocations are always tracked by the
  // allocator while the session lives (so frees of earlier allocations are
  // reported with their sizes); events are kept only between begin and end.
  void beginIteration();
  IterationRecord endIteration();

  // A step that the calling (main) thread runs after the previous one.
  void beginStep(Phase phase, int node, const std::string& op);

  // Called by the hooks.
  void onAllocation(void* ptr, int64_t delta_bytes, int64_t allocator_total, int64_t allocator_reserved,
                    c10::Device device);
  void onForwardNodeMarker(int node);
  void onObservedValue(int node, int output_index, int list_index, const at::Tensor& value);
  void onBackwardFunctionStart(const char* name, int64_t sequence_nr);
  void onBackwardFunctionEnd(int step);
  void onSavedTensor(uint64_t save_id, const void* storage_ptr);  // storage_ptr null: released
  void onGradient(const void* storage_ptr, const GradientTarget& target);
  // Before this iteration's backward: report which value each gradient is
  // for (gradient_hooks.h); the profile's tensors then say gradient_of.
  void reportGradientsOf(const at::Tensor& loss);
  int currentStep() const;

  // The session that the hooks report to, or null.
  static RecordingSession* active();

 private:
  void addStep(Phase phase, int node, const std::string& op);
  void synchronizeForWallClock();
  uint64_t stepKey(int step) const { return (iteration_count_ << 24) | static_cast<uint64_t>(step); }

  c10::DeviceType device_type_;
  bool report_gradients_;
  mutable std::mutex mutex_;
  bool recording_ = false;
  IterationRecord current_;
  uint64_t iteration_count_ = 0;
  std::unique_ptr<GpuKernelTimer> gpu_timer_;  // CUDA with CUPTI only
  bool main_thread_in_step_ = false;
  std::unique_ptr<c10::DebugInfoGuard> debug_info_guard_;
  at::CallbackHandle record_function_handle_ = 0;
  std::unique_ptr<SavedTensorHooksScope> saved_tensor_hooks_;
  // Leaves' gradient accumulators seen by this iteration's forward (gradientTargetOf).
  std::vector<compat::AutogradNodePtr> kept_accumulators_;
};

int64_t nowNs();

}  // namespace acprof
