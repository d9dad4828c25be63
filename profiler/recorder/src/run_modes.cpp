#include "acprof/run_modes.h"

#include <malloc.h>

#include <ATen/Parallel.h>

#include <torch/csrc/jit/passes/autocast.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <fmt/format.h>

#include "acprof/recorder.h"

namespace acprof {

void checkAutocastDtype(const std::string& dtype) {
  if (!dtype.empty() && dtype != "bfloat16" && dtype != "float16")
    throw RecordError(fmt::format("unknown autocast dtype '{}'; use bfloat16, float16 or off", dtype));
}

AutocastScope::AutocastScope(const std::string& dtype, c10::DeviceType device_type)
    : state_(AutocastState::current().enabledFor(device_type, dtype == "float16" ? at::kHalf : at::kBFloat16)),
      previous_jit_pass_(torch::jit::setAutocastMode(false)) {}

AutocastScope::~AutocastScope() { torch::jit::setAutocastMode(previous_jit_pass_); }

ExecutorModeGuard::ExecutorModeGuard(bool optimize) : previous_(torch::jit::getGraphExecutorOptimize()) {
  torch::jit::setGraphExecutorOptimize(optimize);
}
ExecutorModeGuard::~ExecutorModeGuard() { torch::jit::setGraphExecutorOptimize(previous_); }

IntraOpThreadsGuard::IntraOpThreadsGuard(int threads) : previous_(at::get_num_threads()) {
  if (threads < 0) throw RecordError(fmt::format("intra-op thread count {} is negative; use 1 or more", threads));
  if (threads > 0 && threads != previous_) at::set_num_threads(threads);
}
IntraOpThreadsGuard::~IntraOpThreadsGuard() {
  if (at::get_num_threads() != previous_) at::set_num_threads(previous_);
}

int intraOpThreads() { return at::get_num_threads(); }

void keepFreedHostMemory() {
#if defined(__GLIBC__)
  // mallopt's documented values: no mmap'd chunks at all, and -1 turns trimming off.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

}  // namespace acprof
