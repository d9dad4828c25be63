// Built when CUPTI was found at configure time (it compiles and links on a
// CPU-only machine; it only runs where there is a GPU).
#include <cupti.h>

#include <cstdlib>
#include <iterator>
#include <mutex>
#include <vector>

#include "gpu_kernel_timer.h"
#include "kernel_time_table.h"

namespace acprof {
namespace {

#if CUPTI_API_VERSION >= 130000
using KernelRecord = CUpti_ActivityKernel10;
#else
using KernelRecord = CUpti_ActivityKernel9;
#endif

constexpr size_t kBufferBytes = 8 << 20;
constexpr CUpti_ExternalCorrelationKind kCorrelationKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// CUPTI delivers records to plain-function callbacks on its own thread, so the
// records land in process-wide state guarded by one mutex.
struct CollectedRecords {
  std::mutex mutex;
  KernelTimeTable table;
};
CollectedRecords& collected() {
  static CollectedRecords records;
  return records;
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  CUpti_Activity* record = nullptr;
  CollectedRecords& out = collected();
  std::lock_guard<std::mutex> lock(out.mutex);
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* kernel = reinterpret_cast<const KernelRecord*>(record);
      out.table.addKernel(kernel->correlationId, kernel->start, kernel->end);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto* link = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (link->externalKind == kCorrelationKind) out.table.linkToStep(link->correlationId, link->externalId);
    }
  }
  std::free(buffer);
}

class CuptiKernelTimer : public GpuKernelTimer {
 public:
  // An external correlation record is made only beside a runtime or driver API
  // record (as PyTorch's Kineto enables them together): without those kinds,
  // kernels arrive with nothing linking them to a step.
  static constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
                                                  CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

  static std::unique_ptr<GpuKernelTimer> start() {
    if (cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted) != CUPTI_SUCCESS) return nullptr;
    for (size_t enabled = 0; enabled < std::size(kKinds); ++enabled) {
      if (cuptiActivityEnable(kKinds[enabled]) != CUPTI_SUCCESS) {
        for (size_t i = 0; i < enabled; ++i) cuptiActivityDisable(kKinds[i]);
        return nullptr;
      }
    }
    return std::unique_ptr<GpuKernelTimer>(new CuptiKernelTimer());
  }

  ~CuptiKernelTimer() override {
    cuptiActivityFlushAll(1);
    for (const CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  }

  void enterStep(uint64_t step_key) override { cuptiActivityPushExternalCorrelationId(kCorrelationKind, step_key); }

  void leaveStep() override {
    uint64_t ignored = 0;
    cuptiActivityPopExternalCorrelationId(kCorrelationKind, &ignored);
  }

  std::unordered_map<uint64_t, double> collectKernelTimeUs() override {
    cuptiActivityFlushAll(1);  // forced: delivers every completed buffer now
    CollectedRecords& in = collected();
    std::lock_guard<std::mutex> lock(in.mutex);
    return in.table.takeKernelTimeUsByStep();
  }
};

}  // namespace

std::unique_ptr<GpuKernelTimer> GpuKernelTimer::create() { return CuptiKernelTimer::start(); }

}  // namespace acprof
