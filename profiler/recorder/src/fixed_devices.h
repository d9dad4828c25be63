// Devices a model's graph names as constants. torch.jit.trace records the
// device of every tensor forward makes (aten::arange(..., device=cpu) for
// GPT-2's positions), so a model traced on one device runs only there; on
// another, forward fails with "Expected all tensors to be on the same device",
// which names neither the cause nor the fix.
#pragma once

#include <optional>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>
#include <torch/script.h>

namespace acprof {

struct FixedDeviceUse {
  c10::Device device;      // as the graph names it: cpu, cuda:0
  int op_count = 0;        // ops given that device as a constant
  std::string first_op;    // "aten::arange in transformer"
};

// The first device, of a type other than `run_device`, that forward's inlined
// graph passes to an op as a constant, and how many ops it is passed to.
std::optional<FixedDeviceUse> fixedOtherDevice(const torch::jit::Module& module, c10::DeviceType run_device);

}  // namespace acprof
