// The peak tracker (planner/src/peak_tracker.h, internal: mu-two, refined and
// the exact search judge their trials with it) against the Simulator, the
// ruler every plan is finally measured by: after any sequence of segments put
// in and taken out, the tracker's peak and its live bytes after every event
// are the Simulator's for the same decision.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

// The tests directory has no include path into the planner's sources (nor
// does the sanitized build of these tests, fuzz/CMakeLists.txt): reach them by
// a path relative to this file.
#include "../planner/src/peak_tracker.h"
#include "planner_test_profiles.h"

namespace acprof {
namespace {

using testing::residualNetworkProfile;

// Every range the legality model accepts as a segment.
std::vector<NodeRange> legalRanges(const Simulator& simulator) {
  std::vector<NodeRange> ranges;
  const int nodes = static_cast<int>(simulator.profile().nodes.size());
  for (int first = 0; first < nodes; ++first)
    for (int last = first; last < nodes; ++last)
      if (simulator.segmentProblem({first, last}).empty()) ranges.push_back({first, last});
  return ranges;
}

bool overlapsAny(const NodeRange& range, const std::map<int, NodeRange>& decision) {
  for (const auto& [first, other] : decision)
    if (range.first_node <= other.last_node && other.first_node <= range.last_node) return true;
  return false;
}

RecomputeDecision asDecision(const std::map<int, NodeRange>& decision) {
  RecomputeDecision out;
  for (const auto& [first, range] : decision) out.push_back(range);
  return out;
}

// The tracker's peak and its live bytes after each event against a full replay.
void expectSameAsSimulator(const Simulator& simulator, const PeakTracker& tracker, const RecomputeDecision& decision,
                           const std::string& context) {
  ASSERT_EQ(tracker.decision(), decision) << context;
  EXPECT_EQ(tracker.peakBytes(), simulator.simulate(decision).peak_bytes) << context;
  const std::vector<int64_t> live = simulator.liveBytesPerEvent(decision);
  for (int e = 0; e < static_cast<int>(live.size()); ++e)
    ASSERT_EQ(tracker.liveBytesAt(eventLeaf(e)), live[e]) << context << ", after event " << e;
  // Which tensors the decision drops (what mu-two scores its candidates by),
  // against a tracker that put the same decision in at once.
  PeakTracker fresh(simulator.index());
  fresh.replace({}, decision);
  for (int t = 0; t < static_cast<int>(simulator.profile().tensors.size()); ++t)
    ASSERT_EQ(tracker.isDropped(t), fresh.isDropped(t)) << context << ", tensor " << t;
}

TEST(PlannerPeakTracker, StartsAtTheSimulatorsNoRecomputeTimeline) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const Profile p = residualNetworkProfile(6, seed);
    const Simulator simulator(p);
    const PeakTracker tracker(simulator.index());
    expectSameAsSimulator(simulator, tracker, {}, "seed " + std::to_string(seed));
  }
}

// Random legal, non-overlapping segments put in, taken out, and swapped one
// for another (what the greedy and the refiner do), each step followed by a
// trial that is undone, on generated residual networks; every intermediate
// decision is compared, so a segment whose removal (or an undo that) leaves
// something behind shows on a later step.
TEST(PlannerPeakTracker, SamePeakAsTheSimulatorAfterAnySequenceOfSegmentChanges) {
  int decisions_with_segments = 0, peaks_that_moved = 0, peaks_the_saves_moved = 0, undone_trials = 0;
  // Seeds 6 to 8 also name what autograd saved, so a segment output read
  // after it dies at that read ([output-saved-only-inside]), which depends on the segments
  // around it.
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    const Profile p = residualNetworkProfile(8, seed, /*record_saves=*/seed > 5);
    const Simulator simulator(p);
    const Profile p_without_saves = residualNetworkProfile(8, seed);
    const Simulator without_saves(p_without_saves);
    const std::vector<NodeRange> legal = legalRanges(simulator);
    ASSERT_GT(legal.size(), 10u) << "seed " << seed;
    const int64_t baseline = simulator.baseline().peak_bytes;

    PeakTracker tracker(simulator.index());
    std::map<int, NodeRange> decision;  // by first node, kept independently of the tracker
    std::mt19937 random(seed);
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
    // A legal range that overlaps nothing in `decision`, or none after some tries.
    auto freeRange = [&](NodeRange& out) {
      for (int attempt = 0; attempt < 50; ++attempt) {
        out = legal[pick(legal.size())];
        if (!overlapsAny(out, decision)) return true;
      }
      return false;
    };
    for (int step = 0; step < 150; ++step) {
      const int operation = static_cast<int>(pick(3));  // 0 add, 1 remove, 2 swap one for another
      std::vector<NodeRange> removed, added;
      if (operation != 0 && !decision.empty()) {
        auto it = std::next(decision.begin(), static_cast<long>(pick(decision.size())));
        removed.push_back(it->second);
        decision.erase(it);
      }
      NodeRange range;
      if (operation != 1 && freeRange(range)) {
        added.push_back(range);
        decision[range.first_node] = range;
      }
      tracker.replace(removed, added);
      const RecomputeDecision now = asDecision(decision);
      expectSameAsSimulator(simulator, tracker, now, "seed " + std::to_string(seed) + " step " + std::to_string(step));
      if (::testing::Test::HasFatalFailure()) return;
      decisions_with_segments += !now.empty();
      peaks_that_moved += tracker.peakBytes() != baseline;
      if (seed > 5) peaks_the_saves_moved += tracker.peakBytes() != without_saves.simulate(now).peak_bytes;

      // A trial that is not kept (a move the refiner rejects): after
      // undoLastReplace the tracker is at `now` again, and the steps after
      // build on what the undo restored (segments, intervals, dropped tensors).
      std::vector<NodeRange> trial_removed, trial_added;
      if (!decision.empty() && pick(2) == 0)
        trial_removed.push_back(std::next(decision.begin(), static_cast<long>(pick(decision.size())))->second);
      if (freeRange(range)) trial_added.push_back(range);
      tracker.replace(trial_removed, trial_added);
      tracker.undoLastReplace();
      undone_trials += !trial_removed.empty() || !trial_added.empty();
      expectSameAsSimulator(simulator, tracker, now,
                            "seed " + std::to_string(seed) + " step " + std::to_string(step) + ", trial undone");
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  // The comparison means something only if it saw real decisions that change the peak.
  EXPECT_GT(decisions_with_segments, 500);
  EXPECT_GT(peaks_that_moved, 100);
  EXPECT_GT(peaks_the_saves_moved, 20) << "the saved-tensor facts never changed a peak";
  EXPECT_GT(undone_trials, 500);
}

// Range additions (the bottom-up walk of MaxSegmentTree::add) against a plain
// array: the maximum, its leftmost leaf, each leaf's value and the maximum of
// random ranges, at sizes that are and are not powers of two.
TEST(PlannerPeakTracker, RangeAdditionsAgreeWithAPlainArray) {
  std::mt19937 random(11);
  for (int size : {1, 2, 3, 64, 100, 1000}) {
    std::uniform_int_distribution<int64_t> value(-1000, 1000);
    std::vector<int64_t> plain(size);
    for (int64_t& v : plain) v = value(random);
    MaxSegmentTree tree(plain);
    std::uniform_int_distribution<int> leaf(0, size - 1);
    std::uniform_int_distribution<int64_t> delta(-300, 300);
    for (int round = 0; round < 200; ++round) {
      const int a = leaf(random), b = leaf(random);
      const int begin = std::min(a, b), end = std::max(a, b) + 1;
      const int64_t d = delta(random);
      tree.add(begin, end, d);
      for (int i = begin; i < end; ++i) plain[i] += d;
      const auto peak = std::max_element(plain.begin(), plain.end());
      ASSERT_EQ(tree.max(), *peak) << "size " << size << " round " << round;
      ASSERT_EQ(tree.leftmostMaxLeaf(), peak - plain.begin()) << "size " << size << " round " << round;
      const int probe = leaf(random);
      ASSERT_EQ(tree.valueAt(probe), plain[probe]) << "size " << size << " round " << round;
      const int c = leaf(random), e = leaf(random);
      const int range_begin = std::min(c, e), range_end = std::max(c, e) + 1;
      ASSERT_EQ(tree.maxIn(range_begin, range_end),
                *std::max_element(plain.begin() + range_begin, plain.begin() + range_end))
          << "size " << size << " round " << round;
    }
  }
}

// The bytes above a threshold, summed over the leaves (the refiner's tie-break
// between plans of equal peak), against a plain array after random range
// additions: at thresholds below, at and above the peak, and between values.
TEST(PlannerPeakTracker, ExcessAboveAThresholdIsThePlainSumOverLeaves) {
  std::mt19937 random(7);
  for (int size : {1, 5, 64, 100}) {
    std::uniform_int_distribution<int64_t> value(0, 1000);
    std::vector<int64_t> plain(size);
    for (int64_t& v : plain) v = value(random);
    MaxSegmentTree tree(plain);
    std::uniform_int_distribution<int> leaf(0, size - 1);
    std::uniform_int_distribution<int64_t> delta(-300, 300);
    for (int round = 0; round < 50; ++round) {
      const int a = leaf(random), b = leaf(random);
      const int begin = std::min(a, b), end = std::max(a, b) + 1;
      const int64_t d = delta(random);
      tree.add(begin, end, d);
      for (int i = begin; i < end; ++i) plain[i] += d;
      const int64_t peak = *std::max_element(plain.begin(), plain.end());
      for (int64_t threshold : {peak + 1, peak, peak - 1, peak - 250, int64_t{-2000}}) {
        int64_t expected = 0;
        for (int64_t v : plain) expected += std::max<int64_t>(0, v - threshold);
        ASSERT_EQ(tree.excessAbove(threshold), expected) << "size " << size << " round " << round << " threshold "
                                                         << threshold;
      }
    }
  }
}

}  // namespace
}  // namespace acprof
