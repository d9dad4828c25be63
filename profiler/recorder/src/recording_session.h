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

#include "acprof/profile_format.h"
#include "gpu_kernel_timer.h"
#include "saved_tensor_hooks.h"

namespace acprof {

struct AllocationEvent {
  void* ptr = nullptr;
  int64_t delta_bytes = 0;       // +size on allocation, -size on free
  int64_t allocator_total = 0;   // the allocator's own live-bytes counter after it
  int64_t allocator_reserved = 0;  // its reserved total after it (the CPU allocator reports 0)
  int step = -1;                 // index into the iteration's steps
};

struct StepTiming {
  Phase phase = Phase::Forward;
  int node = -1;                 // forward node id for forward steps
  std::string op;
  int64_t autograd_sequence_nr = -1;  // for backward steps: the autograd node's
  int64_t sequence_at_start = -1;     // for forward steps: next sequence number at the marker
  int first_event = 0;
  int64_t start_ns = 0;
  int64_t end_ns = -1;           // set by RecordFunction's end for backward steps
  double gpu_time_us = -1;       // summed kernel time on CUDA with CUPTI, else -1
};

// A forward value seen by the observer op right after its node ran.
struct ObservedValue {
  int node = -1;
  int output_index = 0;
  int list_index = -1;           // position inside a Tensor[] output, -1 for a Tensor
  const void* storage_ptr = nullptr;
  std::vector<int64_t> shape;
  std::string dtype;
  bool requires_grad = false;
  int64_t bytes = 0;             // numel * element size
  int event_index = 0;           // number of events recorded before it
};

// Autograd saved a tensor for backward (storage_ptr set), or let one go (null).
// A save and its release share save_id.
struct SavedTensorEvent {
  uint64_t save_id = 0;
  const void* storage_ptr = nullptr;
  int step = -1;                 // the step running when it happened
  int event_index = 0;           // number of allocation events recorded before it
};

// How step times were taken: "cpu_wall" (CPU), "cupti_kernels" (CUDA with
// CUPTI: summed GPU kernel time), "cuda_sync_wall" (CUDA without CUPTI: wall
// time with the device synchronized at every step boundary).
struct IterationRecord {
  std::string time_source = "cpu_wall";
  std::vector<AllocationEvent> events;
  std::vector<StepTiming> steps;
  std::vector<ObservedValue> observed;
  std::vector<SavedTensorEvent> saved_tensors;
  int64_t end_ns = 0;
};

class RecordingSession {
 public:
  explicit RecordingSession(c10::DeviceType device_type);
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
  int currentStep() const;

  // The session that the hooks report to, or null.
  static RecordingSession* active();

 private:
  void addStep(Phase phase, int node, const std::string& op);
  uint64_t stepKey(int step) const { return (iteration_count_ << 24) | static_cast<uint64_t>(step); }

  c10::DeviceType device_type_;
  mutable std::mutex mutex_;
  bool recording_ = false;
  IterationRecord current_;
  uint64_t iteration_count_ = 0;
  std::unique_ptr<GpuKernelTimer> gpu_timer_;  // CUDA with CUPTI only
  bool main_thread_in_step_ = false;
  std::unique_ptr<c10::DebugInfoGuard> debug_info_guard_;
  at::CallbackHandle record_function_handle_ = 0;
  std::unique_ptr<SavedTensorHooksScope> saved_tensor_hooks_;
};

int64_t nowNs();

}  // namespace acprof
