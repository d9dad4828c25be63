#include "acprof/event_stream.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

namespace acprof {
namespace {

// Builds the profile's tensors by replaying the measured iteration's events.
class TensorBook {
 public:
  TensorBook(Profile& profile, const std::vector<StaticStorage>& statics, bool gradients_recorded)
      : profile_(profile), gradients_recorded_(gradients_recorded) {
    for (const GraphValue& value : profile_.values) value_id_.emplace(value.name, value.id);
    for (const StaticStorage& s : statics) {
      TensorRecord& t = newRecord(s.bytes, -1);
      t.category = s.category;
      t.name = s.name;
      t.shape = s.shape;
      t.dtype = s.dtype;
      live_[s.ptr] = t.id;
    }
  }

  void replay(const IterationRecord& record) {
    // Observed values and saves happened between allocation events: each is
    // applied once the events recorded before it have been.
    size_t next_observed = 0;
    size_t next_saved = 0;
    size_t next_gradient = 0;
    auto catchUp = [&](int events_done) {
      for (; next_observed < record.observed.size() && record.observed[next_observed].event_index <= events_done;
           ++next_observed)
        observe(record.observed[next_observed]);
      for (; next_saved < record.saved_tensors.size() && record.saved_tensors[next_saved].event_index <= events_done;
           ++next_saved)
        saved(record.saved_tensors[next_saved], record);
      for (; next_gradient < record.gradients.size() && record.gradients[next_gradient].event_index <= events_done;
           ++next_gradient)
        gradient(record.gradients[next_gradient]);
    };
    for (size_t e = 0; e < record.events.size(); ++e) {
      catchUp(static_cast<int>(e));
      const AllocationEvent& event = record.events[e];
      if (event.delta_bytes > 0) {
        TensorRecord& t = newRecord(event.delta_bytes, static_cast<int>(e));
        t.alloc_step = event.step;
        live_[event.ptr] = t.id;
      } else {
        auto it = live_.find(event.ptr);
        int id;
        if (it == live_.end()) {
          // Allocated before the iteration by something we do not enumerate.
          TensorRecord& t = newRecord(-event.delta_bytes, -1);
          id = t.id;
        } else {
          id = it->second;
          live_.erase(it);
        }
        profile_.tensors[id].free_event = static_cast<int>(e);
        profile_.tensors[id].free_step = event.step;
      }
    }
    catchUp(std::numeric_limits<int>::max());
    // Saves still held when the iteration ended (a graph nothing ran backward through).
    for (const auto& [save_id, save] : open_saves_) profile_.tensors[save.tensor].saved_by->push_back({save.node, -1});
    for (auto& [ptr, id] : live_) ptr_at_end_[id] = ptr;
  }

  const void* ptrAtEnd(int id) const {
    auto it = ptr_at_end_.find(id);
    return it == ptr_at_end_.end() ? nullptr : it->second;
  }
  // The storage (tensor id) a graph value lived on, or -1.
  int tensorOfValue(const std::string& value) const {
    auto it = value_tensor_.find(value);
    return it == value_tensor_.end() ? -1 : it->second;
  }
  // The storages of a value: its own, or each element's for a list of tensors.
  std::vector<int> tensorsOfValue(const std::string& value) const {
    if (const int t = tensorOfValue(value); t >= 0) return {t};
    std::vector<int> elements;
    for (int i = 0;; ++i) {
      const int t = tensorOfValue(fmt::format("{}[{}]", value, i));
      if (t < 0) break;
      elements.push_back(t);
    }
    return elements;
  }
  // What was observed of a node output's value (the first time), or null.
  const ObservedValue* observedValue(const std::string& value) const {
    auto it = observed_value_.find(value);
    return it == observed_value_.end() ? nullptr : &it->second;
  }
  void bindValue(const std::string& value, const void* ptr) {
    auto it = live_.find(ptr);
    if (it != live_.end()) value_tensor_.emplace(value, it->second);
  }

 private:
  TensorRecord& newRecord(int64_t bytes, int alloc_event) {
    TensorRecord t;
    t.id = static_cast<int>(profile_.tensors.size());
    t.bytes = bytes;
    t.alloc_event = alloc_event;
    t.free_event = -2;  // set when freed, or to event_count after replay
    t.device = profile_.meta.run.device;
    t.saved_by.emplace();  // recorded: empty until a save names it
    if (gradients_recorded_) t.gradient_of.emplace();  // empty until a gradient report names it
    profile_.tensors.push_back(std::move(t));
    return profile_.tensors.back();
  }

  void observe(const ObservedValue& seen) {
    auto it = live_.find(seen.storage_ptr);
    if (it == live_.end()) return;
    if (seen.node < 0 || seen.node >= static_cast<int>(profile_.nodes.size()) ||
        seen.output_index >= static_cast<int>(profile_.nodes[seen.node].outputs.size()))
      return;  // names no output of the graph's nodes
    TensorRecord& t = profile_.tensors[it->second];
    const std::string& value_name = profile_.nodes[seen.node].outputs[seen.output_index];
    std::string name = value_name;
    if (seen.list_index < 0) observed_value_.emplace(name, seen);
    if (seen.list_index >= 0) name += fmt::format("[{}]", seen.list_index);
    value_tensor_.emplace(name, t.id);
    if (seen.list_index < 0) value_tensor_.emplace(value_name, t.id);
    if (seen.gradient_target) {
      const auto id = value_id_.find(value_name);
      std::vector<int>& values = target_values_[*seen.gradient_target];
      if (id != value_id_.end() && std::find(values.begin(), values.end(), id->second) == values.end())
        values.push_back(id->second);
    }
    if (t.shape.empty() && t.dtype.empty()) {
      t.shape = seen.shape;
      t.dtype = seen.dtype;
      if (t.name.empty()) t.name = name;
    }
  }

  // A save names the storage live at its pointer and the forward node whose
  // step made it; its release, the step that let it go.
  void saved(const SavedTensorEvent& event, const IterationRecord& record) {
    if (event.storage_ptr) {
      const auto it = live_.find(event.storage_ptr);
      if (it == live_.end()) return;  // not a storage this iteration tracks (another device)
      const StepTiming* step = event.step >= 0 ? &record.steps[event.step] : nullptr;
      const int node = step && step->phase == Phase::Forward ? step->node : -1;
      open_saves_[event.save_id] = OpenSave{it->second, node};
      return;
    }
    const auto it = open_saves_.find(event.save_id);
    if (it == open_saves_.end()) return;  // saved before the iteration
    profile_.tensors[it->second.tensor].saved_by->push_back({it->second.node, event.step});
    open_saves_.erase(it);
  }

  // Every hook call that reports a storage made during the iteration for an
  // edge that leads to a value names it as that value's gradient: its maker
  // (the node that made it, for the input it is for; every input where one
  // call hands on views of one storage, a concatenation's backward), every
  // node that hands it on unchanged (an add's backward passes the gradient it
  // received to both its inputs, which the engine then sums into, in place),
  // and the node that receives it (a sum the engine made is reported only
  // there). A report for an edge that leads to no value (an autograd node
  // inside one graph node, a linear's transpose of its weight) names nothing.
  void gradient(const GradientReport& report) {
    const auto live = live_.find(report.storage_ptr);
    if (live == live_.end()) return;
    TensorRecord& t = profile_.tensors[live->second];
    if (t.alloc_event < 0 || !t.gradient_of) return;
    const auto values = target_values_.find(report.target);
    if (values == target_values_.end()) return;
    for (int value : values->second)
      if (std::find(t.gradient_of->begin(), t.gradient_of->end(), value) == t.gradient_of->end())
        t.gradient_of->push_back(value);
  }

  struct OpenSave {
    int tensor = -1;
    int node = -1;
  };

  Profile& profile_;
  const bool gradients_recorded_;
  std::unordered_map<std::string, int> value_id_;
  std::map<GradientTarget, std::vector<int>> target_values_;  // the values each autograd output is
  std::map<uint64_t, OpenSave> open_saves_;  // ordered: saves left open are listed in save order
  std::unordered_map<const void*, int> live_;
  std::unordered_map<int, const void*> ptr_at_end_;
  std::unordered_map<std::string, int> value_tensor_;
  std::unordered_map<std::string, ObservedValue> observed_value_;
};

// The nodes that may write each storage in place (cut facts' writes), in node order.
std::unordered_map<int, std::vector<int>> writersOfTensor(const Profile& profile, const TensorBook& book) {
  std::unordered_map<int, std::vector<int>> writers;
  for (const ForwardNode& node : profile.nodes)
    for (int v : node.writes) {
      if (v < 0 || v >= static_cast<int>(profile.values.size())) continue;
      for (int t : book.tensorsOfValue(profile.values[v].name)) {
        std::vector<int>& of_tensor = writers[t];
        if (of_tensor.empty() || of_tensor.back() != node.id) of_tensor.push_back(node.id);
      }
    }
  return writers;
}

// Whether a value on `tensor` needed grad once every later in-place write was
// done, as the run saw the writes' results; nullopt where a write after the
// producer left no observed result on the tensor (the graph's answer stands).
// A write adds grad only by writing a value that needs it, and then its result
// (the written view, the same tensor) needs grad too: x[m] = 1.0 keeps a
// mask built by new_zeros free of grad, x.copy_(y) gives it y's.
std::optional<bool> neededGradAfterWrites(const Profile& profile, const TensorBook& book, int tensor,
                                          const std::vector<int>& writers, int producer_node, bool seen_requires_grad) {
  bool needs = seen_requires_grad;
  for (int writer : writers) {
    if (writer <= producer_node) continue;
    bool observed = false;
    for (const std::string& output : profile.nodes[writer].outputs) {
      const ObservedValue* result = book.observedValue(output);
      if (!result || book.tensorOfValue(output) != tensor) continue;
      observed = true;
      needs = needs || result->requires_grad;
    }
    if (!observed) return std::nullopt;
  }
  return needs;
}

// The graph's cut facts (profile.nodes and profile.values already hold them)
// completed with what the run observed: how many bytes a copy of each value
// takes, and whether it needed grad. The graph can only say a value may need
// grad (an op's output does unless proven otherwise); the run saw it right
// after its node ran, and the result of each node that wrote its storage in
// place later (x.copy_(y) where y needs grad makes x need it); where a later
// write left no result the run saw, the graph's answer stands.
void fillObservedValueFacts(Profile& profile, const TensorBook& book, const std::vector<int64_t>& input_bytes) {
  const std::unordered_map<int, std::vector<int>> writers = writersOfTensor(profile, book);
  for (GraphValue& value : profile.values) {
    value.needs_grad = value.requires_grad;
    if (value.producer_node < 0) {
      const int input_index = value.id - 1;  // value 0 is the module itself
      if (input_index >= 0 && input_index < static_cast<int>(input_bytes.size()))
        value.bytes = input_bytes[input_index];
      continue;
    }
    const ObservedValue* seen = book.observedValue(value.name);
    if (!seen) continue;
    value.bytes = seen->bytes;
    const int tensor = book.tensorOfValue(value.name);
    const auto written = writers.find(tensor);
    if (written == writers.end()) {
      value.needs_grad = seen->requires_grad;
      continue;
    }
    if (const std::optional<bool> needs = neededGradAfterWrites(profile, book, tensor, written->second,
                                                                value.producer_node, seen->requires_grad))
      value.needs_grad = *needs;
  }
}

void fillNodes(Profile& profile, const IterationRecord& record, const std::vector<double>& step_time_us) {
  // Forward steps carry the next autograd sequence number at their marker; every
  // autograd node created while the step ran has a number in [that, next marker's).
  std::vector<std::pair<int64_t, int>> sequence_starts;  // (sequence at marker, node)
  for (size_t s = 0; s < record.steps.size(); ++s) {
    const StepTiming& step = record.steps[s];
    if (step.phase == Phase::Loss) sequence_starts.emplace_back(step.sequence_at_start, -1);
    if (step.phase != Phase::Forward || step.node < 0) continue;
    ForwardNode& n = profile.nodes[step.node];
    n.forward_step = static_cast<int>(s);
    n.forward_time_us = step_time_us[s];
    sequence_starts.emplace_back(step.sequence_at_start, step.node);
  }
  std::sort(sequence_starts.begin(), sequence_starts.end());
  for (size_t s = 0; s < record.steps.size(); ++s) {
    const StepTiming& step = record.steps[s];
    if (step.phase != Phase::Backward || step.autograd_sequence_nr < 0) continue;
    auto it = std::upper_bound(sequence_starts.begin(), sequence_starts.end(),
                               std::make_pair(step.autograd_sequence_nr, std::numeric_limits<int>::max()));
    if (it == sequence_starts.begin()) continue;
    const int node = std::prev(it)->second;
    if (node < 0) continue;  // created by the loss, after forward
    profile.steps[s].node = node;
    profile.nodes[node].backward_steps.push_back(static_cast<int>(s));
  }
}

}  // namespace

void deriveProfile(Profile& profile, const MeasuredIteration& iteration) {
  const IterationRecord& record = iteration.record;
  const std::vector<double>& step_time_us = iteration.step_time_us;
  profile.event_count = static_cast<int>(record.events.size());
  for (size_t s = 0; s < record.steps.size(); ++s) {
    const StepTiming& timing = record.steps[s];
    Step step;
    step.index = static_cast<int>(s);
    step.phase = timing.phase;
    step.node = timing.node;
    step.op = timing.node >= 0 ? profile.nodes[timing.node].kind : timing.op;
    step.scope = timing.node >= 0 ? profile.nodes[timing.node].scope : "";
    step.first_event = timing.first_event;
    step.time_us = step_time_us[s];
    profile.steps.push_back(std::move(step));
  }
  fillNodes(profile, record, step_time_us);
  for (Step& step : profile.steps)
    if (step.phase == Phase::Backward && step.node >= 0) step.scope = profile.nodes[step.node].scope;

  // The allocator's own counter, per step and at the start.
  if (!record.events.empty())
    profile.meta.allocator_bytes_at_start = record.events[0].allocator_total - record.events[0].delta_bytes;
  int64_t allocator_now = profile.meta.allocator_bytes_at_start;
  profile.summary.allocator_peak_bytes = allocator_now;
  for (size_t s = 0; s < profile.steps.size(); ++s) {
    Step& step = profile.steps[s];
    const int end = stepEndEvent(profile, static_cast<int>(s));
    step.allocator_peak_bytes = allocator_now;
    for (int e = step.first_event; e < end; ++e) {
      allocator_now = record.events[e].allocator_total;
      step.allocator_peak_bytes = std::max(step.allocator_peak_bytes, allocator_now);
    }
    step.allocator_bytes = allocator_now;
    profile.summary.allocator_peak_bytes = std::max(profile.summary.allocator_peak_bytes, step.allocator_peak_bytes);
  }
  // Reserved bytes only where the allocator reports them: a caching allocator
  // (CUDA) reserves more than it allocates; the CPU allocator reports 0.
  int64_t reserved_peak = 0;
  for (const AllocationEvent& event : record.events) reserved_peak = std::max(reserved_peak, event.allocator_reserved);
  if (reserved_peak > 0) profile.summary.reserved_peak_bytes = reserved_peak;

  // Tensors: statics first, then every allocation of the measured iteration.
  TensorBook book(profile, iteration.statics, iteration.record.gradients_recorded);
  book.replay(record);
  fillObservedValueFacts(profile, book, iteration.input_bytes);
  // Forward argument i is graph value i + 1 (value 0 is the module itself).
  for (size_t i = 0; i < iteration.input_ptrs.size() && i + 1 < profile.values.size(); ++i)
    if (iteration.input_ptrs[i]) book.bindValue(profile.values[i + 1].name, iteration.input_ptrs[i]);
  // Which storage each value was: a weight read through several values is one
  // storage (the planner's weightReadAs), a tensor passed on unchanged another
  // value on the same one (passedOnFrom).
  for (GraphValue& value : profile.values) value.tensor = book.tensorOfValue(value.name);
  for (TensorRecord& t : profile.tensors) {
    if (t.free_event == -2) {
      t.free_event = profile.event_count;
      t.free_step = -1;
    }
    if (t.alloc_event < 0) continue;
    const Phase alloc_phase = profile.steps[t.alloc_step].phase;
    if (alloc_phase == Phase::Forward) t.producer_node = profile.steps[t.alloc_step].node;
    const bool alive_at_end = t.free_event == profile.event_count;
    const void* ptr = alive_at_end ? book.ptrAtEnd(t.id) : nullptr;
    const Phase free_phase = alive_at_end ? Phase::Optimizer : profile.steps[t.free_step].phase;
    if (ptr && iteration.gradient_ptrs.count(ptr))
      t.category = Category::Gradient;
    else if (ptr && iteration.output_ptrs.count(ptr))
      t.category = Category::Output;
    else if (alive_at_end && alloc_phase == Phase::Optimizer)
      t.category = Category::OptimizerState;
    else if (alloc_phase == Phase::Forward && (alive_at_end || free_phase != Phase::Forward))
      t.category = Category::Activation;
    else
      t.category = Category::Temporary;
  }

  // The CUDA caching allocator counts every live block on the device, including
  // what was there before the iteration and is not a weight, input or optimizer
  // state (cuBLAS/cuDNN workspaces, tensors a previous iteration left alive).
  // One record for it keeps the categories adding up to the allocator's bytes.
  // (The CPU allocator counts only what it saw while profiling was on.)
  if (profile.meta.run.device.rfind("cuda", 0) == 0) {
    int64_t known_static_bytes = 0;
    for (const TensorRecord& t : profile.tensors)
      if (t.alloc_event < 0) known_static_bytes += t.bytes;
    const int64_t unattributed = profile.meta.allocator_bytes_at_start - known_static_bytes;
    if (unattributed > 0) {
      TensorRecord t;
      t.id = static_cast<int>(profile.tensors.size());
      t.bytes = unattributed;
      t.category = Category::Temporary;
      t.name = "live before the iteration (allocator workspaces and leftovers)";
      t.device = profile.meta.run.device;
      t.alloc_event = -1;
      t.free_event = profile.event_count;
      profile.tensors.push_back(std::move(t));
    }
  }

  // Readers of each storage: the nodes whose reads (list and tuple elements
  // included) name a value on it. Duplicable nodes only pass values on to
  // their readers, which are the real users.
  for (const ForwardNode& node : profile.nodes) {
    if (node.role == CutRole::Duplicable) continue;
    std::set<int> tensors_read;
    for (int v : node.reads)
      for (int t : book.tensorsOfValue(profile.values[v].name)) tensors_read.insert(t);
    for (int t : tensors_read) profile.tensors[t].users.push_back(node.id);
  }
  for (TensorRecord& t : profile.tensors) {
    for (int user : t.users)
      t.last_forward_use_step = std::max(t.last_forward_use_step, profile.nodes[user].forward_step);
    std::vector<int> related = t.users;
    if (t.producer_node >= 0) related.push_back(t.producer_node);
    for (int node : related)
      for (int step : profile.nodes[node].backward_steps)
        if (t.first_backward_use_step < 0 || step < t.first_backward_use_step) t.first_backward_use_step = step;
  }

  timelineFromTensors(profile);
}

}  // namespace acprof
