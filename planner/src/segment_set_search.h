// The exact search over segment sets that the optimal solver
// (solver_optimal.cpp) runs on the whole graph and the window search
// (window_search.cpp) runs on windows of it. It holds a current decision;
// improveWindow searches every set of segments inside a range of compute
// nodes, depth first with the peak tracker, with the rest of the decision
// fixed, pruned by extra time once a plan fits and by the peak no completion
// can go below, and keeps the best set only if the whole plan gets better
// for the budget (plan_order.h). Exponential in the window's compute nodes:
// a deadline and an allowance of search steps bound it, and a stopped search
// keeps the best plan found so far.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "acprof/simulator.h"
#include "peak_tracker.h"
#include "profile_index.h"
#include "usable_segments.h"

namespace acprof {

class SegmentSetSearch {
 public:
  using Clock = std::chrono::steady_clock;

  // `usable` says which ranges may be segments (and which kind it tries); it
  // may be shared by searches on one thread, and must outlive this one.
  SegmentSetSearch(const Simulator& simulator, int64_t budget_bytes, const RecomputeDecision& start,
                   UsableSegments& usable);

  void stopAt(Clock::time_point deadline) { deadline_ = deadline; }
  // A fresh allowance of search steps for the next window, after a window
  // that spent its own: the search goes on (without a clock, as the window
  // search runs, nothing else stops it).
  void allowVisits(long visits) {
    visits_left_ = visits;
    stopped_ = false;
  }
  long visitsLeft() const { return std::max(visits_left_, 0L); }
  long plansJudged() const { return leaves_; }
  int computeNodeCount() const { return static_cast<int>(index_.compute_nodes.size()); }
  RecomputeDecision decision() const { return tracker_.decision(); }

  // Searches every segment set inside compute nodes [lo, hi) (widened to
  // whole segments of the current decision), the rest held fixed, and keeps
  // the best if it beats the current plan. Returns whether the window was
  // searched to the end.
  bool improveWindow(int lo, int hi);

 private:
  bool fits(int64_t peak) const { return peak <= budget_bytes_; }
  // Whether a plan with this peak and time beats the best so far (plan_order.h).
  bool better(int64_t peak, double time) const;
  double rangeTime(const NodeRange& r) const { return index_.forwardTime(r.first_node, r.last_node); }
  bool pastDeadline();
  bool outOfTime();
  void collectSegmentEnds(int lo, int hi);
  void collectSettledLeaves();
  int64_t settledPeak(int i) const;
  bool hopeless(int i, double time_us) const;
  void search(int i, double time_us);

  const Simulator& simulator_;
  const ProfileIndex& index_;
  const int64_t budget_bytes_;
  UsableSegments& usable_;
  PeakTracker tracker_;   // holds the current decision (outside a window search)
  double time_ = 0;       // its extra time
  std::vector<int> settled_forward_end_;     // per compute node index: leaves before this are final
  std::vector<int> settled_backward_begin_;  // and leaves from this on
  // The window being searched.
  std::vector<std::vector<int>> segment_ends_;  // per compute node index, indices of usable last nodes
  int window_hi_ = 0;
  std::vector<NodeRange> chosen_;       // the window's segments on the current branch
  std::vector<NodeRange> best_window_;  // the best window segments so far
  int64_t best_peak_ = 0;
  double best_time_ = 0;
  // Limits.
  Clock::time_point deadline_ = Clock::time_point::max();
  long visits_left_ = -1;  // -1: no limit
  long visited_ = 0;
  long leaves_ = 0;
  bool stopped_ = false;
};

}  // namespace acprof
