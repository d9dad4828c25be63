// Modes a training step runs under, each held for a scope: autocast, the
// TorchScript executor's optimization and the intra-op thread count; and, for
// the whole process, how the host allocator treats freed memory.
#pragma once

#include <string>

#include <c10/core/DeviceType.h>

#include "acprof/autocast_state.h"

namespace acprof {

// Throws RecordError unless `dtype` is "", "bfloat16" or "float16".
void checkAutocastDtype(const std::string& dtype);

// Forward (and the loss) under autocast for a scope, as Python's
// `with torch.autocast(device_type, dtype=...)`: enabled, the dtype set, the
// cast cache cleared when the outermost scope ends. TorchScript's own autocast
// graph pass is off meanwhile: it casts some ops' inputs to float32 where eager
// autocast would not, and a checkpoint segment's recompute runs without it, so
// with it on the original and the rewritten model would round differently.
class AutocastScope {
 public:
  AutocastScope(const std::string& dtype, c10::DeviceType device_type);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  AutocastStateScope state_;
  bool previous_jit_pass_;
};

// Keeps TorchScript's executor optimization in one mode for a scope.
class ExecutorModeGuard {
 public:
  explicit ExecutorModeGuard(bool optimize);
  ~ExecutorModeGuard();
  ExecutorModeGuard(const ExecutorModeGuard&) = delete;
  ExecutorModeGuard& operator=(const ExecutorModeGuard&) = delete;

 private:
  bool previous_;
};

// Tells glibc's malloc, for the rest of the process, to serve every host
// allocation from its heaps (no mmap per large tensor) and never hand freed
// memory back to the system, as PyTorch's caching allocator keeps device
// memory. By default a tensor over the dynamic mmap threshold (up to 32 MiB)
// gets fresh pages and the heap's top is trimmed on free, so an op's time
// includes page faults that depend on what was freed before it: on the
// reference machine resnet18_small's step measured 60-77 ms in three runs
// (54-55 ms with memory kept), and the extra time its rewrite measured moved
// from -19 % to +33 % of the step between runs while its recompute cost 4 %.
// acprof-torch calls this first, so that the profile's op times and the
// rewrite's timed steps both measure compute. Byte accounting is unaffected:
// acprof counts what LibTorch asks for.
void keepFreedHostMemory();

// LibTorch's intra-op thread count for a scope (0 keeps the process's own),
// restored at its end. CPU kernels size their workspaces by it (resnet18 at
// batch 2, 64x64: its convolution backward holds 36 MiB more at two threads
// than at one), so a profile's bytes hold only at the count it ran at: the
// recorder, the verification and the timing each run at their config's count.
// Throws RecordError for a negative count (a hand-edited profile).
class IntraOpThreadsGuard {
 public:
  explicit IntraOpThreadsGuard(int threads);
  ~IntraOpThreadsGuard();
  IntraOpThreadsGuard(const IntraOpThreadsGuard&) = delete;
  IntraOpThreadsGuard& operator=(const IntraOpThreadsGuard&) = delete;

 private:
  int previous_;
};

// The process's intra-op thread count now.
int intraOpThreads();

}  // namespace acprof
