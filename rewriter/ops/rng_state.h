// The random-number generator states a segment's recompute must replay.
//
// Dropout inside a segment draws from the default CPU generator and, for CUDA
// tensors, from each device's default CUDA generator. The checkpoint op
// captures these states before the forward run and replays them around the
// recompute, so the recompute draws the same masks as the forward did.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace acprof {

struct RngStates {
  at::Tensor cpu;
  std::vector<std::pair<int64_t, at::Tensor>> cuda;  // (device index, state)

  // The CPU state, plus the state of every CUDA device that holds one of the tensors.
  static RngStates capture(at::TensorList tensors);
  void apply() const;
};

// Replays captured states for a scope, then puts the states that were current
// back, so code after the recompute draws as if it never happened.
class ReplayedRngScope {
 public:
  explicit ReplayedRngScope(const RngStates& replayed);
  ~ReplayedRngScope();
  ReplayedRngScope(const ReplayedRngScope&) = delete;
  ReplayedRngScope& operator=(const ReplayedRngScope&) = delete;

 private:
  RngStates current_;
};

}  // namespace acprof
