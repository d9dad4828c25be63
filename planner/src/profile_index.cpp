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

  step_first_event.reserve(step_count + 1);
  for (const Step& s : p.steps) step_first_event.push_back(s.first_event);
  step_first_event.push_back(event_count);

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
    // gradients memory_rules.cpp holds to the end of a checkpoint's backward, so that the peak tracker
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
