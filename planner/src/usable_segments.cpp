#include "usable_segments.h"

namespace acprof {

UsableSegments::UsableSegments(const Simulator& simulator, SegmentChoice choice)
    : simulator_(simulator), index_(simulator.index()), choice_(choice) {}

bool UsableSegments::usable(int first, int last) {
  const uint64_t key = (static_cast<uint64_t>(first) << 32) | static_cast<uint32_t>(last);
  if (const auto known = judged_.find(key); known != judged_.end()) return known->second;
  const NodeRange range{index_.compute_nodes[first], index_.compute_nodes[last]};
  bool usable = simulator_.segmentProblem(range).empty();
  if (usable) {
    const SegmentTiming timing = segmentTiming(index_, range);
    usable = timing.has_backward && freesSomethingEarlier(timing);
  }
  judged_.emplace(key, usable);
  return usable;
}

bool UsableSegments::freesSomethingEarlier(const SegmentTiming& timing) const {
  for (int n = timing.range.first_node; n <= timing.range.last_node; ++n)
    for (const int* t = index_.tensors_produced_by_node.begin(n); t != index_.tensors_produced_by_node.end(n); ++t)
      if (choice_ == SegmentChoice::EveryEarlierFree ? checkpointMayFreeEarlier(index_, *t, timing)
                                                      : droppedByCheckpoint(insideRole(index_, *t, timing)))
        return true;
  return false;
}

}  // namespace acprof
