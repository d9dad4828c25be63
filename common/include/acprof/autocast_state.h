// The autocast state of the CPU and CUDA device types, and a scope that runs
// code under another one as `with torch.autocast(...)` does: nesting counted,
// the cast cache cleared when the outermost scope ends, the previous state
// restored. Shared by the recorder (forward under --autocast) and the
// checkpoint operator (its recompute under the state its forward saw).
#pragma once

#include <ATen/autocast_mode.h>

#include "acprof/torch_compat.h"

namespace acprof {

struct AutocastState {
  bool cpu_enabled = false;
  c10::ScalarType cpu_dtype = at::kBFloat16;
  bool cuda_enabled = false;
  c10::ScalarType cuda_dtype = at::kHalf;
  bool cache_enabled = true;

  static AutocastState current() {
    AutocastState state;
    state.cpu_enabled = compat::autocastEnabled(c10::DeviceType::CPU);
    state.cpu_dtype = compat::autocastDtype(c10::DeviceType::CPU);
    state.cuda_enabled = compat::autocastEnabled(c10::DeviceType::CUDA);
    state.cuda_dtype = compat::autocastDtype(c10::DeviceType::CUDA);
    state.cache_enabled = at::autocast::is_autocast_cache_enabled();
    return state;
  }

  // This state with autocast on for one device type, in `dtype`.
  AutocastState enabledFor(c10::DeviceType device, c10::ScalarType dtype) const {
    AutocastState state = *this;
    (device == c10::DeviceType::CPU ? state.cpu_enabled : state.cuda_enabled) = true;
    (device == c10::DeviceType::CPU ? state.cpu_dtype : state.cuda_dtype) = dtype;
    return state;
  }

  void apply() const {
    compat::setAutocastEnabled(c10::DeviceType::CPU, cpu_enabled);
    compat::setAutocastDtype(c10::DeviceType::CPU, cpu_dtype);
    compat::setAutocastEnabled(c10::DeviceType::CUDA, cuda_enabled);
    compat::setAutocastDtype(c10::DeviceType::CUDA, cuda_dtype);
    at::autocast::set_autocast_cache_enabled(cache_enabled);
  }
};

class AutocastStateScope {
 public:
  explicit AutocastStateScope(const AutocastState& state) : previous_(AutocastState::current()) {
    state.apply();
    at::autocast::increment_nesting();
  }
  ~AutocastStateScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    previous_.apply();
  }
  AutocastStateScope(const AutocastStateScope&) = delete;
  AutocastStateScope& operator=(const AutocastStateScope&) = delete;

 private:
  AutocastState previous_;
};

}  // namespace acprof
