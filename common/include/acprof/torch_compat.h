// The one place where the LibTorch releases acprof builds on differ for it:
// 2.14 (CI, scripts/setup.sh) and 2.11 (the GPU machine's). Everything else
// includes this instead of testing versions itself. Older releases are refused
// here, with the fix, rather than failing somewhere deeper.
#pragma once

#include <torch/version.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace acprof::compat {

static_assert(TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 11),
              "acprof builds on LibTorch 2.11 or later (scripts/setup.sh installs the pinned torch)");

// c10::MemoryReportingInfoBase::reportMemoryUsage's total arguments.
using AllocatorTotal = size_t;

// Autocast state per device type.
inline bool autocastEnabled(c10::DeviceType device) { return at::autocast::is_autocast_enabled(device); }
inline void setAutocastEnabled(c10::DeviceType device, bool enabled) {
  at::autocast::set_autocast_enabled(device, enabled);
}
inline c10::ScalarType autocastDtype(c10::DeviceType device) { return at::autocast::get_autocast_dtype(device); }
inline void setAutocastDtype(c10::DeviceType device, c10::ScalarType dtype) {
  at::autocast::set_autocast_dtype(device, dtype);
}

// An owning pointer to an autograd node, as Tensor::grad_fn() returns it:
// std::shared_ptr up to LibTorch 2.11's era, c10::intrusive_ptr in 2.14. Taken
// from the declaration, so no version boundary has to be guessed.
using AutogradNodePtr = std::decay_t<decltype(std::declval<const at::Tensor&>().grad_fn())>;

// A parameter's key in torch::optim::Optimizer::state() (a StateMap): the
// TensorImpl's address, which releases before 2.0 printed as text. Chosen by
// the map's key type, so no version boundary has to be guessed.
template <typename StateMap>
typename StateMap::key_type optimizerStateKey(const at::Tensor& parameter) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream text;  // what c10::guts::to_string did with a pointer
    text << parameter.unsafeGetTensorImpl();
    return text.str();
  } else {
    return parameter.unsafeGetTensorImpl();
  }
}

}  // namespace acprof::compat
