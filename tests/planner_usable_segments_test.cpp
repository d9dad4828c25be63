// UsableSegments (planner/src/usable_segments.h) judges legality from one
// growing range per first node while the search asks a first node's ends in
// order, and each range alone otherwise. Either way its answer must be the one
// a range judged by itself gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

// The tests directory has no include path into the planner's sources (nor
// should it, but for this one class the search depends on).
#include "../planner/src/usable_segments.h"
#include "planner_test_profiles.h"

namespace acprof {
namespace {

using acprof::testing::residualNetworkProfile;

// Every range's answer from an instance that has judged nothing before it.
std::vector<std::vector<bool>> judgedAlone(const Simulator& simulator, SegmentChoice choice, int count) {
  std::vector<std::vector<bool>> answers(count, std::vector<bool>(count, false));
  for (int first = 0; first < count; ++first)
    for (int last = first; last < count; ++last) answers[first][last] = UsableSegments(simulator, choice).usable(first, last);
  return answers;
}

// The residual network, with rules that refuse ranges: every fourth value a
// compute node makes cannot leave a segment (a range must reach its last
// reader), and one node writes in place to a value an earlier node made (a
// range that reads it must reach that write).
Profile profileWithRefusedRanges() {
  Profile profile = residualNetworkProfile(5, 11, /*record_saves=*/true);
  int made = 0;
  for (GraphValue& value : profile.values)
    if (value.producer_node >= 0 && profile.nodes[value.producer_node].role == CutRole::Compute && ++made % 4 == 0)
      value.can_leave = false;
  const int writer = static_cast<int>(profile.nodes.size()) / 2;
  profile.nodes[writer].writes.push_back(profile.nodes[writer / 2].reads.front());
  return profile;
}

TEST(UsableSegments, RowsAndRangesAskedInAnyOrderGetTheAnswerOfARangeJudgedAlone) {
  const Profile profile = profileWithRefusedRanges();
  const Simulator simulator(profile);
  const int count = static_cast<int>(simulator.index().compute_nodes.size());
  ASSERT_GT(count, 10);
  for (const SegmentChoice choice : {SegmentChoice::Dropping, SegmentChoice::EveryEarlierFree}) {
    const std::vector<std::vector<bool>> expected = judgedAlone(simulator, choice, count);
    int usable_count = 0;
    // As the search asks: each first node's ends in increasing order, from the first itself.
    UsableSegments in_rows(simulator, choice);
    for (int first = 0; first < count; ++first)
      for (int last = first; last < count; ++last) {
        EXPECT_EQ(in_rows.usable(first, last), expected[first][last]) << first << ".." << last;
        usable_count += expected[first][last];
      }
    EXPECT_GT(usable_count, 0) << "a profile with no usable range would test nothing";
    EXPECT_LT(usable_count, count * (count + 1) / 2) << "nor one where every range is usable";
    // As repairs ask: any order, rows interrupted, ends going backwards.
    std::vector<std::pair<int, int>> ranges;
    for (int first = 0; first < count; ++first)
      for (int last = first; last < count; ++last) ranges.emplace_back(first, last);
    std::shuffle(ranges.begin(), ranges.end(), std::mt19937(3));
    UsableSegments shuffled(simulator, choice);
    for (const auto& [first, last] : ranges)
      EXPECT_EQ(shuffled.usable(first, last), expected[first][last]) << first << ".." << last;
  }
}

}  // namespace
}  // namespace acprof
