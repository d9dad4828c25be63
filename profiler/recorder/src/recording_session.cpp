#include "recording_session.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <ATen/SequenceNumber.h>
#include <c10/core/Allocator.h>
#include <torch/cuda.h>

#include "acprof/synthetic_inputs.h"
#include "acprof/torch_compat.h"

namespace acprof {
namespace {

std::atomic<RecordingSession*> g_active_session{nullptr};

// Installed as the profiler-state debug info: the CPU allocator and the CUDA
// caching allocator report every allocation and free to it, and the autograd
// engine carries it to its worker threads with the rest of the thread-local state.
class AllocationReporter : public c10::MemoryReportingInfoBase {
 public:
  bool memoryProfilingEnabled() const override { return true; }
  void reportMemoryUsage(void* ptr, int64_t alloc_size, compat::AllocatorTotal total_allocated,
                         compat::AllocatorTotal total_reserved, c10::Device device) override {
    if (RecordingSession* session = RecordingSession::active())
      session->onAllocation(ptr, alloc_size, static_cast<int64_t>(total_allocated),
                            static_cast<int64_t>(total_reserved), device);
  }
};

// Carries the step index from a backward function's start to its end.
struct BackwardStepContext : at::ObserverContext {
  explicit BackwardStepContext(int step_index) : step(step_index) {}
  int step;
};

std::unique_ptr<at::ObserverContext> backwardFunctionStarted(const at::RecordFunction& fn) {
  RecordingSession* session = RecordingSession::active();
  if (!session) return nullptr;
  session->onBackwardFunctionStart(fn.name(), fn.seqNr());
  return std::make_unique<BackwardStepContext>(session->currentStep());
}

void backwardFunctionEnded(const at::RecordFunction& /*fn*/, at::ObserverContext* context) {
  RecordingSession* session = RecordingSession::active();
  if (session && context) session->onBackwardFunctionEnd(static_cast<BackwardStepContext*>(context)->step);
}

// CUDA step times come from wall clocks with the device synchronized at each
// step, unless ACPROF_CUPTI=1 asks for CUPTI's kernel times. Off by default:
// on an H100 (torch 2.11, 2026-11-28) CUPTI delivered no kernel time for any
// step, every op timed 0, and the planner had no costs to weigh. Its external
// correlation records come only with API records, which the timer now asks
// for too; not yet seen working on a GPU.
bool cuptiWanted() {
  const char* setting = std::getenv("ACPROF_CUPTI");
  return setting != nullptr && std::string(setting) == "1";
}

}  // namespace

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

RecordingSession::RecordingSession(c10::DeviceType device_type, bool report_gradients)
    : device_type_(device_type), report_gradients_(report_gradients) {
  RecordingSession* expected = nullptr;
  if (!g_active_session.compare_exchange_strong(expected, this))
    throw std::logic_error("only one acprof recording session can be active at a time");
  debug_info_guard_ = std::make_unique<c10::DebugInfoGuard>(c10::DebugInfoKind::PROFILER_STATE,
                                                            std::make_shared<AllocationReporter>());
  if (device_type_ == c10::DeviceType::CUDA && cuptiWanted()) gpu_timer_ = GpuKernelTimer::create();
  record_function_handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&backwardFunctionStarted, &backwardFunctionEnded)
          .needsInputs(false)
          .scopes({at::RecordScope::BACKWARD_FUNCTION}));
  // Through active(): a graph kept past this session may release its saves later.
  SavedTensorReport report;
  report.saved = [](uint64_t id, const void* storage) {
    if (RecordingSession* session = active()) session->onSavedTensor(id, storage);
  };
  report.released = [](uint64_t id) {
    if (RecordingSession* session = active()) session->onSavedTensor(id, nullptr);
  };
  saved_tensor_hooks_ = std::make_unique<SavedTensorHooksScope>(std::move(report));
}

RecordingSession::~RecordingSession() {
  saved_tensor_hooks_.reset();
  at::removeCallback(record_function_handle_);
  debug_info_guard_.reset();
  g_active_session.store(nullptr);
}

RecordingSession* RecordingSession::active() { return g_active_session.load(); }

void RecordingSession::beginIteration() {
  if (device_type_ == c10::DeviceType::CUDA) torch::cuda::synchronize();
  std::lock_guard<std::mutex> lock(mutex_);
  current_ = IterationRecord{};
  ++iteration_count_;
  if (device_type_ == c10::DeviceType::CUDA) current_.time_source = gpu_timer_ ? "cupti_kernels" : "cuda_sync_wall";
  recording_ = true;
}

IterationRecord RecordingSession::endIteration() {
  if (device_type_ == c10::DeviceType::CUDA) torch::cuda::synchronize();
  if (gpu_timer_ && main_thread_in_step_) gpu_timer_->leaveStep();
  main_thread_in_step_ = false;
  std::unordered_map<uint64_t, double> kernel_us;
  if (gpu_timer_) kernel_us = gpu_timer_->collectKernelTimeUs();
  std::vector<compat::AutogradNodePtr> accumulators;  // let go after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  accumulators.swap(kept_accumulators_);
  recording_ = false;
  current_.end_ns = nowNs();
  if (gpu_timer_)
    for (size_t i = 0; i < current_.steps.size(); ++i) {
      auto it = kernel_us.find(stepKey(static_cast<int>(i)));
      current_.steps[i].gpu_time_us = it == kernel_us.end() ? 0.0 : it->second;
    }
  return std::move(current_);
}

// Steps timed by the wall clock on CUDA (no CUPTI): the device's work so far
// ends before a step's clock starts, and the step's own before it stops.
void RecordingSession::synchronizeForWallClock() {
  if (device_type_ == c10::DeviceType::CUDA && !gpu_timer_) torch::cuda::synchronize();
}

void RecordingSession::beginStep(Phase phase, int node, const std::string& op) {
  synchronizeForWallClock();
  addStep(phase, node, op);
  if (!gpu_timer_) return;
  if (main_thread_in_step_) gpu_timer_->leaveStep();
  gpu_timer_->enterStep(stepKey(currentStep()));
  main_thread_in_step_ = true;
}

void RecordingSession::addStep(Phase phase, int node, const std::string& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!recording_) return;
  StepTiming step;
  step.phase = phase;
  step.node = node;
  step.op = op;
  step.first_event = static_cast<int>(current_.events.size());
  step.sequence_at_start = at::sequence_number::peek();
  step.start_ns = nowNs();
  current_.steps.push_back(std::move(step));
}

void RecordingSession::onAllocation(void* ptr, int64_t delta_bytes, int64_t allocator_total,
                                    int64_t allocator_reserved, c10::Device device) {
  if (delta_bytes == 0 || device.type() != device_type_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!recording_) return;
  const int step = static_cast<int>(current_.steps.size()) - 1;
  current_.events.push_back(AllocationEvent{ptr, delta_bytes, allocator_total, allocator_reserved, step});
}

void RecordingSession::onForwardNodeMarker(int node) { beginStep(Phase::Forward, node, ""); }

void RecordingSession::onObservedValue(int node, int output_index, int list_index, const at::Tensor& value) {
  // Empty values too: an empty slice is on its base's storage, and a write
  // through it (a fill of a window that selects nothing) is one of the writes
  // that say whether the base came to need grad (event_stream.cpp).
  if (!value.defined() || !value.has_storage()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!recording_) return;
  ObservedValue observed;
  observed.node = node;
  observed.output_index = output_index;
  observed.list_index = list_index;
  observed.storage_ptr = value.storage().data();
  observed.shape = value.sizes().vec();
  observed.dtype = dtypeName(value.scalar_type());
  observed.requires_grad = value.requires_grad();
  observed.bytes = static_cast<int64_t>(value.numel()) * static_cast<int64_t>(value.element_size());
  observed.event_index = static_cast<int>(current_.events.size());
  observed.gradient_target = gradientTargetOf(value, kept_accumulators_);
  current_.observed.push_back(std::move(observed));
}

void RecordingSession::onBackwardFunctionStart(const char* name, int64_t sequence_nr) {
  synchronizeForWallClock();
  addStep(Phase::Backward, -1, name ? name : "");
  if (gpu_timer_) gpu_timer_->enterStep(stepKey(currentStep()));
  std::lock_guard<std::mutex> lock(mutex_);
  if (recording_ && !current_.steps.empty()) current_.steps.back().autograd_sequence_nr = sequence_nr;
}

void RecordingSession::onBackwardFunctionEnd(int step) {
  if (gpu_timer_) gpu_timer_->leaveStep();
  synchronizeForWallClock();
  std::lock_guard<std::mutex> lock(mutex_);
  if (recording_ && step >= 0 && step < static_cast<int>(current_.steps.size())) current_.steps[step].end_ns = nowNs();
}

void RecordingSession::onSavedTensor(uint64_t save_id, const void* storage_ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!recording_) return;
  current_.saved_tensors.push_back(SavedTensorEvent{save_id, storage_ptr, static_cast<int>(current_.steps.size()) - 1,
                                                    static_cast<int>(current_.events.size())});
}

void RecordingSession::onGradient(const void* storage_ptr, const GradientTarget& target) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!recording_) return;
  current_.gradients.push_back(GradientReport{storage_ptr, target, static_cast<int>(current_.events.size())});
}

void RecordingSession::reportGradientsOf(const at::Tensor& loss) {
  if (!report_gradients_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!recording_) return;
    current_.gradients_recorded = true;
  }
  reportGradientsOfBackward(loss);
}

int RecordingSession::currentStep() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(current_.steps.size()) - 1;
}

}  // namespace acprof
