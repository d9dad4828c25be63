// How many measured iterations a profile takes (measured_iterations.h): two
// when they agree, more up to --iters while they do not.
#include "measured_iterations.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace acprof
