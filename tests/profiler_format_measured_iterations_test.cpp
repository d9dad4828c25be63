// How many measured iterations a profile takes (measured_iterations.h): two
// when they agree, more up to --iters while they do not.
#include "acprof/measured_iterations.h"

#include <gtest/gtest.h>

#include "acprof/command_budget.h"

namespace acprof {
namespace {

TEST(MeasuredIterations, TwoAgreeingIterationsAreEnough) {
  EXPECT_TRUE(moreIterationsWanted({}, 5));
  EXPECT_TRUE(moreIterationsWanted({100.0}, 5)) << "one iteration cannot show that times agree";
  EXPECT_FALSE(moreIterationsWanted({100.0, 101.0}, 5));
}

TEST(MeasuredIterations, DisagreeingIterationsAreMeasuredUpToTheMost) {
  EXPECT_TRUE(moreIterationsWanted({100.0, 110.0}, 5));
  EXPECT_TRUE(moreIterationsWanted({100.0, 110.0, 120.0, 130.0}, 5));
  EXPECT_FALSE(moreIterationsWanted({100.0, 110.0, 120.0, 130.0, 140.0}, 5));
}

TEST(MeasuredIterations, OneSlowIterationCostsOneMoreNotAllUpToTheMost) {
  EXPECT_FALSE(moreIterationsWanted({130.0, 100.0, 101.0}, 5)) << "two of three agree";
  EXPECT_TRUE(moreIterationsWanted({100.0, 101.0, 130.0, 140.0}, 5)) << "two of four are no majority";
  EXPECT_FALSE(moreIterationsWanted({100.0, 101.0, 130.0, 101.5}, 5)) << "three of four agree";
}

TEST(MeasuredIterations, TheSpreadIsAShareOfTheMedian) {
  const double edge = kAgreeingIterationSpread * 1000.0;
  EXPECT_FALSE(moreIterationsWanted({1000.0, 1000.0 + 0.9 * edge}, 5));
  EXPECT_TRUE(moreIterationsWanted({1000.0, 1000.0 + 1.1 * edge}, 5));
}

TEST(MeasuredIterations, FewerAskedThanTwoAreMeasuredExactly) {
  EXPECT_TRUE(moreIterationsWanted({}, 1));
  EXPECT_FALSE(moreIterationsWanted({100.0}, 1));
}

// Steps of a second that disagree by 10 %: the agreement rule wants a third,
// which the budget of kProfileStepBudget plain steps allows only while it fits.
TEST(MeasuredIterations, OneMoreIterationIsMeasuredOnlyWhileItFitsTheProfilesStepBudget) {
  const std::vector<double> disagreeing = {1.0e6, 1.1e6};
  ASSERT_TRUE(moreIterationsWanted(disagreeing, 5)) << "no budget: the agreement rule alone";
  const double after = kDerivingAndWritingSeconds;
  // One more (its median, 1.05 s) and the writing after it, on top of what was spent.
  const double room = kProfileStepBudget * 1.0 - 1.05 - after;
  EXPECT_TRUE(moreIterationsWanted(disagreeing, 5, ProfileCost{room - 0.01, 1.0, after}));
  EXPECT_FALSE(moreIterationsWanted(disagreeing, 5, ProfileCost{room + 0.01, 1.0, after}));
  // The step is the plain one: probes that make iterations 20 % longer leave less room.
  EXPECT_FALSE(moreIterationsWanted(disagreeing, 5, ProfileCost{room - 0.01, 0.8, after}));
  // Agreeing iterations stop however much room is left.
  EXPECT_FALSE(moreIterationsWanted({1.0e6, 1.001e6}, 5, ProfileCost{0, 1.0, after}));
}

// Steps of milliseconds: the process start alone is over any budget in steps,
// and iterations that have taken under kLeastRoundSeconds are measured anyway.
TEST(MeasuredIterations, ShortIterationsAreMeasuredWhateverTheBudgetUntilHalfASecond) {
  const ProfileCost started{1.0, 0.001, kDerivingAndWritingSeconds};
  EXPECT_TRUE(moreIterationsWanted({1000.0, 1100.0}, 5, started));
  const double each_us = 0.6 * kLeastRoundSeconds * 1e6;
  EXPECT_FALSE(moreIterationsWanted({each_us, 1.1 * each_us}, 5, ProfileCost{2.0, each_us / 1e6, 0}));
}

}  // namespace
}  // namespace acprof
