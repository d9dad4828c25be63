// When acprof rewrite stops timing pairs of steps, and how sure the measured
// extra time is (pair_timing.h: medianStandardError, whyTimingStops).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "acprof/pair_timing.h"

namespace acprof {
namespace {

std::vector<double> repeated(const std::vector<double>& values, int times) {
  std::vector<double> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), values.begin(), values.end());
  return out;
}

// Nine values 0..8: quartiles 2 and 6, sigma 4 / 1.349, and the median's
// standard error 1.2533 sigma / 3. Four times as many values of the same
// spread halve it; one wild value (a step a busy machine stretched) moves
// neither quartile; three values have an IQR of half their range; two have no
// quartiles, and their median is their mean, whose standard error is half their
// difference; one value has none.
TEST(StepTiming, MedianStandardErrorFollowsTheSpreadAndTheCountNotTheOutliers) {
  const std::vector<double> nine = {4, 0, 8, 1, 7, 2, 6, 3, 5};
  const double expected = 1.2533 * (4 / 1.349) / 3;
  EXPECT_NEAR(medianStandardError(nine).value(), expected, 1e-9);
  EXPECT_NEAR(medianStandardError(repeated(nine, 4)).value(), expected / 2, 1e-9);
  std::vector<double> stretched = nine;
  stretched[2] = 1000;
  EXPECT_NEAR(medianStandardError(stretched).value(), expected, 1e-9);
  EXPECT_NEAR(medianStandardError({0.1, 0.3, 0.2}).value(), 1.2533 * (0.1 / 1.349) / std::sqrt(3.0), 1e-9);
  EXPECT_NEAR(medianStandardError({0.1, 0.3}).value(), 0.1, 1e-12);
  EXPECT_NEAR(medianStandardError({0.3, 0.1}).value(), 0.1, 1e-12);
  EXPECT_FALSE(medianStandardError({0.1}).has_value());
}

// Shares of pairs as this project's 2-core machine measured them (one step to
// the next varies by ±15 %) and as a quiet machine would.
const std::vector<double> kNoisyShares = {-0.11, 0.07, 0.17, -0.15, 0.21};
const std::vector<double> kQuietShares = {0.101, 0.098, 0.100, 0.103, 0.099};

// Whether the timing takes another pair: no limit has ended the pairs yet.
bool moreTimedPairsWanted(const std::vector<double>& extra_shares, double timed_seconds, int min_rounds) {
  return !whyTimingStops(extra_shares, timed_seconds, min_rounds).has_value();
}

TEST(StepTiming, PairsGoOnWhileShortOrImpreciseAndStopAtTheLimits) {
  // Fewer pairs than asked for: always more.
  EXPECT_TRUE(moreTimedPairsWanted({0.1, 0.1}, kMostTimedSeconds, 3));
  // Too few to know how sure the median is: more while the time allows.
  EXPECT_TRUE(moreTimedPairsWanted({0.1}, 2 * kLeastTimedSeconds, 1));
  EXPECT_FALSE(moreTimedPairsWanted({0.1}, kMostTimedSeconds, 1));
  // Two pairs that disagree by more than twice kTimedStandardError: more.
  EXPECT_TRUE(moreTimedPairsWanted({0.1, 0.1 + 3 * kTimedStandardError}, 2 * kLeastTimedSeconds, 2));
  // Short steps: more until kLeastTimedSeconds have passed, even when they agree.
  EXPECT_TRUE(moreTimedPairsWanted(kQuietShares, 0.5 * kLeastTimedSeconds, 5));
  // Pairs that disagree: more while the time allows...
  ASSERT_GT(medianStandardError(kNoisyShares).value(), kTimedStandardError);
  EXPECT_TRUE(moreTimedPairsWanted(kNoisyShares, 0.5 * kMostTimedSeconds, 5));
  // ... and no more once it has passed.
  EXPECT_FALSE(moreTimedPairsWanted(kNoisyShares, kMostTimedSeconds, 5));
  // Pairs that agree, past kLeastTimedSeconds: done.
  ASSERT_LT(medianStandardError(kQuietShares).value(), kTimedStandardError);
  EXPECT_FALSE(moreTimedPairsWanted(kQuietShares, 2 * kLeastTimedSeconds, 5));
  // Never past kMostTimedRounds unless the caller asked for more.
  const std::vector<double> many_noisy = repeated(kNoisyShares, kMostTimedRounds / 5);
  EXPECT_FALSE(moreTimedPairsWanted(many_noisy, 0.1, 5));
  EXPECT_TRUE(moreTimedPairsWanted(many_noisy, 0.1, kMostTimedRounds + 1));
}

// A rewrite's default pairs on a quiet machine are enough: two agreeing pairs
// of steps long enough stop the timing, so a rewrite costs few steps (issue 36).
TEST(StepTiming, TheDefaultPairsOfAQuietMachineArePrecise) {
  const std::vector<double> default_quiet(kQuietShares.begin(), kQuietShares.begin() + kDefaultTimedRounds);
  EXPECT_EQ(whyTimingStops(default_quiet, kLeastTimedSeconds, kDefaultTimedRounds), TimingStop::Precise);
  const std::vector<double> fewer_quiet(kQuietShares.begin(), kQuietShares.begin() + kDefaultTimedRounds - 1);
  EXPECT_FALSE(whyTimingStops(fewer_quiet, kLeastTimedSeconds, kDefaultTimedRounds).has_value());
}

// The reason names the rule that ended the pairs; a median sure enough is
// "precise" even when the time limit has passed too.
TEST(StepTiming, TheStopNamesTheLimitThatEndedThePairs) {
  EXPECT_FALSE(whyTimingStops(kQuietShares, 0.5 * kLeastTimedSeconds, 5).has_value());
  EXPECT_EQ(whyTimingStops(kQuietShares, 2 * kLeastTimedSeconds, 5), TimingStop::Precise);
  EXPECT_EQ(whyTimingStops(kQuietShares, 2 * kMostTimedSeconds, 5), TimingStop::Precise);
  EXPECT_EQ(whyTimingStops(kNoisyShares, kMostTimedSeconds, 5), TimingStop::TimeLimit);
  EXPECT_EQ(whyTimingStops({0.1}, kMostTimedSeconds, 1), TimingStop::TimeLimit);
  EXPECT_EQ(whyTimingStops({0.1, 0.1 + 3 * kTimedStandardError}, kMostTimedSeconds, 2), TimingStop::TimeLimit);
  EXPECT_EQ(whyTimingStops({0.1, 0.1 + kTimedStandardError}, kLeastTimedSeconds, 2), TimingStop::Precise);
  EXPECT_EQ(whyTimingStops(repeated(kNoisyShares, kMostTimedRounds / 5), 0.1, 5), TimingStop::PairLimit);
  // Asked for more than kMostTimedRounds: the pairs asked for are the limit.
  const std::vector<double> asked = repeated(kNoisyShares, 12);
  EXPECT_FALSE(whyTimingStops(repeated(kNoisyShares, 11), 0.1, 60).has_value());
  EXPECT_EQ(whyTimingStops(asked, 0.1, 60), TimingStop::PairLimit);
}

// The rewrite's budget of steps (timeRewrite's `another_pair_fits`) ends
// imprecise pairs past kLeastTimedSeconds; it never ends pairs that are
// precise (they stop as precise), short ones, or fewer than asked for.
TEST(StepTiming, AnotherPairThatDoesNotFitTheStepBudgetEndsImprecisePairs) {
  const double past_least = 2 * kLeastTimedSeconds;
  ASSERT_FALSE(whyTimingStops(kNoisyShares, past_least, 5, true).has_value());
  EXPECT_EQ(whyTimingStops(kNoisyShares, past_least, 5, false), TimingStop::StepBudget);
  EXPECT_EQ(whyTimingStops(kQuietShares, past_least, 5, false), TimingStop::Precise);
  EXPECT_FALSE(whyTimingStops(kNoisyShares, 0.5 * kLeastTimedSeconds, 5, false).has_value());
  EXPECT_FALSE(whyTimingStops({0.1, 0.3}, past_least, 3, false).has_value());
  // The 10 s limit is named as such where both have passed.
  EXPECT_EQ(whyTimingStops(kNoisyShares, kMostTimedSeconds, 5, false), TimingStop::TimeLimit);
}

// Note: [an inconclusive extra time] (pair_timing.h). The demo's two pairs, 33.7 %
// and 67.3 % over the original: their standard error, half their difference,
// is 16.8 % of the step, over the bound, so while the step budget allows they
// go on, and where it ends them the extra time is inconclusive. Two pairs that
// agree within twice the bound are precise and conclusive, whatever ended them.
TEST(StepTiming, PairsThatDisagreeGoOnWhileTheBudgetAllowsAndAreInconclusiveWhereItEndsThem) {
  const std::vector<double> demo = {0.337, 0.673};
  const double past_least = 2 * kLeastTimedSeconds;
  ASSERT_NEAR(medianStandardError(demo).value(), 0.168, 1e-12);
  EXPECT_FALSE(whyTimingStops(demo, past_least, kDefaultTimedRounds, /*another_pair_fits=*/true).has_value());
  EXPECT_EQ(whyTimingStops(demo, past_least, kDefaultTimedRounds, /*another_pair_fits=*/false), TimingStop::StepBudget);
  EXPECT_EQ(timingVerdict(medianStandardError(demo)), TimingVerdict::Inconclusive);
  // Noisy pairs the 10 s limit ended are inconclusive too; too few for a
  // standard error is never conclusive.
  ASSERT_EQ(whyTimingStops(kNoisyShares, kMostTimedSeconds, 5), TimingStop::TimeLimit);
  EXPECT_EQ(timingVerdict(medianStandardError(kNoisyShares)), TimingVerdict::Inconclusive);
  EXPECT_EQ(timingVerdict(medianStandardError({0.1})), TimingVerdict::Inconclusive);
  // Agreeing pairs: precise, and so conclusive, with or without budget left.
  const std::vector<double> agree = {0.100, 0.100 + kTimedStandardError};
  EXPECT_EQ(whyTimingStops(agree, past_least, kDefaultTimedRounds, false), TimingStop::Precise);
  EXPECT_EQ(timingVerdict(medianStandardError(agree)), TimingVerdict::Conclusive);
  // The verdict is the bound's, not the stop's: 50 pairs within it are conclusive at the pair limit.
  const std::vector<double> many_quiet = repeated(kQuietShares, kMostTimedRounds / 5);
  ASSERT_EQ(whyTimingStops(many_quiet, 0.1, 5), TimingStop::PairLimit);
  EXPECT_EQ(timingVerdict(medianStandardError(many_quiet)), TimingVerdict::Conclusive);
  EXPECT_EQ(timingVerdict(kTimedStandardError), TimingVerdict::Conclusive);
  EXPECT_EQ(timingVerdict(1.01 * kTimedStandardError), TimingVerdict::Inconclusive);
}

// What an inconclusive line suggests: the standard error falls as one over the
// root of the pairs, so 2 pairs at twice the bound need 8, the demo's 16.8 %
// (8.4 bounds) 2 * 8.4^2 = 141.1, so 142; never fewer than one more than were
// taken, and two where one pair had no standard error at all.
TEST(StepTiming, TheSuggestedPairsScaleWithTheSquareOfTheErrorOverTheBound) {
  EXPECT_EQ(pairsForPreciseTiming(2 * kTimedStandardError, 2), 8);
  EXPECT_EQ(pairsForPreciseTiming(0.168, 2), 142);
  EXPECT_EQ(pairsForPreciseTiming(0.5 * kTimedStandardError, 4), 5);
  EXPECT_EQ(pairsForPreciseTiming(std::nullopt, 1), 2);
}

TEST(StepTiming, AnotherPairFitsWhileTheRewriteStaysWithinItsStepBudget) {
  // Steps of a second: 10 s of budget, one pair (2 s), the re-profile (1.2 s) and the files (0.35 s).
  EXPECT_TRUE(anotherPairFits(6.0, 1.0, 1.0));
  EXPECT_FALSE(anotherPairFits(6.5, 1.0, 1.0));
  // A slower rewritten model leaves room for fewer pairs.
  EXPECT_FALSE(anotherPairFits(6.0, 1.0, 1.5));
}

TEST(StepTiming, EachStopHasTheOutcomesName) {
  EXPECT_STREQ(timingStopName(TimingStop::Precise), "precise");
  EXPECT_STREQ(timingStopName(TimingStop::TimeLimit), "time_limit");
  EXPECT_STREQ(timingStopName(TimingStop::StepBudget), "step_budget");
  EXPECT_STREQ(timingStopName(TimingStop::PairLimit), "pair_limit");
}

}  // namespace
}  // namespace acprof
