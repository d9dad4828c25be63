// The ranges the greedy (solver_mu_two.cpp) and the refinement of its plan
// (solver_refined.cpp) consider as segments, and a memo of which of them can
// be one. Both solvers start from the same candidates, one per activation, and
// judge a range's legality the same way, so a range the greedy refused is
// refused by the refinement's moves too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "acprof/simulator.h"
#include "memory_rules.h"
#include "profile_index.h"

namespace acprof {

// Recomputing one activation: [its producer, its last forward reader], one per activation.
inline std::vector<NodeRange> activationRanges(const ProfileIndex& index) {
  std::vector<NodeRange> ranges;
  for (const TensorRecord& t : index.profile.tensors) {
    if (t.category != Category::Activation || t.producer_node < 0) continue;
    ranges.push_back({t.producer_node, std::max(t.producer_node, index.last_user_node[t.id])});
  }
  return ranges;
}

// Whether a range can be a segment: the cut rules allow it and its backward
// runs. Remembered per range: the greedy scores the same merged ranges again
// after every choice, and the moves try the same shifts in every sweep (a
// fifth of the floor search's time at 10k nodes went to the cut rules).
class UsableRanges {
 public:
  explicit UsableRanges(const Simulator& simulator) : simulator_(simulator) {}
  bool usable(const NodeRange& r) {
    const int64_t key = (static_cast<int64_t>(r.first_node) << 32) | static_cast<uint32_t>(r.last_node);
    const auto [it, inserted] = known_.try_emplace(key, false);
    if (inserted)
      it->second = simulator_.index().rules.allows(r.first_node, r.last_node) && segmentSpan(simulator_.index(), r).has_backward;
    return it->second;
  }

 private:
  const Simulator& simulator_;
  std::unordered_map<int64_t, bool> known_;
};

}  // namespace acprof
