// The one place where LibTorch 1.13 (Debian, CI) and LibTorch 2.x (CUDA on the
// GPU machine) differ for acprof. Everything else includes this instead of
// testing versions itself.
#pragma once

#include <torch/version.h>

#include <cstdint>

namespace acprof::compat {

#if TORCH_VERSION_MAJOR >= 2
inline constexpr bool kTorch2 = true;
// c10::MemoryReportingInfoBase::reportMemoryUsage's total arguments.
using AllocatorTotal = size_t;
#else
inline constexpr bool kTorch2 = false;
using AllocatorTotal = int64_t;
#endif

}  // namespace acprof::compat
