// Modes a training step runs under, each held for a scope: autocast, and the
// TorchScript executor's optimization.
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

}  // namespace acprof
