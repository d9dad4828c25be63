// Lookups over a profile that the simulator and every solver need, built once
// so that simulating a decision never searches the profile.
#pragma once

#include <climits>
#include <cstdint>
#include <vector>

#include "acprof/cut_rules.h"
#include "acprof/profile_format.h"

namespace acprof {

// A list of lists stored flat: item i owns [offsets[i], offsets[i+1]).
struct FlatLists {
  std::vector<int> offsets{0};
  std::vector<int> items;
  const int* begin(int i) const { return items.data() + offsets[i]; }
  const int* end(int i) const { return items.data() + offsets[i + 1]; }
  static FlatLists fromLists(const std::vector<std::vector<int>>& lists);
};

class ProfileIndex {
 public:
  explicit ProfileIndex(const Profile& profile);

  const Profile& profile;
  int event_count = 0;
  int node_count = 0;
  int step_count = 0;

  // Each step's events are [step_first_event, stepEndEvent) (profile_format.h's).
  std::vector<int> step_first_event;
  std::vector<int> step_end_event;
  int stepEndEvent(int step) const { return step_end_event[step]; }

  FlatLists tensors_produced_by_node;  // producer_node == node, by alloc event
  FlatLists tensors_used_by_node;      // node is in the tensor's users
  FlatLists tensors_allocated_at_event;
  FlatLists tensors_freed_at_event;
  std::vector<int> last_user_node;     // per tensor, -1 if no forward node reads it
  // Per node: tensors not made by a forward node, made before the node's
  // backward ran and freed by one of its backward steps - the gradients it
  // received, the loss's gradient included.
  FlatLists gradients_received_by_node;
  // Per node: tensors its backward steps made (not views or forward outputs),
  // by alloc event.
  FlatLists backward_allocations_by_node;
  // Per value: the nodes that read it (ForwardNode::reads), in node order, once per read.
  FlatLists readers_of_value;
  // Per value: the value whose tensor it is, itself unless a node passed that
  // tensor on unchanged as this value (profile_index.cpp, passedOnFrom): an
  // unpack of a tuple or list built from it. Followed to the first value.
  std::vector<int> same_tensor_as;
  // Per value v with same_tensor_as[v] == v: the other values that are its
  // tensor, in value order (empty for the others).
  FlatLists aliases_of_value;

  // Per node: first/last backward step it created (-1: none).
  std::vector<int> first_backward_step;
  std::vector<int> last_backward_step;
  // The one legality model (acprof/cut_rules.h) over the profile's graph facts.
  CutRules rules;

  // Forward time of nodes [0, n): a range's recompute time in O(1).
  std::vector<double> forward_time_before;
  double forwardTime(int first_node, int last_node) const {
    return forward_time_before[last_node + 1] - forward_time_before[first_node];
  }
  // The compute nodes (CutRole::Compute), in order: where the searching solvers put segment ends.
  std::vector<int> compute_nodes;
  int computeNodeAtOrAfter(int node) const;   // index into compute_nodes; compute_nodes.size() if none
  int computeNodeAtOrBefore(int node) const;  // index into compute_nodes; -1 if none

  bool isStatic(int tensor) const { return profile.tensors[tensor].alloc_event < 0; }
  bool outlivesIteration(int tensor) const { return profile.tensors[tensor].free_event >= event_count; }
  Phase phaseOfStep(int step) const { return profile.steps[step].phase; }
};

}  // namespace acprof
