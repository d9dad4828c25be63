// Profiles written by hand for the planner tests: a script of forward nodes,
// allocations, frees and backward steps, turned into a Profile the way the
// recorder fills one (steps, events, alloc/free steps, users, categories).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <random>
#include <string>
#include <vector>

#include "acprof/profile_format.h"

namespace acprof::testing {

class ProfileBuilder {
 public:
  // A static storage alive for the whole iteration (weights, inputs, ...).
  int addStatic(int64_t bytes, Category category) {
    TensorRecord t = newTensor(bytes);
    t.category = category;
    t.alloc_event = -1;
    explicit_category_.back() = true;
    profile_.tensors.push_back(t);
    return t.id;
  }
  // A forward node with its own step; reads and writes value names.
  int node(const std::string& kind, std::vector<std::string> inputs, std::vector<std::string> outputs,
           double time_us = 1.0) {
    ForwardNode n;
    n.id = static_cast<int>(profile_.nodes.size());
    n.kind = kind;
    n.scope = "n" + std::to_string(n.id);
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.forward_time_us = time_us;
    n.forward_step = kind == "prim::Constant" ? -1 : beginStep(Phase::Forward, n.id, kind, time_us);
    profile_.nodes.push_back(n);
    return n.id;
  }
  void loss() { beginStep(Phase::Loss, -1, "loss", 1.0); }
  // A backward step created by forward node `node`.
  void backward(int node, double time_us = 1.0) {
    const int step = beginStep(Phase::Backward, node, "Backward" + std::to_string(node), time_us);
    profile_.nodes[node].backward_steps.push_back(step);
  }
  void optimizer() { beginStep(Phase::Optimizer, -1, "optimizer.step", 1.0); }

  // An allocation at the next event, in the current step.
  int alloc(int64_t bytes) {
    TensorRecord t = newTensor(bytes);
    t.alloc_event = event_++;
    t.alloc_step = currentStep();
    if (profile_.steps[t.alloc_step].phase == Phase::Forward) t.producer_node = profile_.steps[t.alloc_step].node;
    profile_.tensors.push_back(t);
    return t.id;
  }
  void free(int tensor) {
    profile_.tensors[tensor].free_event = event_++;
    profile_.tensors[tensor].free_step = currentStep();
  }
  int tensorCount() const { return static_cast<int>(profile_.tensors.size()); }
  int64_t bytesOf(int tensor) const { return profile_.tensors[tensor].bytes; }
  void readBy(int tensor, int node) { profile_.tensors[tensor].users.push_back(node); }
  // Autograd let go, in the current step, of what forward node `node` saved of the tensor.
  void releaseSave(int tensor, int node) {
    auto& saved_by = profile_.tensors[tensor].saved_by;
    if (!saved_by) saved_by.emplace();
    saved_by->push_back({node, currentStep()});
  }
  void setCategory(int tensor, Category category) {
    profile_.tensors[tensor].category = category;
    explicit_category_[tensor] = true;
  }
  void mutates(int node, const std::string& value) { writes_.emplace_back(node, value); }
  void uncuttable(int node) { barriers_.push_back(node); }

  // Closes the iteration: storages still alive outlive it; derived fields as the recorder fills them.
  Profile finish() {
    profile_.event_count = event_;
    addGraphFacts();
    for (size_t i = 0; i < profile_.tensors.size(); ++i) {
      TensorRecord& t = profile_.tensors[i];
      if (t.free_event < 0) {
        t.free_event = event_;
        t.free_step = -1;
      }
      for (int user : t.users)
        t.last_forward_use_step = std::max(t.last_forward_use_step, profile_.nodes[user].forward_step);
      if (explicit_category_[i] || t.alloc_event < 0) continue;
      const bool alive_at_end = t.free_event == event_;
      const Phase alloc_phase = profile_.steps[t.alloc_step].phase;
      const Phase free_phase = alive_at_end ? Phase::Optimizer : profile_.steps[t.free_step].phase;
      t.category = alloc_phase == Phase::Forward && free_phase != Phase::Forward ? Category::Activation
                                                                                   : Category::Temporary;
    }
    timelineFromTensors(profile_);
    return profile_;
  }

 private:
  TensorRecord newTensor(int64_t bytes) {
    TensorRecord t;
    t.id = static_cast<int>(profile_.tensors.size());
    t.bytes = bytes;
    t.device = "cpu";
    t.dtype = "float32";
    t.free_event = -1;
    explicit_category_.push_back(false);
    return t;
  }
  int beginStep(Phase phase, int node, const std::string& op, double time_us) {
    Step s;
    s.index = static_cast<int>(profile_.steps.size());
    s.phase = phase;
    s.node = node;
    s.op = op;
    s.first_event = event_;
    s.time_us = time_us;
    profile_.steps.push_back(s);
    return s.index;
  }
  int currentStep() const { return static_cast<int>(profile_.steps.size()) - 1; }

  // The cut facts the legality library would give these nodes: constants and
  // attribute reads are Duplicable (constants are copied into segments,
  // attribute reads are buffers that need no grad), nodes marked uncuttable are
  // Barriers, everything else computes tensors that need grad. A value no node
  // reads is what the graph returns.
  void addGraphFacts() {
    std::map<std::string, int> ids;
    auto valueId = [&](const std::string& name, int producer) {
      if (auto it = ids.find(name); it != ids.end()) return it->second;
      GraphValue v;
      v.id = static_cast<int>(profile_.values.size());
      v.name = name;
      v.producer_node = producer;
      v.type = "Tensor";
      v.is_tensor = v.can_leave = true;
      const std::string kind = producer >= 0 ? profile_.nodes[producer].kind : "";
      v.entry = kind == "prim::Constant" ? ValueEntry::Clone : ValueEntry::Input;
      v.requires_grad = producer >= 0 && kind != "prim::Constant" && kind != "prim::GetAttr";
      profile_.values.push_back(v);
      return ids[name] = v.id;
    };
    std::set<std::string> read;
    for (ForwardNode& n : profile_.nodes) {
      n.role = n.kind == "prim::Constant" || n.kind == "prim::GetAttr" ? CutRole::Duplicable : CutRole::Compute;
      if (std::count(barriers_.begin(), barriers_.end(), n.id)) {
        n.role = CutRole::Barrier;
        n.barrier_reason = "marked uncuttable by the test";
      }
      for (const std::string& input : n.inputs) {
        const int v = valueId(input, -1);
        read.insert(input);
        if (profile_.values[v].entry != ValueEntry::Clone) n.reads.push_back(v);
      }
      for (const std::string& output : n.outputs) valueId(output, n.id);
    }
    for (const auto& [node, name] : writes_) profile_.nodes[node].writes.push_back(ids.at(name));
    for (const GraphValue& v : profile_.values)
      if (v.producer_node >= 0 && !read.count(v.name)) profile_.graph_outputs.push_back(v.id);
  }

  std::vector<std::pair<int, std::string>> writes_;
  std::vector<int> barriers_;
  Profile profile_;
  std::vector<bool> explicit_category_;
  int event_ = 0;
};

// A chain of n nodes, node i making a_i (activation_bytes) from a_{i-1}, the
// last one the model's output; 1000 B of weights. Backward of node i (from the
// last) allocates the gradient of its input (activation_bytes, none for node 0),
// frees the gradient of its output and then its own a_i. Forward times: time_us[i].
//   forward step i: event i allocates a_i; loss step: no events;
//   backward of node i: alloc g_{i-1}, free g_i, free a_i.
inline Profile chainProfile(int n, int64_t activation_bytes, const std::vector<double>& time_us) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  std::vector<int> a(n), g(n, -1);
  for (int i = 0; i < n; ++i) {
    b.node("aten::linear", {i == 0 ? "x" : "a" + std::to_string(i - 1)}, {"a" + std::to_string(i)}, time_us[i]);
    a[i] = b.alloc(activation_bytes);
    if (i > 0) b.readBy(a[i - 1], i);
  }
  b.setCategory(a[n - 1], Category::Output);
  b.loss();
  for (int i = n - 1; i >= 0; --i) {
    b.backward(i);
    if (i > 0) g[i - 1] = b.alloc(activation_bytes);
    if (g[i] >= 0) b.free(g[i]);
    b.free(a[i]);
  }
  return b.finish();
}

// A network of residual blocks shaped like a CNN's training step, for solver
// properties and the planning-time benchmark (bench/plan_bench.cpp). Each block:
//   conv1 -> relu1 -> conv2 (with a forward workspace) -> add(conv2, block input) -> relu2,
// with a prim::Constant before each block (a node that never runs). Activation
// sizes and forward times vary with `seed`; weights are 1/20 of the activations.
// Backward runs the nodes in reverse: each allocates the gradients of its inputs
// (once per tensor), frees its output's gradient, then its own saved output;
// with `record_saves`, the profile says so (saved_by: its own node saved it).
inline Profile residualNetworkProfile(int blocks, uint32_t seed, bool record_saves = false) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> size_steps(1, 16);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  ProfileBuilder b;
  struct Made {
    int node;
    int tensor;
    std::vector<int> inputs;  // tensors of earlier nodes it reads
  };
  std::vector<Made> made;
  int64_t weight_bytes = 0;
  int input = b.addStatic(64 * 1024, Category::Input);
  int block_input = input;
  std::string block_value = "x";
  auto add = [&](const std::string& kind, std::vector<int> inputs, std::vector<std::string> input_names,
                 int64_t bytes, double time_us, bool workspace) {
    const std::string value = "v" + std::to_string(made.size());
    const int node = b.node(kind, std::move(input_names), {value}, time_us * jitter(random));
    if (workspace) b.free(b.alloc(bytes * 2));
    const int tensor = b.alloc(bytes);
    for (int t : inputs) b.readBy(t, node);
    made.push_back({node, tensor, inputs});
    return std::make_pair(tensor, value);
  };
  for (int block = 0; block < blocks; ++block) {
    const int64_t bytes = 16 * 1024 * size_steps(random);
    weight_bytes += bytes / 20;
    b.node("prim::Constant", {}, {"c" + std::to_string(block)});
    auto conv1 = add("aten::conv2d", {block_input}, {block_value}, bytes, 100, false);
    auto relu1 = add("aten::relu", {conv1.first}, {conv1.second}, bytes, 10, false);
    auto conv2 = add("aten::conv2d", {relu1.first}, {relu1.second}, bytes, 100, true);
    auto sum = add("aten::add", {conv2.first, block_input}, {conv2.second, block_value}, bytes, 10, false);
    auto relu2 = add("aten::relu", {sum.first}, {sum.second}, bytes, 10, false);
    block_input = relu2.first;
    block_value = relu2.second;
  }
  b.setCategory(block_input, Category::Output);
  b.addStatic(weight_bytes, Category::Weight);
  b.loss();
  std::vector<int> gradient_of(b.tensorCount(), -1);
  gradient_of[block_input] = b.alloc(b.bytesOf(block_input));  // d loss / d output
  for (auto it = made.rbegin(); it != made.rend(); ++it) {
    b.backward(it->node);
    for (int t : it->inputs)
      if (t != input && gradient_of[t] < 0) gradient_of[t] = b.alloc(b.bytesOf(t));
    if (gradient_of[it->tensor] >= 0) b.free(gradient_of[it->tensor]);
    if (record_saves) b.releaseSave(it->tensor, it->node);
    b.free(it->tensor);
  }
  return b.finish();
}

}  // namespace acprof::testing
