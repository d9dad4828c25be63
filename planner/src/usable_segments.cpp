#include "usable_segments.h"

namespace acprof {

UsableSegments::UsableSegments(const Simulator& simulator, SegmentChoice choice)
    : simulator_(simulator), index_(simulator.index()), choice_(choice) {}

bool UsableSegments::usable(int first, int last) {
  const uint64_t key = (static_cast<uint64_t>(first) << 32) | static_cast<uint32_t>(last);
  if (const auto known = judged_.find(key); known != judged_.end()) return known->second;
  const NodeRange range{index_.compute_nodes[first], index_.compute_nodes[last]};
  bool usable = legal(first, last);
  if (usable) {
    const SegmentTiming timing = segmentSpan(index_, range);
    usable = timing.has_backward && freesSomethingEarlier(timing);
  }
  judged_.emplace(key, usable);
  return usable;
}

bool UsableSegments::legal(int first, int last) {
  const int last_node = index_.compute_nodes[last];
  if (!row_ || row_first_ != first || row_last_node_ > last_node) {
    row_.emplace(index_.rules, index_.compute_nodes[first]);
    row_first_ = first;
  }
  row_->extendTo(last_node);
  row_last_node_ = last_node;
  return row_->legal();
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
