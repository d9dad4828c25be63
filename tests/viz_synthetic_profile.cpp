#include "viz_synthetic_profile.h"

#include <stdexcept>

namespace acprof::testing {

Profile smallTrainingProfile(const SmallProfileNames& names) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight, "weights");
  b.addStatic(400, Category::Input, "input");

  const int conv = b.node("aten::conv2d", {}, {}, 100, names.conv_scope);
  const int a = b.alloc(4000, Category::Activation, "A");  // event 0
  const int relu = b.node(names.relu_op, {}, {}, 50, "features.relu");
  const int bb = b.alloc(4000, Category::Activation, "B");  // event 1
  const int linear = b.node("aten::linear", {}, {}, 80, "classifier");
  const int tmp = b.alloc(2000, Category::Temporary, "workspace");  // event 2
  const int c = b.alloc(100, Category::Output, "C");                // event 3: peak 11500
  b.free(tmp);                                                      // event 4
  b.loss(10);
  const int loss = b.alloc(4, Category::Output, "loss");  // event 5
  b.backward(linear, 90, "AddmmBackward0");
  b.free(c);                                                   // event 6
  b.alloc(300, Category::Gradient, "classifier.weight.grad");  // event 7
  b.backward(relu, 40, "ReluBackward0");
  b.free(bb);  // event 8
  b.backward(conv, 120, "ConvolutionBackward0");
  b.free(a);                                                      // event 9
  b.alloc(700, Category::Gradient, "features.conv.weight.grad");  // event 10
  b.optimizer(30);
  b.free(loss);  // event 11
  b.model(names.model_path, "sha-synthetic");
  return b.finish();
}

Plan smallTrainingPlan(const Profile& profile) {
  Plan plan;
  plan.model_sha256 = profile.meta.model_sha256;
  plan.model_path = profile.meta.model_path;
  plan.solver = "mu-two";
  plan.budget_text = "9000B";
  plan.budget_bytes = 9000;
  plan.baseline_peak_bytes = kSmallProfilePeakBytes;
  plan.predicted_peak_bytes = 7500;
  plan.predicted_peak_step = 2;
  plan.extra_time_us = 150;
  SegmentCut segment;
  segment.first_node = 0;
  segment.last_node = 1;
  for (const TensorRecord& t : profile.tensors)
    if (t.name == "A") segment.dropped_tensors.push_back(t.id);
  segment.dropped_bytes = 4000;
  segment.recompute_time_us = 150;
  segment.recompute_step = 5;  // ReluBackward0, the first backward step of the segment (the simulator's fact)
  plan.segments.push_back(segment);
  for (const Step& step : profile.steps)
    plan.predicted_timeline.push_back({step.index, false, step.peak_bytes > 4000 ? step.peak_bytes - 4000 : step.peak_bytes});
  return plan;
}

Profile longSawtoothProfile(int event_count, int spike_event, int64_t spike_bytes) {
  if (event_count % 2 != 0 || spike_event % 2 != 0)
    throw std::invalid_argument("longSawtoothProfile wants an even event count and spike event");
  ProfileBuilder b;
  b.addStatic(1 << 20, Category::Weight, "weights");
  // Steps of 1000 events; each pair of events allocates and frees one
  // temporary whose size follows a sawtooth, except the spike.
  int node = -1;
  for (int e = 0; e < event_count; e += 2) {
    if (e % 1000 == 0) {
      if (e < event_count / 2)
        node = b.node("aten::mul", {}, {}, 10, "body");
      else
        b.backward(node, 10, "MulBackward0");
    }
    const int64_t bytes = e == spike_event ? spike_bytes : 1024 * (1 + (e / 2) % 97);
    b.free(b.alloc(bytes, Category::Temporary, "t"));
  }
  b.model("long.pt", "sha-synthetic");
  return b.finish();
}

}  // namespace acprof::testing
