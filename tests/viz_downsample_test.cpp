#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "downsample.h"
#include "memory_series.h"
#include "viz_synthetic_profile.h"

namespace acprof::viz {
namespace {

std::vector<int64_t> randomWalk(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> step(-1000, 1000);
  std::vector<int64_t> values(n);
  int64_t v = 1'000'000;
  for (int i = 0; i < n; ++i) values[i] = v += step(rng);
  return values;
}

TEST(PeakPreservingSampleIndices, KeepsEverySampleWhenTheSeriesIsShort) {
  const std::vector<int64_t> values = {5, 1, 9, 3};
  EXPECT_EQ(peakPreservingSampleIndices(values, 4), (std::vector<int>{0, 1, 2, 3}));
}

TEST(PeakPreservingSampleIndices, StaysWithinTheSampleBudget) {
  const std::vector<int64_t> values = randomWalk(100'003, 1);
  const std::vector<int> kept = peakPreservingSampleIndices(values, 1000);
  EXPECT_LE(kept.size(), 1001u);
  EXPECT_GE(kept.size(), 500u);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  EXPECT_EQ(kept.front(), 0);
}

TEST(PeakPreservingSampleIndices, KeepsTheGlobalPeakExactly) {
  std::vector<int64_t> values = randomWalk(250'000, 2);
  values[123'457] = 50'000'000;  // a one-event spike far above the walk
  const std::vector<int> kept = peakPreservingSampleIndices(values, 2000);
  EXPECT_NE(std::find(kept.begin(), kept.end(), 123'457), kept.end());
}

TEST(PeakPreservingSampleIndices, EveryBucketKeepsItsMaximumAndMinimum) {
  const int n = 99'991, max_samples = 700, buckets = max_samples / 2;
  const std::vector<int64_t> values = randomWalk(n, 3);
  const std::vector<int> kept = peakPreservingSampleIndices(values, max_samples);
  for (int b = 0; b < buckets; ++b) {
    const int64_t first = int64_t(b) * n / buckets, end = int64_t(b + 1) * n / buckets;
    const int64_t bucket_max = *std::max_element(values.begin() + first, values.begin() + end);
    const int64_t bucket_min = *std::min_element(values.begin() + first, values.begin() + end);
    bool max_kept = false, min_kept = false;
    for (int i : kept) {
      if (i < first || i >= end) continue;
      max_kept = max_kept || values[i] == bucket_max;
      min_kept = min_kept || values[i] == bucket_min;
    }
    EXPECT_TRUE(max_kept) << "bucket " << b << " lost its maximum " << bucket_max;
    EXPECT_TRUE(min_kept) << "bucket " << b << " lost its minimum " << bucket_min;
  }
}

TEST(SampleTimeline, KeepsTheProfilesPeakAndBreakdownWhenDownsampling) {
  const int64_t spike = 512LL << 20;
  const Profile profile = testing::longSawtoothProfile(200'000, 77'778, spike);
  const SampledTimeline sampled = sampleTimeline(profile, 1000);
  EXPECT_LE(sampled.events.size(), 1001u);
  EXPECT_EQ(sampled.peak_event, 77'778);
  EXPECT_EQ(totalBytes(sampled.peak_bytes), (1 << 20) + spike);
  EXPECT_EQ(totalBytes(sampled.peak_bytes), profile.summary.peak_bytes);
  const auto at = std::find(sampled.events.begin(), sampled.events.end(), 77'778);
  ASSERT_NE(at, sampled.events.end());
  EXPECT_EQ(totalBytes(sampled.bytes[at - sampled.events.begin()]), (1 << 20) + spike);
}

TEST(PhaseAlignedAxis, MapsEachPhaseOfOneProfileOntoTheSamePhaseOfTheOther) {
  const Profile before = testing::smallTrainingProfile();
  const Profile longer = testing::longSawtoothProfile(4000, 0, 1);  // forward 0..2000, backward 2000..4000
  // Different phase sequences (no loss, no optimizer): the whole iteration stretches.
  const PhaseAlignedAxis stretched(longer, before);
  EXPECT_DOUBLE_EQ(stretched.map(0), 0);
  EXPECT_DOUBLE_EQ(stretched.map(4000), before.event_count);
  EXPECT_DOUBLE_EQ(stretched.map(2000), before.event_count / 2.0);
  // The same phases with other lengths. Before: forward [0,5), loss [5,6),
  // backward [6,11), optimizer [11,12). After: forward [0,2), loss [2,3),
  // backward [3,9), optimizer [9,10).
  testing::ProfileBuilder b;
  const int node = b.node("acprof::checkpoint", {}, {}, 1, "features");
  b.free(b.alloc(8, Category::Temporary, "x"));
  b.loss(1);
  b.alloc(4, Category::Output, "loss");
  b.backward(node, 1, "CheckpointBackward");
  for (int i = 0; i < 3; ++i) b.free(b.alloc(8, Category::Temporary, "y"));
  b.optimizer(1);
  b.alloc(4, Category::OptimizerState, "m");
  b.model("after.pt", "sha-synthetic");
  const Profile after = b.finish();
  const PhaseAlignedAxis aligned(after, before);
  EXPECT_DOUBLE_EQ(aligned.map(0), 0);
  EXPECT_DOUBLE_EQ(aligned.map(1), 2.5);   // half of forward
  EXPECT_DOUBLE_EQ(aligned.map(2), 5);     // loss starts together
  EXPECT_DOUBLE_EQ(aligned.map(3), 6);     // backward starts together
  EXPECT_DOUBLE_EQ(aligned.map(6), 8.5);   // half of backward
  EXPECT_DOUBLE_EQ(aligned.map(9), 11);    // optimizer starts together
  EXPECT_DOUBLE_EQ(aligned.map(10), 12);   // and ends together
}

}  // namespace
}  // namespace acprof::viz
