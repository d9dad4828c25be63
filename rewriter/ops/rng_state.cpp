#include "ops/rng_state.h"

#include <algorithm>
#include <mutex>

#include <ATen/Context.h>
#include <ATen/core/Generator.h>

namespace acprof {
namespace {

// globalContext().defaultGenerator goes through the CUDA hooks, so this file
// compiles against CPU-only and CUDA builds of LibTorch alike.
at::Tensor stateOf(const at::Generator& generator) {
  at::Generator shared = generator;
  std::lock_guard<std::mutex> lock(shared.mutex());
  return shared.get_state();
}

void setStateOf(const at::Generator& generator, const at::Tensor& state) {
  at::Generator shared = generator;
  std::lock_guard<std::mutex> lock(shared.mutex());
  shared.set_state(state);
}

const at::Generator& cudaGenerator(int64_t device_index) {
  return at::globalContext().defaultGenerator(
      c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_index)));
}

}  // namespace

RngStates RngStates::capture(at::TensorList tensors) {
  RngStates states;
  states.cpu = stateOf(at::globalContext().defaultGenerator(c10::DeviceType::CPU));
  std::vector<int64_t> cuda_devices;
  for (const at::Tensor& tensor : tensors) {
    if (tensor.defined() && tensor.is_cuda()) cuda_devices.push_back(tensor.get_device());
  }
  std::sort(cuda_devices.begin(), cuda_devices.end());
  cuda_devices.erase(std::unique(cuda_devices.begin(), cuda_devices.end()), cuda_devices.end());
  for (const int64_t device : cuda_devices) states.cuda.emplace_back(device, stateOf(cudaGenerator(device)));
  return states;
}

void RngStates::apply() const {
  setStateOf(at::globalContext().defaultGenerator(c10::DeviceType::CPU), cpu);
  for (const auto& [device, state] : cuda) setStateOf(cudaGenerator(device), state);
}

ReplayedRngScope::ReplayedRngScope(const RngStates& replayed) {
  current_.cpu = stateOf(at::globalContext().defaultGenerator(c10::DeviceType::CPU));
  for (const auto& [device, state] : replayed.cuda) current_.cuda.emplace_back(device, stateOf(cudaGenerator(device)));
  replayed.apply();
}

ReplayedRngScope::~ReplayedRngScope() { current_.apply(); }

}  // namespace acprof
