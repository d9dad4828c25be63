#include "usable_segments.h"

namespace acprof {

UsableSegments::UsableSegments(const Simulator& simulator, SegmentChoice choice)
    : index_(simulator.index()), choice_(choice) {}

bool UsableSegments::usable(int first, int last) {
  // Where collectSegmentEnds begins a row, known or not.
  if (first == last) {
    row_.emplace(index_.rules, index_.compute_nodes[first]);
    row_first_ = first;
    row_last_node_ = index_.compute_nodes[first] - 1;
  }
  if (judged_.size() <= static_cast<size_t>(first)) judged_.resize(first + 1);
  std::vector<int8_t>& row = judged_[first];
  const size_t offset = static_cast<size_t>(last - first);
  if (row.size() <= offset) row.resize(offset + 1, -1);
  if (row[offset] >= 0) return row[offset] == 1;
  const NodeRange range{index_.compute_nodes[first], index_.compute_nodes[last]};
  bool usable = legal(first, last);
  if (usable) {
    const SegmentSpan span = segmentSpan(index_, range);
    usable = span.has_backward && freesSomethingEarlier(span);
  }
  row[offset] = usable ? 1 : 0;
  return usable;
}

bool UsableSegments::legal(int first, int last) {
  const int last_node = index_.compute_nodes[last];
  if (!row_ || row_first_ != first || row_last_node_ > last_node) {
    // Asked out of row order (the repairs and refinements): one range alone.
    return index_.rules.allows(index_.compute_nodes[first], last_node);
  }
  row_->extendTo(last_node);
  row_last_node_ = last_node;
  return row_->legal();
}

bool UsableSegments::freesSomethingEarlier(const SegmentSpan& span) const {
  for (int n = span.range.first_node; n <= span.range.last_node; ++n)
    for (const int* t = index_.tensors_produced_by_node.begin(n); t != index_.tensors_produced_by_node.end(n); ++t)
      if (choice_ == SegmentChoice::EveryEarlierFree ? checkpointMayFreeEarlier(index_, *t, span)
                                                      : droppedByCheckpoint(insideRole(index_, *t, span)))
        return true;
  return false;
}

}  // namespace acprof
