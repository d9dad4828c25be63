// The greedy of mu-TWO (solver.h: solveMuTwo), and its fallback to Chen's
// walk with evenly spaced segments where the greedy stalls above the budget.
#include <algorithm>
#include <queue>

#include "acprof/solver.h"
#include "candidate_ranges.h"
#include "mu_two_greedy.h"
#include "peak_tracker.h"
#include "plan_order.h"
#include "profile_index.h"

namespace acprof {
namespace {

// Keeps a zero-time recompute ordered by the bytes it frees instead of dividing by zero.
constexpr double kMinRecomputeTimeUs = 1e-3;
// How far back a candidate may grow over unsaved inputs (each round adds at least one node).
constexpr int kMaxGrowRounds = 8;
// A refused candidate may grow to a legal one of at least this many nodes.
constexpr int kMinLegalizedNodes = 64;
// mu-two's fallback (bestEvenPlan): every segment count while the walks visit
// at most this many nodes in all, else a grid of about this many counts first.
constexpr long kMostEvenWalkNodes = 200000;
constexpr int kCoarseEvenCounts = 8;

// A candidate: recompute one activation, i.e. checkpoint [its producer, its last forward reader].
struct Candidate {
  NodeRange range;
  bool retired = false;  // chosen, rejected by the simulator, or never valid
};

// What choosing a candidate would do to the current decision.
struct Trial {
  NodeRange merged;                      // the candidate's range united with the segments it overlaps or touches
  std::vector<NodeRange> absorbed;       // those segments
  bool valid = false;
  int64_t bytes_freed_at_peak = 0;       // newly dropped bytes live at the current peak
  double added_time_us = 0;
  double score = 0;
};

class MuTwoGreedy {
 public:
  MuTwoGreedy(const Simulator& simulator, int64_t budget_bytes, GreedyCost cost)
      : index_(simulator.index()), budget_bytes_(budget_bytes), cost_(cost), tracker_(index_), usable_(simulator) {
    collectCandidates();
  }

  RecomputeDecision run() {
    if (tracker_.peakBytes() <= budget_bytes_) return {};
    peak_leaf_ = tracker_.peakLeaf();
    rescoreAll();
    while (tracker_.peakBytes() > budget_bytes_ && !queue_.empty()) {
      const QueueEntry top = queue_.top();
      queue_.pop();
      Candidate& candidate = candidates_[top.candidate];
      if (candidate.retired) continue;
      if (top.epoch != epoch_) {  // scored against an older decision: score again (lazy greedy)
        push(top.candidate);
        continue;
      }
      const Trial trial = evaluate(candidate.range);
      if (!trial.valid) {
        candidate.retired = true;
        continue;
      }
      if (trial.bytes_freed_at_peak == 0) {
        // The best fresh score frees nothing at the peak. Stale scores below it
        // may have been computed for another peak: score everything once more.
        if (fully_rescored_epoch_ == epoch_) break;
        rescoreAll();
        continue;
      }
      candidate.retired = true;
      tryChoice(trial);
    }
    return tracker_.decision();
  }

 private:
  struct QueueEntry {
    double score;
    int candidate;
    int epoch;
    bool operator<(const QueueEntry& other) const {  // max-heap on score; ties: the earlier candidate
      if (score != other.score) return score < other.score;
      return candidate > other.candidate;
    }
  };

  void collectCandidates() {
    std::vector<NodeRange> ranges = activationRanges(index_);
    const size_t plain_count = ranges.size();
    for (size_t i = 0; i < plain_count; ++i) {
      const NodeRange grown = grownOverUnsavedBoundaries(ranges[i]);
      if (grown.first_node != ranges[i].first_node || grown.last_node != ranges[i].last_node) ranges.push_back(grown);
    }
    // A candidate the cut rules refuse (it splits a branch from the value it
    // reads, say) grows over what blocks it, within half of the graph.
    const int most_nodes = std::max(kMinLegalizedNodes, index_.node_count / 2);
    const size_t candidate_count = ranges.size();
    for (size_t i = 0; i < candidate_count; ++i) {
      NodeRange legal = ranges[i];
      if (index_.rules.problem(legal.first_node, legal.last_node).empty()) continue;
      if (index_.rules.grownToLegal(legal.first_node, legal.last_node, most_nodes)) ranges.push_back(legal);
    }
    std::sort(ranges.begin(), ranges.end(), [](const NodeRange& a, const NodeRange& b) {
      return a.first_node != b.first_node ? a.first_node < b.first_node : a.last_node < b.last_node;
    });
    ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
    for (const NodeRange& r : ranges) candidates_.push_back({r, false});
  }

  // Grows a candidate over tensors that forward frees early because nothing
  // saves them for backward: a ReLU's input when its output is the candidate,
  // or a linear layer's output that only the next ReLU reads. As a segment's
  // input such a tensor would be held until the segment's backward; as its
  // output it would be made a second time by the recompute. Inside the
  // segment it is a temporary of the recompute and costs nothing at the peak.
  NodeRange grownOverUnsavedBoundaries(NodeRange range) const {
    const auto freedInForward = [&](int tensor) {
      const TensorRecord& t = index_.profile.tensors[tensor];
      return !index_.isStatic(tensor) && t.free_step >= 0 && index_.phaseOfStep(t.free_step) == Phase::Forward;
    };
    for (int round = 0; round < kMaxGrowRounds; ++round) {
      NodeRange grown = range;
      for (int n = range.first_node; n <= range.last_node; ++n) {
        for (const int* t = index_.tensors_used_by_node.begin(n); t != index_.tensors_used_by_node.end(n); ++t) {
          const int producer = index_.profile.tensors[*t].producer_node;
          if (producer >= 0 && producer < range.first_node && freedInForward(*t))
            grown.first_node = std::min(grown.first_node, producer);
        }
        for (const int* t = index_.tensors_produced_by_node.begin(n); t != index_.tensors_produced_by_node.end(n); ++t)
          if (index_.last_user_node[*t] > range.last_node && freedInForward(*t))
            grown.last_node = std::max(grown.last_node, index_.last_user_node[*t]);
      }
      if (grown.first_node == range.first_node && grown.last_node == range.last_node) break;
      range = grown;
    }
    return range;
  }

  Trial evaluate(NodeRange range) {
    Trial trial;
    trial.merged = range;
    // Segments that overlap or touch, found from the last one starting at or before merged.last + 1.
    const auto& segments = tracker_.segments();
    auto it = segments.upper_bound(trial.merged.last_node + 1);
    while (it != segments.begin()) {
      --it;
      const NodeRange& r = it->second.range;
      if (r.last_node + 1 < trial.merged.first_node) break;
      trial.absorbed.push_back(r);
      trial.merged.first_node = std::min(trial.merged.first_node, r.first_node);
      trial.merged.last_node = std::max(trial.merged.last_node, r.last_node);
    }
    std::reverse(trial.absorbed.begin(), trial.absorbed.end());
    if (!usable_.usable(trial.merged)) return trial;
    const SegmentTiming timing = segmentTiming(index_, trial.merged);
    trial.valid = true;

    const int peak = peak_leaf_;
    for (int n = trial.merged.first_node; n <= trial.merged.last_node; ++n)
      for (const int* t = index_.tensors_produced_by_node.begin(n); t != index_.tensors_produced_by_node.end(n); ++t) {
        if (tracker_.isDropped(*t)) continue;
        const LeafInterval& life = tracker_.forwardLife(*t);
        if (life.begin_leaf > peak || life.end_leaf <= peak) continue;
        if (droppedByCheckpoint(insideRole(index_, *t, timing)))
          trial.bytes_freed_at_peak += index_.profile.tensors[*t].bytes;
      }
    trial.added_time_us = rangeTime(trial.merged);
    for (const NodeRange& r : trial.absorbed) trial.added_time_us -= rangeTime(r);
    trial.score = static_cast<double>(trial.bytes_freed_at_peak) /
                  std::max(trial.added_time_us, kMinRecomputeTimeUs);
    return trial;
  }

  double rangeTime(const NodeRange& r) const {
    if (cost_ == GreedyCost::NodeCount) return r.last_node - r.first_node + 1;
    return index_.forwardTime(r.first_node, r.last_node);
  }

  void push(int candidate) {
    const Trial trial = evaluate(candidates_[candidate].range);
    if (!trial.valid) {
      candidates_[candidate].retired = true;
      return;
    }
    queue_.push({trial.score, candidate, epoch_});
  }

  void rescoreAll() {
    queue_ = {};
    for (int c = 0; c < static_cast<int>(candidates_.size()); ++c)
      if (!candidates_[c].retired) push(c);
    fully_rescored_epoch_ = epoch_;
  }

  // Keeps the choice only if the simulated peak goes down: a recompute that
  // brings back as much as it drops (or more) is undone.
  void tryChoice(const Trial& trial) {
    const int64_t peak_before = tracker_.peakBytes();
    tracker_.replace(trial.absorbed, {trial.merged});
    if (tracker_.peakBytes() >= peak_before) {
      tracker_.undoLastReplace();
      return;
    }
    ++epoch_;
    peak_leaf_ = tracker_.peakLeaf();
  }

  const ProfileIndex& index_;
  const int64_t budget_bytes_;
  const GreedyCost cost_;
  PeakTracker tracker_;
  UsableRanges usable_;
  std::vector<Candidate> candidates_;
  std::priority_queue<QueueEntry> queue_;
  int epoch_ = 0;
  int fully_rescored_epoch_ = -1;
  int peak_leaf_ = 0;
};

// The best of Chen's walks with 1 to `most` segments, or `best` where none
// beats it. Every count where that is cheap (each count is a walk and a
// simulation of the whole graph: 11 ms at 10k nodes, 1.6 s for all 141); on
// larger graphs a grid of counts, then grids a quarter as coarse around the
// best so far, down to every count next to it: neighbouring counts give
// plans of nearly the same peak and time.
SolverResult bestEvenPlan(const Simulator& simulator, int64_t budget_bytes, int most, SolverResult best) {
  if (most < 1) return best;
  std::vector<char> tried(most + 1, 0);
  SolverResult best_even;
  int best_count = 0;
  const auto tryCount = [&](int count) {
    if (count < 1 || count > most || tried[count]) return;
    tried[count] = 1;
    SolverResult even = segmentEvenly(simulator, count);
    if (best_count == 0 || betterForBudget(even, best_even, budget_bytes)) {
      best_even = std::move(even);
      best_count = count;
    }
  };
  const long walk_nodes = static_cast<long>(most) * simulator.index().node_count;
  int step = walk_nodes <= kMostEvenWalkNodes ? 1 : std::max(1, most / kCoarseEvenCounts);
  for (int count = 1; count <= most; count += step) tryCount(count);
  tryCount(most);
  while (step > 1) {
    const int finer = std::max(1, step / 4);
    for (int count = best_count - step + finer; count < best_count + step; count += finer) tryCount(count);
    step = finer;
  }
  return betterForBudget(best_even, best, budget_bytes) ? best_even : best;
}

}  // namespace

RecomputeDecision muTwoGreedy(const Simulator& simulator, int64_t budget_bytes, GreedyCost cost) {
  return MuTwoGreedy(simulator, budget_bytes, cost).run();
}

SolverResult solveMuTwo(const Simulator& simulator, int64_t budget_bytes) {
  SolverResult result;
  result.decision = muTwoGreedy(simulator, budget_bytes, GreedyCost::MeasuredTime);
  result.simulation = simulator.simulate(result.decision);
  if (result.simulation.peak_bytes <= budget_bytes) return result;
  // The greedy only grows segments, so on long chains it can stall where no
  // single choice lowers the peak, above a budget that evenly spaced segments
  // reach. Then try Chen's walk with segment counts up to twice sqrt(n) and
  // keep the plan that fits with the least extra time.
  return bestEvenPlan(simulator, budget_bytes, mostEvenSegments(simulator), std::move(result));
}

}  // namespace acprof
