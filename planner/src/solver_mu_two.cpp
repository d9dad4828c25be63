#include <algorithm>
#include <future>
#include <queue>
#include <unordered_map>

#include "acprof/solver.h"
#include "peak_tracker.h"
#include "plan_order.h"
#include "profile_index.h"
#include "window_search.h"

namespace acprof {
namespace {

// Keeps a zero-time recompute ordered by the bytes it frees instead of dividing by zero.
constexpr double kMinRecomputeTimeUs = 1e-3;
// How far back a candidate may grow over unsaved inputs (each round adds at least one node).
constexpr int kMaxGrowRounds = 8;
// A refused candidate may grow to a legal one of at least this many nodes.
constexpr int kMinLegalizedNodes = 64;

// The window search (window_search.h): windows of this many compute nodes,
// on graphs of up to this many, with a fixed allowance of search steps (about
// 0.2 s per start), shared evenly among the windows. With the moves and the
// drop-and-repair phase below, on generated 4-block networks it brings mu-two
// to the exact solver's floor on 12 of 12 and its time within 10 % on every
// budget (tests/planner_solver_test.cpp). Past 1000 compute nodes (10k-node
// graphs keep the half-second target) the greedy and the moves work alone.
constexpr int kSearchWindow = 12;
constexpr int kWindowSearchMaxComputeNodes = 1000;
constexpr long kWindowVisits = 100000;
// Segments the time phase drops and repairs (improveByDroppingSegments), the
// costliest first: each drop is a window search over the whole graph.
constexpr size_t kMostSegmentsDropped = 8;
// mu-two's fallback (bestEvenPlan): every segment count while the walks visit
// at most this many nodes in all, else a grid of about this many counts first.
constexpr long kMostEvenWalkNodes = 200000;
constexpr int kCoarseEvenCounts = 8;

// Recomputing one activation: [its producer, its last forward reader], one per activation.
std::vector<NodeRange> activationRanges(const ProfileIndex& index) {
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
      it->second = simulator_.segmentProblem(r).empty() && segmentTiming(simulator_.index(), r).has_backward;
    return it->second;
  }

 private:
  const Simulator& simulator_;
  std::unordered_map<int64_t, bool> known_;
};

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
      : index_(simulator.index()), budget_bytes_(budget_bytes), tracker_(index_), usable_(simulator) {
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

  double rangeTime(const NodeRange& r) const { return index_.forwardTime(r.first_node, r.last_node); }

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
  PeakTracker tracker_;
  UsableRanges usable_;
  std::vector<Candidate> candidates_;
  std::priority_queue<QueueEntry> queue_;
  int epoch_ = 0;
  int fully_rescored_epoch_ = -1;
  int peak_leaf_ = 0;
};

// Improves a decision by local moves on whole segments, which the greedy
// cannot make: it only grows segments, one choice at a time, each of which
// must lower the peak. A move shifts a segment's first or last node by up to
// three compute nodes, removes it, splits it in two (with or without a gap of
// one compute node), or merges it with the next one; between sweeps over the
// segments, a candidate the greedy rejected is added where no segment is.
// The first move that gives a better plan for the budget (plan_order.h; a
// move that keeps the peak but saves time counts) is kept; sweeps repeat
// until one changes nothing or the move allowance is spent.
class SegmentRefiner {
 public:
  // `candidates`: segments a move may add where no segment is.
  SegmentRefiner(const Simulator& simulator, int64_t budget_bytes, std::vector<NodeRange> candidates)
      : index_(simulator.index()),
        budget_bytes_(budget_bytes),
        tracker_(index_),
        usable_(simulator),
        candidates_(std::move(candidates)) {}

  RecomputeDecision run(const RecomputeDecision& start) {
    tracker_.replace({}, start);
    peak_ = tracker_.peakBytes();
    for (const NodeRange& r : start) time_ += rangeTime(r);
    // Each move costs about one segment's tensors on the tracker; a fixed
    // allowance (not a clock, so the plan is deterministic) keeps 10k nodes
    // under half a second now that the default refines every plan
    // (scripts/bench_plan.sh; two moves per node took 2.5 s there, a quarter
    // move per node 0.6 s).
    long allowance = std::min(kMinMoves + index_.node_count / kNodesPerMove, kMaxMoves);
    for (double share : kPlateauShares) {
      plateau_share_ = share;
      excess_ = excessNearPeak(peak_);
      bool changed = true;
      while (changed && allowance > 0) changed = sweep(allowance);
    }
    return tracker_.decision();
  }

 private:
  static constexpr long kMinMoves = 3000;
  static constexpr long kNodesPerMove = 4;
  static constexpr long kMaxMoves = 4000;
  static constexpr int kShift = 3;         // compute nodes an end may move by
  static constexpr int kSplitPoints = 16;  // split points tried per segment, evenly spread
  // The plateau under the peak, as a share of it, of each phase of moves: a
  // narrow one first, then a wider one from where it stopped. On a 6-block
  // looped LM the floor goes from 3.95 MiB to the exact solver's 3.09 MiB;
  // on gpt_long from 15.59 to 13.16 MiB; never higher on the reference models
  // (one phase of 0.1 alone was 1.5 % higher on scripted BERT).
  static constexpr double kPlateauShares[] = {0.05, 0.2};

  struct Move {
    std::vector<NodeRange> removed;
    std::vector<NodeRange> added;
  };

  double rangeTime(const NodeRange& r) const { return index_.forwardTime(r.first_node, r.last_node); }

  std::vector<Move> movesOf(const RecomputeDecision& d, size_t s) const {
    const NodeRange r = d[s];
    const int count = static_cast<int>(index_.compute_nodes.size());
    const int a = index_.computeNodeAtOrAfter(r.first_node), b = index_.computeNodeAtOrBefore(r.last_node);
    const int lowest_first = s > 0 ? index_.computeNodeAtOrBefore(d[s - 1].last_node) + 1 : 0;
    const int highest_last = s + 1 < d.size() ? index_.computeNodeAtOrAfter(d[s + 1].first_node) - 1 : count - 1;
    std::vector<Move> moves;
    moves.push_back({{r}, {}});
    if (a > b) return moves;
    for (int da = -kShift; da <= kShift; ++da)
      for (int db = -kShift; db <= kShift; ++db) {
        const int na = a + da, nb = b + db;
        if ((da == 0 && db == 0) || na < lowest_first || nb > highest_last || na > nb) continue;
        moves.push_back({{r}, {{index_.compute_nodes[na], index_.compute_nodes[nb]}}});
      }
    const int span = b - a;
    for (int k = 1; k <= kSplitPoints && span > 0; ++k) {
      const int m = a + static_cast<int>((static_cast<long>(span) * k) / (kSplitPoints + 1));
      if (m < a || m >= b) continue;
      moves.push_back({{r}, {{r.first_node, index_.compute_nodes[m]}, {index_.compute_nodes[m + 1], r.last_node}}});
      if (m + 1 < b) moves.push_back({{r}, {{r.first_node, index_.compute_nodes[m]}, {index_.compute_nodes[m + 2], r.last_node}}});
    }
    if (s + 1 < d.size()) moves.push_back({{r, d[s + 1]}, {{r.first_node, d[s + 1].last_node}}});
    return moves;
  }

  // One sweep: the first better move of each segment in turn, then each
  // rejected candidate where no segment is. Whether any move was kept.
  bool sweep(long& allowance) {
    bool changed = false;
    const size_t segment_count = tracker_.decision().size();
    for (size_t s = 0; s < segment_count && allowance > 0; ++s) {
      const RecomputeDecision now = tracker_.decision();
      if (s >= now.size()) break;
      for (const Move& move : movesOf(now, s)) {
        if (--allowance < 0) break;
        if (tryMove(move)) {
          changed = true;
          break;
        }
      }
    }
    // A segment the greedy rejected may help once the peak has moved.
    for (const NodeRange& candidate : candidates_) {
      if (allowance <= 0) break;
      if (overlapsOrTouches(candidate)) continue;
      --allowance;
      changed |= tryMove({{}, {candidate}});
    }
    return changed;
  }

  bool overlapsOrTouches(const NodeRange& r) const {
    const auto& segments = tracker_.segments();
    auto it = segments.upper_bound(r.last_node + 1);
    if (it == segments.begin()) return false;
    --it;
    return it->second.range.last_node + 1 >= r.first_node;
  }

  // The bytes above the plateau under a peak (the phase's share of it): what
  // a move that keeps a peak over the budget must lower to count as better.
  int64_t excessNearPeak(int64_t peak) const {
    return tracker_.excessAbove(peak - static_cast<int64_t>(static_cast<double>(peak) * plateau_share_));
  }
  // Plan order (plan_order.h), with one tie broken: where both plans peak at
  // the same bytes over the budget, the one with less of its timeline near
  // that peak is better. Without it the search for a floor stops on a
  // plateau: where several blocks' backward passes peak alike, no single move
  // lowers the highest, but moves that lower one of them at a time lead to
  // the plan that lowers all.
  bool better(int64_t peak, double time) const {
    if (peak == peak_ && peak_ > budget_bytes_) {
      const int64_t excess = excessNearPeak(peak);
      if (excess != excess_) return excess < excess_;
    }
    return betterForBudget(peak, time, peak_, time_, budget_bytes_);
  }

  bool tryMove(const Move& move) {
    for (const NodeRange& r : move.added)
      if (!usable_.usable(r)) return false;
    double time = time_;
    for (const NodeRange& r : move.removed) time -= rangeTime(r);
    for (const NodeRange& r : move.added) time += rangeTime(r);
    tracker_.replace(move.removed, move.added);
    const int64_t peak = tracker_.peakBytes();
    if (!better(peak, time)) {
      tracker_.undoLastReplace();
      return false;
    }
    peak_ = peak;
    time_ = time;
    excess_ = excessNearPeak(peak);
    return true;
  }

  const ProfileIndex& index_;
  const int64_t budget_bytes_;
  PeakTracker tracker_;
  UsableRanges usable_;
  std::vector<NodeRange> candidates_;
  int64_t peak_ = 0;
  int64_t excess_ = 0;
  double plateau_share_ = 0;
  double time_ = 0;
};

}  // namespace

// Whether `a` is the better plan for the budget, in plan_order.h's order.
bool betterForBudget(const SolverResult& a, const SolverResult& b, int64_t budget_bytes) {
  return betterForBudget(a.simulation.peak_bytes, a.simulation.extra_time_us, b.simulation.peak_bytes,
                         b.simulation.extra_time_us, budget_bytes);
}

namespace {

bool windowSearchApplies(const Simulator& simulator) {
  return static_cast<int>(simulator.index().compute_nodes.size()) <= kWindowSearchMaxComputeNodes;
}

// A plan that fits may reach less time only through plans that do not: one
// segment goes, and others grow to take its place. Moves that must each keep
// the plan fitting cannot get there (a generated 4-block network at 80 %:
// four segments where the exact solver's one costs 10 % less; scripted CNN at
// 80 %, two where one elsewhere costs 11 % less). The costliest segments are
// dropped in turn and the window search repairs the rest; the repaired plan
// replaces the plan where it is better for the budget.
SolverResult improveByDroppingSegments(const Simulator& simulator, int64_t budget_bytes, SolverResult best,
                                       long visits) {
  if (best.simulation.peak_bytes > budget_bytes || best.decision.size() < 2) return best;
  const ProfileIndex& index = simulator.index();
  std::vector<NodeRange> costliest = best.decision;
  std::stable_sort(costliest.begin(), costliest.end(), [&](const NodeRange& a, const NodeRange& b) {
    return index.forwardTime(a.first_node, a.last_node) > index.forwardTime(b.first_node, b.last_node);
  });
  if (costliest.size() > kMostSegmentsDropped) costliest.resize(kMostSegmentsDropped);
  const long visits_per_drop = visits / static_cast<long>(costliest.size());
  for (const NodeRange& dropped : costliest) {
    RecomputeDecision trial = best.decision;
    const auto at = std::find(trial.begin(), trial.end(), dropped);
    if (at == trial.end()) continue;  // an earlier repair changed it
    trial.erase(at);
    SolverResult repaired;
    repaired.decision = improveByWindows(simulator, budget_bytes, trial, kSearchWindow, visits_per_drop);
    repaired.simulation = simulator.simulate(repaired.decision);
    if (betterForBudget(repaired, best, budget_bytes)) best = std::move(repaired);
  }
  return best;
}

SolverResult refineFrom(const Simulator& simulator, int64_t budget_bytes, const SolverResult& start,
                        long window_visits, SegmentChoice choice) {
  SolverResult refined;
  refined.decision = SegmentRefiner(simulator, budget_bytes, activationRanges(simulator.index())).run(start.decision);
  if (windowSearchApplies(simulator))
    refined.decision = improveByWindows(simulator, budget_bytes, refined.decision, kSearchWindow, window_visits, choice);
  refined.simulation = simulator.simulate(refined.decision);
  return refined;
}

// A local search ends where its start leads it: from mu-two's few long
// segments it can settle well above what Chen's evenly spaced ones lead to
// (scripted ViT: 4.86 MB from mu-two's plan, 3.78 MB from Chen's). Both
// starts are refined, sharing the window search's allowance; the better plan
// wins. The search from Chen's segments does not need mu-two's plan, so it
// runs on a second thread while the greedy and the search from its plan run
// on this one (generated 10k nodes at the floor: 1.6-1.8 s -> 0.96-1.01 s,
// at 70 % 0.13-0.19 -> 0.09-0.10 s; 1k nodes at the floor 1.1 -> 0.55-0.71 s,
// side by side on 2 cores; same plans). Each search is deterministic and the
// two are compared in a fixed order, so the plan does not depend on which
// finishes first.
}  // namespace

SolverResult solveRefined(const Simulator& simulator, int64_t budget_bytes) {
  std::future<SolverResult> from_chen = std::async(std::launch::async, [&simulator, budget_bytes] {
    SolverResult chen = solveChen(simulator, budget_bytes);
    if (chen.decision.empty()) return chen;
    return refineFrom(simulator, budget_bytes, chen, kWindowVisits / 2, SegmentChoice::Dropping);
  });
  SolverResult best = solveMuTwo(simulator, budget_bytes);
  // The greedy only tries segments that drop a tensor; the window search from
  // its plan (an empty one too, where it does not fit) also tries those that
  // end an output's only saves (checkpointMayFreeEarlier in memory_rules.h; a
  // Gumbel head's). On the 200 zoo, reference and pattern profiles that
  // changed three floors, all lower (frozen_middle 6.76 -> 6.52 MiB); from
  // Chen's segments it lost within the same allowance (24-layer MLP +7 %), so
  // that search keeps to the first kind. (from_chen is waited for on return.)
  if (best.decision.empty() && (best.simulation.peak_bytes <= budget_bytes || !windowSearchApplies(simulator)))
    return best;
  SolverResult refined = refineFrom(simulator, budget_bytes, best, kWindowVisits / 2, SegmentChoice::EveryEarlierFree);
  if (betterForBudget(refined, best, budget_bytes)) best = std::move(refined);
  SolverResult refined_chen = from_chen.get();
  if (!refined_chen.decision.empty() && betterForBudget(refined_chen, best, budget_bytes))
    best = std::move(refined_chen);
  if (windowSearchApplies(simulator))
    best = improveByDroppingSegments(simulator, budget_bytes, std::move(best), kWindowVisits / 2);
  return best;
}

namespace {

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

SolverResult solveAuto(const Simulator& simulator, int64_t budget_bytes) {
  // Refined where the greedy already fits too: the greedy stops at the first
  // plan that fits, which on the reference models cost up to 5.6 times the
  // exact solver's extra time at 80 % (docs/solvers.md).
  SolverResult result = solveRefined(simulator, budget_bytes);
  result.solver = "refined";
  return result;
}

SolverResult solveMuTwo(const Simulator& simulator, int64_t budget_bytes) {
  SolverResult result;
  result.decision = MuTwoGreedy(simulator, budget_bytes).run();
  result.simulation = simulator.simulate(result.decision);
  if (result.simulation.peak_bytes <= budget_bytes) return result;
  // The greedy only grows segments, so on long chains it can stall where no
  // single choice lowers the peak, above a budget that evenly spaced segments
  // reach. Then try Chen's walk with segment counts up to twice sqrt(n) and
  // keep the plan that fits with the least extra time.
  return bestEvenPlan(simulator, budget_bytes, mostEvenSegments(simulator), std::move(result));
}

}  // namespace acprof
