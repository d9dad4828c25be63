// The exact solver: every segment set, searched depth first with the peak
// tracker, pruned by extra time once a plan fits. Exponential in the number of
// compute nodes: it is the ruler the greedy is measured against on small
// graphs, and on large ones it stops at its time limit and says so.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>

#include "acprof/solver.h"
#include "peak_tracker.h"
#include "plan_order.h"
#include "window_search.h"
#include "profile_index.h"

namespace acprof {
namespace {

using Clock = std::chrono::steady_clock;

// Sweeps of the window search over the whole graph.
constexpr int kWindowPasses = 2;
// How often (in visited search nodes) the clock is read.
constexpr long kClockInterval = 256;

// The peak no decision can go below: static tensors and tensors made outside
// the forward graph (gradients, loss, optimizer temporaries). memory_rules.h
// only ever lengthens the latter (a checkpoint holds the gradients it
// received), and a recompute copy of a forward tensor adds to them, so their
// live bytes under no recompute are below any decision's at every leaf.
int64_t peakLowerBound(const ProfileIndex& index) {
  const int E = index.event_count;
  std::vector<int64_t> delta(leafCount(E) + 1, 0);
  for (const TensorRecord& t : index.profile.tensors) {
    if (t.producer_node >= 0) continue;
    const int begin = t.alloc_event < 0 ? 0 : eventLeaf(t.alloc_event);
    const int end = t.free_event >= E ? leafCount(E) : eventLeaf(t.free_event);
    delta[begin] += t.bytes;
    delta[end] -= t.bytes;
  }
  int64_t live = 0, most = 0;
  for (int leaf = 0; leaf < leafCount(E); ++leaf) most = std::max(most, live += delta[leaf]);
  return most;
}

class SegmentSetSearch {
 public:
  SegmentSetSearch(const Simulator& simulator, int64_t budget_bytes, const RecomputeDecision& start,
                   SegmentChoice choice)
      : simulator_(simulator), index_(simulator.index()), budget_bytes_(budget_bytes), choice_(choice), tracker_(index_) {
    collectSettledLeaves();
    tracker_.replace({}, start);
    for (const NodeRange& r : start) time_ += rangeTime(r);
  }

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
  bool improveWindow(int lo, int hi) {
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

 private:
  bool fits(int64_t peak) const { return peak <= budget_bytes_; }

  // Whether a plan with this peak and time beats the best so far (plan_order.h).
  bool better(int64_t peak, double time) const {
    return betterForBudget(peak, time, best_peak_, best_time_, budget_bytes_);
  }

  double rangeTime(const NodeRange& r) const { return index_.forwardTime(r.first_node, r.last_node); }

  bool pastDeadline() {
    if (!stopped_ && Clock::now() > deadline_) stopped_ = true;
    return stopped_;
  }

  bool outOfTime() {
    if (stopped_) return true;
    if (visits_left_ >= 0 && --visits_left_ < 0) stopped_ = true;
    if (++visited_ % kClockInterval == 0 && Clock::now() > deadline_) stopped_ = true;
    return stopped_;
  }

  // For each compute node of the window, the compute nodes of the window a
  // segment starting there may end at: a legal range (cut_rules.h) with a
  // backward that drops a tensor or, with SegmentChoice::EveryEarlierFree,
  // frees one earlier (memory_rules.h). A segment that frees nothing earlier
  // only adds time and held inputs, so no best plan holds one.
  void collectSegmentEnds(int lo, int hi) {
    segment_ends_.assign(computeNodeCount(), {});
    // The clock, not outOfTime(): listing the ends is not a search step, and
    // on a whole 10k-node graph one first node takes about a second, so
    // counting 256 of them between clock reads ran --time-limit 10 for 340 s.
    for (int i = lo; i < hi && !pastDeadline(); ++i)
      for (int j = i; j < hi && ((j - i) % kClockInterval != 0 || !pastDeadline()); ++j) {
        const NodeRange range{index_.compute_nodes[i], index_.compute_nodes[j]};
        if (!simulator_.segmentProblem(range).empty()) continue;
        const SegmentTiming timing = segmentTiming(index_, range);
        if (timing.has_backward && freesSomethingEarlier(timing)) segment_ends_[i].push_back(j);
      }
  }

  bool freesSomethingEarlier(const SegmentTiming& timing) const {
    for (int n = timing.range.first_node; n <= timing.range.last_node; ++n)
      for (const int* t = index_.tensors_produced_by_node.begin(n); t != index_.tensors_produced_by_node.end(n); ++t)
        if (choice_ == SegmentChoice::EveryEarlierFree ? checkpointMayFreeEarlier(index_, *t, timing)
                                                        : droppedByCheckpoint(insideRole(index_, *t, timing)))
          return true;
    return false;
  }

  // Segments that start at compute node i or later change the timeline only
  // between the forward of node i and the end of the backward of the nodes
  // from i on (memory_rules.h: every changed interval and recompute block of a
  // segment lies between its forward and its backward's end, or the original
  // free of an internal activation it makes). Outside that window the live
  // bytes of a partial decision are final: the bound that prunes the search.
  void collectSettledLeaves() {
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
  int64_t settledPeak(int i) const {
    const int64_t before = tracker_.peakBytesIn(0, settled_forward_end_[i]);
    const int64_t after = tracker_.peakBytesIn(settled_backward_begin_[i], leafCount(index_.event_count));
    return std::max(before, after);
  }

  // Whether no completion of the current partial decision can beat the best plan.
  bool hopeless(int i, double time_us) const {
    if (fits(best_peak_) && time_us >= best_time_) return true;
    const int64_t bound = settledPeak(i);
    if (fits(best_peak_)) return bound > budget_bytes_;
    return bound > best_peak_ || (bound == best_peak_ && time_us >= best_time_);
  }

  // Decides compute node `i` onwards: either no segment starts there, or one
  // starts there and ends at one of its legal ends. Extra time only grows
  // along a branch, so once a plan fits no branch at or above its time can win.
  void search(int i, double time_us) {
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

  const Simulator& simulator_;
  const ProfileIndex& index_;
  const int64_t budget_bytes_;
  const SegmentChoice choice_;
  PeakTracker tracker_;   // holds the current decision (outside a window search)
  double time_ = 0;       // its extra time
  std::vector<int> settled_forward_end_;     // per compute node index: leaves before this are final
  std::vector<int> settled_backward_begin_;  // and leaves from this on
  // The window being searched.
  std::vector<std::vector<int>> segment_ends_;  // per compute node index, indices of legal last nodes
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

}  // namespace

SolverResult solveOptimal(const Simulator& simulator, int64_t budget_bytes, double time_limit_s) {
  const Clock::time_point start = Clock::now();
  // The refined plan is the first incumbent: the search then only looks for better ones.
  const SolverResult incumbent = solveRefined(simulator, budget_bytes);
  SegmentSetSearch search(simulator, budget_bytes, incumbent.decision, SegmentChoice::EveryEarlierFree);
  search.stopAt(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_limit_s)));
  const bool complete = search.improveWindow(0, search.computeNodeCount());
  SolverResult result;
  result.decision = search.decision();
  result.simulation = simulator.simulate(result.decision);
  result.search.searched = true;
  result.search.proven_optimal = complete;
  result.search.decisions_evaluated = search.plansJudged();
  result.search.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.search.peak_lower_bound_bytes = peakLowerBound(simulator.index());
  return result;
}

RecomputeDecision improveByWindows(const Simulator& simulator, int64_t budget_bytes, const RecomputeDecision& start,
                                   int window, long visit_allowance, SegmentChoice choice) {
  SegmentSetSearch search(simulator, budget_bytes, start, choice);
  const int count = search.computeNodeCount();
  const int stride = std::max(1, window / 2);
  // The first pass lets each window take what it needs of half the
  // allowance: a deep improvement early in the graph may need many steps
  // (the 24-layer MLP at 80 %: 12 % less time than with even shares). The
  // second pass gives each window an even share of the rest, so the windows
  // searched last are searched too: when the first window to run out ended
  // the whole search, a generated 4-block network at 60 % kept two segments
  // one node off the pair that costs 11 % less, in a window never reached.
  const long windows_per_pass = (count + stride - 1) / stride;
  long visits_left = visit_allowance;
  for (int pass = 0; pass < kWindowPasses; ++pass) {
    long windows_left = windows_per_pass;
    for (int lo = 0; lo < count; lo += stride, --windows_left) {
      const long share = pass == 0 ? std::max(0L, visits_left - visit_allowance / 2) : visits_left / windows_left;
      if (share <= 0) continue;
      search.allowVisits(share);
      search.improveWindow(lo, lo + window);
      visits_left -= share - search.visitsLeft();
    }
  }
  return search.decision();
}

std::string searchReportText(const SearchReport& report, int64_t peak_bytes) {
  if (!report.searched) return "";
  if (report.proven_optimal)
    return fmt::format("optimal: every segment set searched ({} plans in {:.2f} s)", report.decisions_evaluated,
                       report.seconds);
  const double gap = peak_bytes > 0 ? 100.0 * static_cast<double>(peak_bytes - report.peak_lower_bound_bytes) /
                                          static_cast<double>(peak_bytes)
                                    : 0.0;
  return fmt::format(
      "not proven optimal: stopped at the time limit after {} plans in {:.2f} s; no plan can peak below {} "
      "({} B, {:.1f} % under this one); raise --time-limit to search longer",
      report.decisions_evaluated, report.seconds, formatBytes(report.peak_lower_bound_bytes),
      report.peak_lower_bound_bytes, gap);
}

}  // namespace acprof
