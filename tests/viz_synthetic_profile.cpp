#include "viz_synthetic_profile.h"

#include <stdexcept>

namespace acprof::testing {

int SyntheticProfileBuilder::addNode(const std::string& kind, const std::string& scope) {
  ForwardNode node;
  node.id = static_cast<int>(profile_.nodes.size());
  node.kind = kind;
  node.scope = scope;
  profile_.nodes.push_back(node);
  return node.id;
}

int SyntheticProfileBuilder::addStatic(int64_t bytes, Category category, const std::string& name) {
  TensorRecord t;
  t.id = static_cast<int>(profile_.tensors.size());
  t.bytes = bytes;
  t.category = category;
  t.name = name;
  t.alloc_event = -1;
  t.free_event = -1;  // set to event_count by finish()
  profile_.tensors.push_back(t);
  return t.id;
}

void SyntheticProfileBuilder::beginStep(Phase phase, const std::string& op, const std::string& scope, int node,
                                        double time_us) {
  Step step;
  step.index = static_cast<int>(profile_.steps.size());
  step.phase = phase;
  step.op = op;
  step.scope = scope;
  step.node = node;
  step.first_event = event_count_;
  step.time_us = time_us;
  if (node >= 0) {
    if (phase == Phase::Forward) {
      profile_.nodes[node].forward_step = step.index;
      profile_.nodes[node].forward_time_us = time_us;
    } else if (phase == Phase::Backward) {
      profile_.nodes[node].backward_steps.push_back(step.index);
    }
  }
  profile_.steps.push_back(step);
}

int SyntheticProfileBuilder::allocate(int64_t bytes, Category category, const std::string& name, int producer_node) {
  const int id = addStatic(bytes, category, name);
  TensorRecord& t = profile_.tensors[id];
  t.alloc_event = event_count_++;
  t.alloc_step = profile_.steps.empty() ? -1 : profile_.steps.back().index;
  t.producer_node = producer_node;
  return id;
}

void SyntheticProfileBuilder::release(int tensor_id) {
  TensorRecord& t = profile_.tensors.at(tensor_id);
  t.free_event = event_count_++;
  t.free_step = profile_.steps.empty() ? -1 : profile_.steps.back().index;
  if (t.category == Category::Activation && t.first_backward_use_step < 0) t.first_backward_use_step = t.free_step;
}

Profile SyntheticProfileBuilder::finish(const std::string& model_path, const std::string& sha256) {
  profile_.event_count = event_count_;
  for (TensorRecord& t : profile_.tensors)
    if (t.free_event < 0) t.free_event = event_count_;
  profile_.meta.model_path = model_path;
  profile_.meta.model_sha256 = sha256;
  timelineFromTensors(profile_);
  return profile_;
}

Profile smallTrainingProfile(const SmallProfileNames& names) {
  SyntheticProfileBuilder b;
  const int conv = b.addNode("aten::conv2d", names.conv_scope);
  const int relu = b.addNode(names.relu_op, "features.relu");
  const int linear = b.addNode("aten::linear", "classifier");
  b.addStatic(1000, Category::Weight, "weights");
  b.addStatic(400, Category::Input, "input");

  b.beginStep(Phase::Forward, "aten::conv2d", names.conv_scope, conv, 100);
  const int a = b.allocate(4000, Category::Activation, "A", conv);  // event 0
  b.beginStep(Phase::Forward, names.relu_op, "features.relu", relu, 50);
  const int bb = b.allocate(4000, Category::Activation, "B", relu);  // event 1
  b.beginStep(Phase::Forward, "aten::linear", "classifier", linear, 80);
  const int tmp = b.allocate(2000, Category::Temporary, "workspace", linear);  // event 2
  const int c = b.allocate(100, Category::Output, "C", linear);                // event 3: peak 11500
  b.release(tmp);                                                              // event 4
  b.beginStep(Phase::Loss, "loss", "", -1, 10);
  const int loss = b.allocate(4, Category::Output, "loss");  // event 5
  b.beginStep(Phase::Backward, "AddmmBackward0", "classifier", linear, 90);
  b.release(c);                                                              // event 6
  const int g_linear = b.allocate(300, Category::Gradient, "classifier.weight.grad");  // event 7
  b.beginStep(Phase::Backward, "ReluBackward0", "features.relu", relu, 40);
  b.release(bb);  // event 8
  b.beginStep(Phase::Backward, "ConvolutionBackward0", names.conv_scope, conv, 120);
  b.release(a);                                                           // event 9
  b.allocate(700, Category::Gradient, "features.conv.weight.grad");       // event 10
  b.beginStep(Phase::Optimizer, "optimizer.step", "", -1, 30);
  b.release(loss);  // event 11
  (void)g_linear;
  return b.finish(names.model_path);
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
  SyntheticProfileBuilder b;
  const int node = b.addNode("aten::mul", "body");
  b.addStatic(1 << 20, Category::Weight, "weights");
  // Steps of 1000 events; each pair of events allocates and frees one
  // temporary whose size follows a sawtooth, except the spike.
  for (int e = 0; e < event_count; e += 2) {
    if (e % 1000 == 0) b.beginStep(e < event_count / 2 ? Phase::Forward : Phase::Backward, "aten::mul", "body", node, 10);
    const int64_t bytes = e == spike_event ? spike_bytes : 1024 * (1 + (e / 2) % 97);
    const int t = b.allocate(bytes, Category::Temporary, "t", node);
    b.release(t);
  }
  return b.finish("long.pt");
}

}  // namespace acprof::testing
