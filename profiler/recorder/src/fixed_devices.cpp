#include "fixed_devices.h"

#include <fmt/format.h>

#include "acprof/forward_graph.h"

namespace acprof {
namespace {

void collect(const torch::jit::Block* block, c10::DeviceType run_device, std::optional<FixedDeviceUse>& found) {
  for (const torch::jit::Node* node : block->nodes()) {
    for (const torch::jit::Value* input : node->inputs()) {
      if (input->node()->kind() != c10::prim::Constant || !input->type()->cast<c10::DeviceObjType>()) continue;
      const c10::Device device = torch::jit::toIValue(input)->toDevice();
      if (device.type() == run_device) continue;
      if (!found) {
        const std::string scope = moduleScope(node);
        found = FixedDeviceUse{device, 0,
                               scope.empty() ? node->kind().toQualString()
                                             : fmt::format("{} in {}", node->kind().toQualString(), scope)};
      }
      if (device == found->device) ++found->op_count;
      break;  // one count per op
    }
    for (const torch::jit::Block* inner : node->blocks()) collect(inner, run_device, found);
  }
}

}  // namespace

std::optional<FixedDeviceUse> fixedOtherDevice(const torch::jit::Module& module, c10::DeviceType run_device) {
  std::optional<FixedDeviceUse> found;
  collect(inlinedForwardGraph(module)->block(), run_device, found);
  return found;
}

}  // namespace acprof
