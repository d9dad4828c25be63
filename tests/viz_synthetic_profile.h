// Hand-built profiles for the viz tests (made with the shared ProfileBuilder):
// every event, byte count and step is chosen here, so the tests can check the
// renderers against numbers they know without running the recorder.
#pragma once

#include <string>
#include <vector>

#include "acprof/plan_format.h"
#include "profile_builder.h"

namespace acprof::testing {

// A three-node model (conv, relu, linear; scopes "features.conv", ...) with a
// forward, a loss, a backward and an optimizer step. Its numbers:
//   weights 1000 B and input 400 B are static;
//   forward: conv makes activation A (4000 B), relu makes B (4000 B), linear
//            makes output C (100 B) with a 2000 B temporary inside it;
//   backward frees C, B, A and makes gradients (1000 B in total);
//   the peak is inside linear's forward step: 1000+400+4000+4000+100+2000 = 11500 B.
// Op names of the relu step and the scope of conv can be replaced to test escaping.
struct SmallProfileNames {
  std::string relu_op = "aten::relu";
  std::string conv_scope = "features.conv";
  std::string model_path = "small.pt";
};
inline constexpr int64_t kSmallProfilePeakBytes = 11500;
Profile smallTrainingProfile(const SmallProfileNames& names = {});

// A plan for smallTrainingProfile: one segment (conv..relu) dropping A (tensor
// id of A), budget 9000 B, predicted peak 7500 B.
Plan smallTrainingPlan(const Profile& profile);

// A profile of `event_count` events that alternate allocations and frees of a
// sawtooth plus one spike of `spike_bytes` at `spike_event`.
Profile longSawtoothProfile(int event_count, int spike_event, int64_t spike_bytes);

}  // namespace acprof::testing
