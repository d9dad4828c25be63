// The one place where LibTorch 1.13 (Debian, CI) and LibTorch 2.x (CUDA on the
// GPU machine) differ for acprof. Everything else includes this instead of
// testing versions itself.
#pragma once

#include <torch/version.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace acprof::compat {

#if TORCH_VERSION_MAJOR >= 2
// c10::MemoryReportingInfoBase::reportMemoryUsage's total arguments.
using AllocatorTotal = size_t;
#else
using AllocatorTotal = int64_t;
#endif

// Autocast state per device type: 2.x takes the device type as an argument,
// 1.13 has one function per device type (CUDA's is unqualified).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
inline bool autocastEnabled(c10::DeviceType device) { return at::autocast::is_autocast_enabled(device); }
inline void setAutocastEnabled(c10::DeviceType device, bool enabled) {
  at::autocast::set_autocast_enabled(device, enabled);
}
inline c10::ScalarType autocastDtype(c10::DeviceType device) { return at::autocast::get_autocast_dtype(device); }
inline void setAutocastDtype(c10::DeviceType device, c10::ScalarType dtype) {
  at::autocast::set_autocast_dtype(device, dtype);
}
#else
inline bool autocastEnabled(c10::DeviceType device) {
  return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
inline void setAutocastEnabled(c10::DeviceType device, bool enabled) {
  if (device == c10::DeviceType::CPU)
    at::autocast::set_cpu_enabled(enabled);
  else
    at::autocast::set_enabled(enabled);
}
inline c10::ScalarType autocastDtype(c10::DeviceType device) {
  return device == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                        : at::autocast::get_autocast_gpu_dtype();
}
inline void setAutocastDtype(c10::DeviceType device, c10::ScalarType dtype) {
  if (device == c10::DeviceType::CPU)
    at::autocast::set_autocast_cpu_dtype(dtype);
  else
    at::autocast::set_autocast_gpu_dtype(dtype);
}
#endif

// A parameter's key in torch::optim::Optimizer::state() (a StateMap): 1.13 keys
// it by the TensorImpl's address printed as text, 2.x by the address itself.
// Chosen by the map's key type, so no version boundary has to be guessed.
template <typename StateMap>
typename StateMap::key_type optimizerStateKey(const at::Tensor& parameter) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream text;  // what 1.13's c10::guts::to_string does with a pointer
    text << parameter.unsafeGetTensorImpl();
    return text.str();
  } else {
    return parameter.unsafeGetTensorImpl();
  }
}

}  // namespace acprof::compat
