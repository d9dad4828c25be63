#include "segment_set_search.h"

#include <algorithm>

#include "memory_rules.h"
#include "plan_order.h"

namespace acprof {
namespace {

// How often (in visited search nodes) the clock is read.
constexpr long kClockInterval = 256;

}  // namespace

SegmentSetSearch::SegmentSetSearch(const Simulator& simulator, int64_t budget_bytes, const RecomputeDecision& start,
                                   UsableSegments& usable)
    : simulator_(simulator), index_(simulator.index()), budget_bytes_(budget_bytes), usable_(usable), tracker_(index_) {
  collectSettledLeaves();
  tracker_.replace({}, start);
  for (const NodeRange& r : start) time_ += rangeTime(r);
}

bool SegmentSetSearch::improveWindow(int lo, int hi) {
  hi = std::min(hi, computeNodeCount());
  if (lo >= hi || stopped_) return !stopped_;
  // Widen to whole segments, and take the window's segments out of the tracker.
  std::vector<NodeRange> inside;
  for (const NodeRange& r : tracker_.decision()) {
    if (r.last_node < index_.compute_nodes[lo] || r.first_node > index_.compute_nodes[hi - 1]) continue;
    inside.push_back(r);
    lo = std::min(lo, index_.computeNodeAtOrAfter(r.first_node));
    hi = std::max(hi, index_.computeNodeAtOrBefore(r.last_node) + 1);
  }
  const int64_t peak_before = tracker_.peakBytes();
  tracker_.replace(inside, {});
  double outside_time = time_;
  for (const NodeRange& r : inside) outside_time -= rangeTime(r);
  best_peak_ = peak_before;
  best_time_ = time_;
  best_window_ = inside;
  window_hi_ = hi;
  collectSegmentEnds(lo, hi);
  chosen_.clear();
  if (!stopped_) search(lo, outside_time);
  tracker_.replace({}, best_window_);
  time_ = best_time_;
  return !stopped_;
}

bool SegmentSetSearch::better(int64_t peak, double time) const {
  return betterForBudget(peak, time, best_peak_, best_time_, budget_bytes_);
}

bool SegmentSetSearch::pastDeadline() {
  if (!stopped_ && Clock::now() > deadline_) stopped_ = true;
  return stopped_;
}

bool SegmentSetSearch::outOfTime() {
  if (stopped_) return true;
  if (visits_left_ >= 0 && --visits_left_ < 0) stopped_ = true;
  if (++visited_ % kClockInterval == 0 && Clock::now() > deadline_) stopped_ = true;
  return stopped_;
}

// For each compute node of the window, the compute nodes of the window a
// segment starting there may end at (usable_segments.h).
void SegmentSetSearch::collectSegmentEnds(int lo, int hi) {
  segment_ends_.assign(computeNodeCount(), {});
  // The clock, not outOfTime(): listing the ends is not a search step, and
  // on a whole 10k-node graph one first node takes about a second, so
  // counting 256 of them between clock reads ran --time-limit 10 for 340 s.
  for (int i = lo; i < hi && !pastDeadline(); ++i)
    for (int j = i; j < hi && ((j - i) % kClockInterval != 0 || !pastDeadline()); ++j)
      if (usable_.usable(i, j)) segment_ends_[i].push_back(j);
}

// Segments that start at compute node i or later change the timeline only
// between the forward of node i and the end of the backward of the nodes
// from i on (docs/memory-model.md: every changed interval and recompute block of a
// segment lies between its forward and its backward's end, or the original
// free of an internal activation it makes). Outside that window the live
// bytes of a partial decision are final: the bound that prunes the search.
void SegmentSetSearch::collectSettledLeaves() {
  const int count = computeNodeCount();
  const int E = index_.event_count;
  settled_forward_end_.assign(count + 1, leafCount(E));
  settled_backward_begin_.assign(count + 1, 0);
  int forward_end = leafCount(E), backward_begin = 0;
  for (int i = count - 1; i >= 0; --i) {
    const int first = index_.compute_nodes[i];
    const int last = i + 1 < count ? index_.compute_nodes[i + 1] - 1 : index_.node_count - 1;
    for (int n = first; n <= last; ++n) {
      const int fs = index_.profile.nodes[n].forward_step;
      if (fs >= 0) forward_end = std::min(forward_end, blockLeaf(index_.step_first_event[fs]));
      if (index_.last_backward_step[n] >= 0)
        backward_begin = std::max(backward_begin, blockLeaf(index_.stepEndEvent(index_.last_backward_step[n])) + 1);
      for (const int* t = index_.tensors_produced_by_node.begin(n); t != index_.tensors_produced_by_node.end(n); ++t) {
        // Only an internal activation keeps its own free time (its recomputed copy lives until then).
        const TensorRecord& tensor = index_.profile.tensors[*t];
        if (tensor.free_step >= 0 && index_.phaseOfStep(tensor.free_step) == Phase::Backward)
          backward_begin = std::max(backward_begin, eventLeaf(tensor.free_event) + 1);
      }
    }
    settled_forward_end_[i] = forward_end;
    settled_backward_begin_[i] = backward_begin;
  }
}

// The peak no completion of the current partial decision can go below
// (with the segments after the window fixed, the same argument holds).
int64_t SegmentSetSearch::settledPeak(int i) const {
  const int64_t before = tracker_.peakBytesIn(0, settled_forward_end_[i]);
  const int64_t after = tracker_.peakBytesIn(settled_backward_begin_[i], leafCount(index_.event_count));
  return std::max(before, after);
}

// Whether no completion of the current partial decision can beat the best plan.
bool SegmentSetSearch::hopeless(int i, double time_us) const {
  if (fits(best_peak_) && time_us >= best_time_) return true;
  const int64_t bound = settledPeak(i);
  if (fits(best_peak_)) return bound > budget_bytes_;
  return bound > best_peak_ || (bound == best_peak_ && time_us >= best_time_);
}

// Decides compute node `i` onwards: either no segment starts there, or one
// starts there and ends at one of its legal ends. Extra time only grows
// along a branch, so once a plan fits no branch at or above its time can win.
void SegmentSetSearch::search(int i, double time_us) {
  if (outOfTime()) return;
  if (i == window_hi_) {
    ++leaves_;
    const int64_t peak = tracker_.peakBytes();
    if (better(peak, time_us)) {
      best_peak_ = peak;
      best_time_ = time_us;
      best_window_ = chosen_;
    }
    return;
  }
  if (hopeless(i, time_us)) return;
  search(i + 1, time_us);
  for (int j : segment_ends_[i]) {
    const NodeRange range{index_.compute_nodes[i], index_.compute_nodes[j]};
    tracker_.replace({}, {range});
    chosen_.push_back(range);
    search(j + 1, time_us + rangeTime(range));
    chosen_.pop_back();
    tracker_.replace({range}, {});
    if (stopped_) return;
  }
}

}  // namespace acprof
