#include <algorithm>
#include <queue>

#include "acprof/solver.h"
#include "peak_tracker.h"
#include "profile_index.h"

namespace acprof {
namespace {

// Keeps a zero-time recompute ordered by the bytes it frees instead of dividing by zero.
constexpr double kMinRecomputeTimeUs = 1e-3;

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
  MuTwoGreedy(const Simulator& simulator, int64_t budget_bytes)
      : simulator_(simulator), index_(simulator.index()), budget_bytes_(budget_bytes), tracker_(index_) {
    forward_time_before_.assign(index_.node_count + 1, 0);
    for (int n = 0; n < index_.node_count; ++n)
      forward_time_before_[n + 1] = forward_time_before_[n] + index_.profile.nodes[n].forward_time_us;
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
    std::vector<NodeRange> ranges;
    for (const TensorRecord& t : index_.profile.tensors) {
      if (t.category != Category::Activation || t.producer_node < 0) continue;
      ranges.push_back({t.producer_node, std::max(t.producer_node, index_.last_user_node[t.id])});
    }
    std::sort(ranges.begin(), ranges.end(), [](const NodeRange& a, const NodeRange& b) {
      return a.first_node != b.first_node ? a.first_node < b.first_node : a.last_node < b.last_node;
    });
    ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
    for (const NodeRange& r : ranges) candidates_.push_back({r, false});
  }

  Trial evaluate(NodeRange range) const {
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
    if (!simulator_.segmentProblem(trial.merged).empty()) return trial;
    const SegmentTiming timing = segmentTiming(index_, trial.merged);
    if (!timing.has_backward) return trial;
    trial.valid = true;

    const int peak = peak_leaf_;
    for (int n = trial.merged.first_node; n <= trial.merged.last_node; ++n)
      for (const int* t = index_.tensors_produced_by_node.begin(n); t != index_.tensors_produced_by_node.end(n); ++t) {
        if (tracker_.isDropped(*t)) continue;
        const LeafInterval& life = tracker_.forwardLife(*t);
        if (life.begin_leaf > peak || life.end_leaf <= peak) continue;
        if (insideRole(index_, *t, timing) == InsideRole::InternalActivation)
          trial.bytes_freed_at_peak += index_.profile.tensors[*t].bytes;
      }
    trial.added_time_us = rangeTime(trial.merged);
    for (const NodeRange& r : trial.absorbed) trial.added_time_us -= rangeTime(r);
    trial.score = static_cast<double>(trial.bytes_freed_at_peak) /
                  std::max(trial.added_time_us, kMinRecomputeTimeUs);
    return trial;
  }

  double rangeTime(const NodeRange& r) const {
    return forward_time_before_[r.last_node + 1] - forward_time_before_[r.first_node];
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

  // Keeps the choice if it lowers the peak. When several leaves share the peak,
  // one choice can only lower one of them: it is kept if it lowered the leaf it
  // aimed at without raising the peak, and the next choice aims at the next one.
  void tryChoice(const Trial& trial) {
    const int64_t peak_before = tracker_.peakBytes();
    const int64_t aimed_before = tracker_.liveBytesAt(peak_leaf_);
    tracker_.replace(trial.absorbed, {trial.merged});
    const int64_t peak_after = tracker_.peakBytes();
    const bool lowered = peak_after < peak_before ||
                         (peak_after == peak_before && tracker_.liveBytesAt(peak_leaf_) < aimed_before);
    if (!lowered) {
      tracker_.replace({trial.merged}, trial.absorbed);
      return;
    }
    ++epoch_;
    peak_leaf_ = tracker_.peakLeaf();
  }

  const Simulator& simulator_;
  const ProfileIndex& index_;
  const int64_t budget_bytes_;
  PeakTracker tracker_;
  std::vector<double> forward_time_before_;
  std::vector<Candidate> candidates_;
  std::priority_queue<QueueEntry> queue_;
  int epoch_ = 0;
  int fully_rescored_epoch_ = -1;
  int peak_leaf_ = 0;
};

}  // namespace

SolverResult solveMuTwo(const Simulator& simulator, int64_t budget_bytes) {
  SolverResult result;
  result.decision = MuTwoGreedy(simulator, budget_bytes).run();
  result.simulation = simulator.simulate(result.decision);
  return result;
}

}  // namespace acprof
