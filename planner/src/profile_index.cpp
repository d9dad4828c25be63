#include "profile_index.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace acprof {

FlatLists FlatLists::fromLists(const std::vector<std::vector<int>>& lists) {
  FlatLists flat;
  flat.offsets.reserve(lists.size() + 1);
  for (const std::vector<int>& list : lists) {
    flat.items.insert(flat.items.end(), list.begin(), list.end());
    flat.offsets.push_back(static_cast<int>(flat.items.size()));
  }
  return flat;
}

namespace {

// The value whose tensor a node passed on unchanged as `value`, or -1. The
// profile does not say which outputs alias which inputs, so this reads it
// from what it does record, never from the op's name: the node's one input is
// an aggregate a Duplicable node built (a tuple or list construct), so its
// reads list that aggregate's elements in place of it (ForwardNode::reads) and
// none of them is the input itself; it has as many outputs as reads, the one
// at value's position on the storage the read there was on in the recorded
// run (GraphValue::tensor), with its size (a view of a piece is not the
// tensor) and need of grad; and it allocated nothing and made no autograd
// node (a view of a tensor that needs grad would have one). A TupleUnpack or
// ListUnpack of a tuple or list built from tensors is such a node: a traced LSTMCell returns
// (h, c) as a tuple and unpacks it, so the c read after the cell is another
// value on the c its tanh read.
int passedOnFrom(const Profile& p, const FlatLists& produced, const GraphValue& value) {
  const int n = value.producer_node;
  if (n < 0 || n >= static_cast<int>(p.nodes.size()) || !value.is_tensor) return -1;
  const ForwardNode& node = p.nodes[n];
  if (node.inputs.size() != 1 || node.reads.size() != node.outputs.size() || produced.begin(n) != produced.end(n) ||
      !node.backward_steps.empty())
    return -1;
  for (int r : node.reads)
    if (r < 0 || r >= static_cast<int>(p.values.size()) || p.values[r].name == node.inputs[0]) return -1;
  const auto at = std::find(node.outputs.begin(), node.outputs.end(), value.name);
  if (at == node.outputs.end()) return -1;
  const GraphValue& read = p.values[node.reads[at - node.outputs.begin()]];
  if (!read.is_tensor || read.tensor < 0 || read.tensor != value.tensor || read.bytes != value.bytes ||
      read.requires_grad != value.requires_grad)
    return -1;
  return read.id;
}

}  // namespace

ProfileIndex::ProfileIndex(const Profile& p)
    : profile(p),
      event_count(p.event_count),
      node_count(static_cast<int>(p.nodes.size())),
      step_count(static_cast<int>(p.steps.size())),
      rules(cutRulesOf(p)) {
  forward_time_before.assign(node_count + 1, 0);
  for (int n = 0; n < node_count; ++n) forward_time_before[n + 1] = forward_time_before[n] + p.nodes[n].forward_time_us;
  for (const ForwardNode& node : p.nodes)
    if (node.role == CutRole::Compute) compute_nodes.push_back(node.id);

  step_first_event.reserve(step_count);
  step_end_event.reserve(step_count);
  for (int s = 0; s < step_count; ++s) {
    step_first_event.push_back(p.steps[s].first_event);
    step_end_event.push_back(acprof::stepEndEvent(p, s));
  }

  std::vector<std::vector<int>> produced(node_count), used(node_count), allocated(event_count), freed(event_count);
  last_user_node.assign(p.tensors.size(), -1);
  for (const TensorRecord& t : p.tensors) {
    if (t.producer_node >= 0) produced[t.producer_node].push_back(t.id);
    for (int user : t.users) {
      used[user].push_back(t.id);
      last_user_node[t.id] = std::max(last_user_node[t.id], user);
    }
    if (t.alloc_event >= 0 && t.alloc_event < event_count) allocated[t.alloc_event].push_back(t.id);
    if (t.free_event < event_count) freed[t.free_event].push_back(t.id);
  }
  for (std::vector<int>& list : produced)
    std::stable_sort(list.begin(), list.end(),
                     [&](int a, int b) { return p.tensors[a].alloc_event < p.tensors[b].alloc_event; });
  for (std::vector<int>& list : used) list.erase(std::unique(list.begin(), list.end()), list.end());
  tensors_produced_by_node = FlatLists::fromLists(produced);
  tensors_used_by_node = FlatLists::fromLists(used);
  tensors_allocated_at_event = FlatLists::fromLists(allocated);
  tensors_freed_at_event = FlatLists::fromLists(freed);

  std::vector<std::vector<int>> received(node_count);
  for (const TensorRecord& t : p.tensors) {
    if (t.producer_node >= 0 || t.alloc_step < 0 || t.free_step < 0 || t.free_step >= step_count) continue;
    const int consumer = p.steps[t.free_step].node;
    if (consumer < 0 || consumer >= node_count || p.steps[t.free_step].phase != Phase::Backward) continue;
    // Made before it is freed, in backward or earlier (the loss's gradient is made in the Loss phase): the
    // gradients [received-gradients-held] holds to the end of a checkpoint's backward, so that the peak tracker
    // recomputes every tensor whose interval a segment changes.
    if (t.alloc_step < t.free_step) received[consumer].push_back(t.id);
  }
  gradients_received_by_node = FlatLists::fromLists(received);

  std::vector<std::vector<int>> made_in_backward(node_count);
  for (const TensorRecord& t : p.tensors) {
    if (t.producer_node >= 0 || t.alloc_step < 0 || t.alloc_step >= step_count) continue;
    const Step& step = p.steps[t.alloc_step];
    if (step.phase == Phase::Backward && step.node >= 0 && step.node < node_count) made_in_backward[step.node].push_back(t.id);
  }
  for (std::vector<int>& list : made_in_backward)
    std::stable_sort(list.begin(), list.end(),
                     [&](int a, int b) { return p.tensors[a].alloc_event < p.tensors[b].alloc_event; });
  backward_allocations_by_node = FlatLists::fromLists(made_in_backward);

  std::vector<std::vector<int>> readers(p.values.size());
  for (const ForwardNode& n : p.nodes)
    for (int v : n.reads)
      if (v >= 0 && v < static_cast<int>(readers.size())) readers[v].push_back(n.id);
  readers_of_value = FlatLists::fromLists(readers);

  const int value_count = static_cast<int>(p.values.size());
  same_tensor_as.resize(value_count);
  std::vector<int> passed_from(value_count, -1);
  for (const GraphValue& v : p.values)
    if (v.id >= 0 && v.id < value_count) passed_from[v.id] = passedOnFrom(p, tensors_produced_by_node, v);
  std::vector<std::vector<int>> aliases(value_count);
  for (int v = 0; v < value_count; ++v) {
    int root = v;
    // A read precedes the node that reads it, so the chain ends; the bound guards a malformed profile.
    for (int hops = 0; passed_from[root] >= 0 && hops < value_count; ++hops)
      root = passed_from[root];
    same_tensor_as[v] = root;
    if (root != v) aliases[root].push_back(v);
  }
  aliases_of_value = FlatLists::fromLists(aliases);

  first_backward_step.assign(node_count, -1);
  last_backward_step.assign(node_count, -1);
  for (const ForwardNode& n : p.nodes) {
    for (int s : n.backward_steps) {
      if (first_backward_step[n.id] < 0 || s < first_backward_step[n.id]) first_backward_step[n.id] = s;
      last_backward_step[n.id] = std::max(last_backward_step[n.id], s);
    }
  }
}

int ProfileIndex::computeNodeAtOrAfter(int node) const {
  return static_cast<int>(std::lower_bound(compute_nodes.begin(), compute_nodes.end(), node) - compute_nodes.begin());
}

int ProfileIndex::computeNodeAtOrBefore(int node) const {
  return static_cast<int>(std::upper_bound(compute_nodes.begin(), compute_nodes.end(), node) - compute_nodes.begin()) - 1;
}

}  // namespace acprof
