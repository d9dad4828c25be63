// The cuBLAS workspace every CUDA step of acprof runs with. cuBLAS allocates
// its workspace through the caching allocator, so its size is part of every
// measured peak: the profile, the rewrite's verification, re-profile and
// timing must all use one size, or the rewrite measures what the profile did
// not (32 MiB with ":4096:8" against about 8 MiB, the default below Hopper).
// ":4096:8" is the one setting with which cuBLAS is deterministic, which
// bit-for-bit verification needs, and Hopper's default. Read when CUDA starts,
// so set at a command's start; a user's own setting wins. Nothing on the CPU.
#pragma once

#include <cstdlib>

namespace acprof::cli {

inline constexpr const char* kCublasWorkspaceConfig = ":4096:8";

inline void useDeterministicCublasWorkspace() {
  ::setenv("CUBLAS_WORKSPACE_CONFIG", kCublasWorkspaceConfig, /*overwrite=*/0);
}

}  // namespace acprof::cli
