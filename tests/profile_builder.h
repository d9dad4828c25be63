// The one builder of hand-written profiles for the planner and viz tests: a
// script of forward nodes, allocations, frees and backward steps, turned into a
// Profile the way the recorder fills one (steps, events, alloc/free steps,
// users, categories, cut facts). Every allocate and free is the next allocator
// event, so a test knows each event's index and byte count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "acprof/profile_format.h"

namespace acprof::testing {

class ProfileBuilder {
 public:
  // A static storage alive for the whole iteration (weights, inputs, ...).
  int addStatic(int64_t bytes, Category category, const std::string& name = "") {
    TensorRecord t = newTensor(bytes, name);
    t.category = category;
    t.alloc_event = -1;
    explicit_category_.back() = true;
    profile_.tensors.push_back(t);
    return t.id;
  }
  // A forward node with its own step; reads and writes value names. The scope
  // defaults to "n<id>". A prim::Constant never runs, so it has no step.
  int node(const std::string& kind, std::vector<std::string> inputs, std::vector<std::string> outputs,
           double time_us = 1.0, const std::string& scope = "") {
    ForwardNode n;
    n.id = static_cast<int>(profile_.nodes.size());
    n.kind = kind;
    n.scope = scope.empty() ? "n" + std::to_string(n.id) : scope;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.forward_time_us = time_us;
    profile_.nodes.push_back(n);
    if (kind != "prim::Constant") profile_.nodes.back().forward_step = beginStep(Phase::Forward, n.id, kind, time_us);
    return n.id;
  }
  void loss(double time_us = 1.0) { beginStep(Phase::Loss, -1, "loss", time_us); }
  // A backward step created by forward node `node`; op defaults to "Backward<node>".
  void backward(int node, double time_us = 1.0, const std::string& op = "") {
    const int step = beginStep(Phase::Backward, node, op.empty() ? "Backward" + std::to_string(node) : op, time_us);
    profile_.nodes[node].backward_steps.push_back(step);
  }
  void optimizer(double time_us = 1.0) { beginStep(Phase::Optimizer, -1, "optimizer.step", time_us); }

  // An allocation at the next event, in the current step; its category is
  // derived by finish() from when it is allocated and freed.
  int alloc(int64_t bytes) {
    TensorRecord t = newTensor(bytes, "");
    t.alloc_event = event_++;
    t.alloc_step = currentStep();
    if (t.alloc_step >= 0 && profile_.steps[t.alloc_step].phase == Phase::Forward)
      t.producer_node = profile_.steps[t.alloc_step].node;
    profile_.tensors.push_back(t);
    return t.id;
  }
  // An allocation whose category and name the test states.
  int alloc(int64_t bytes, Category category, const std::string& name) {
    const int id = alloc(bytes);
    profile_.tensors[id].name = name;
    setCategory(id, category);
    return id;
  }
  void free(int tensor) {
    profile_.tensors[tensor].free_event = event_++;
    profile_.tensors[tensor].free_step = currentStep();
  }
  int tensorCount() const { return static_cast<int>(profile_.tensors.size()); }
  int eventCount() const { return event_; }
  int64_t bytesOf(int tensor) const { return profile_.tensors[tensor].bytes; }
  void readBy(int tensor, int node) { profile_.tensors[tensor].users.push_back(node); }
  // Autograd let go, in the current step, of what forward node `node` saved of the tensor.
  void releaseSave(int tensor, int node) {
    auto& saved_by = profile_.tensors[tensor].saved_by;
    if (!saved_by) saved_by.emplace();
    saved_by->push_back({node, currentStep()});
  }
  // Forward node `node` saved the tensor and autograd never let go of it in
  // the iteration: no gradient reached that node.
  void savedToTheEnd(int tensor, int node) {
    auto& saved_by = profile_.tensors[tensor].saved_by;
    if (!saved_by) saved_by.emplace();
    saved_by->push_back({node, -1});
  }
  void setCategory(int tensor, Category category) {
    profile_.tensors[tensor].category = category;
    explicit_category_[tensor] = true;
  }
  void mutates(int node, const std::string& value) { writes_.emplace_back(node, value); }
  // The bytes the run observed of a graph value (GraphValue::bytes): what a copy of it allocates.
  void valueBytes(const std::string& value, int64_t bytes) { value_bytes_[value] = bytes; }
  // The storage a graph value was on in the run (GraphValue::tensor), as the
  // recorder binds each value it observes to a storage.
  void valueOn(const std::string& value, int tensor) { value_tensor_[value] = tensor; }
  // A graph input that needs grad (a parameter read through its own value, as a trace reads each use).
  void requiresGrad(const std::string& value) { requires_grad_.insert(value); }
  void uncuttable(int node) { barriers_.push_back(node); }
  // Autograd's account of whose gradient a storage holds (TensorRecord::gradient_of):
  // the graph values named. Every other storage is recorded as no value's gradient.
  void gradientOf(int tensor, std::vector<std::string> values) { gradient_of_[tensor] = std::move(values); }
  void model(const std::string& path, const std::string& sha256) {
    profile_.meta.model_path = path;
    profile_.meta.model_sha256 = sha256;
  }

  // Closes the iteration: storages still alive outlive it; derived fields as the recorder fills them.
  Profile finish() {
    profile_.event_count = event_;
    addGraphFacts();
    for (size_t i = 0; i < profile_.tensors.size(); ++i) {
      TensorRecord& t = profile_.tensors[i];
      t.gradient_of.emplace();
      if (auto named = gradient_of_.find(t.id); named != gradient_of_.end())
        for (const std::string& value : named->second) t.gradient_of->push_back(valueNamed(value));
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
  TensorRecord newTensor(int64_t bytes, const std::string& name) {
    TensorRecord t;
    t.id = static_cast<int>(profile_.tensors.size());
    t.bytes = bytes;
    t.name = name;
    t.device = "cpu";
    t.dtype = "float32";
    t.free_event = -1;
    explicit_category_.push_back(false);
    return t;
  }
  // A step's scope is its node's; loss and optimizer steps have none.
  int beginStep(Phase phase, int node, const std::string& op, double time_us) {
    Step s;
    s.index = static_cast<int>(profile_.steps.size());
    s.phase = phase;
    s.node = node;
    s.op = op;
    s.scope = node >= 0 ? profile_.nodes[node].scope : "";
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
      v.requires_grad = v.needs_grad = producer >= 0 && kind != "prim::Constant" && kind != "prim::GetAttr";
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
    for (const auto& [name, bytes] : value_bytes_) profile_.values[ids.at(name)].bytes = bytes;
    for (const auto& [name, tensor] : value_tensor_) profile_.values[ids.at(name)].tensor = tensor;
    for (const std::string& name : requires_grad_)
      profile_.values[ids.at(name)].requires_grad = profile_.values[ids.at(name)].needs_grad = true;
    for (const GraphValue& v : profile_.values)
      if (v.producer_node >= 0 && !read.count(v.name)) profile_.graph_outputs.push_back(v.id);
  }

  int valueNamed(const std::string& name) const {
    for (const GraphValue& v : profile_.values)
      if (v.name == name) return v.id;
    throw std::invalid_argument("ProfileBuilder: no graph value named " + name);
  }

  std::map<int, std::vector<std::string>> gradient_of_;
  std::vector<std::pair<int, std::string>> writes_;
  std::map<std::string, int64_t> value_bytes_;
  std::map<std::string, int> value_tensor_;
  std::set<std::string> requires_grad_;
  std::vector<int> barriers_;
  Profile profile_;
  std::vector<bool> explicit_category_;
  int event_ = 0;
};

}  // namespace acprof::testing
