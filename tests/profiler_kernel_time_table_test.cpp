// GPU kernel time per step from CUPTI-shaped records, on the CPU: the
// bookkeeping the CUPTI timer runs on the GPU machine (kernel_time_table.h).
#include "kernel_time_table.h"

#include <gtest/gtest.h>

namespace acprof {
namespace {

TEST(KernelTimeTable, KernelsAreSummedPerStepWhicheverRecordArrivesFirst) {
  KernelTimeTable table;
  table.addKernel(11, 1'000, 3'500);    // 2.5 us, before its link
  table.linkToStep(11, 7);
  table.linkToStep(12, 7);
  table.addKernel(12, 10'000, 10'500);  // 0.5 us, after its link
  table.addKernel(12, 11'000, 12'000);  // one launch, two kernels: 1 us more
  table.linkToStep(20, 8);
  table.addKernel(20, 0, 4'000);        // 4 us in another step
  const auto by_step = table.takeKernelTimeUsByStep();
  ASSERT_EQ(by_step.size(), 2u);
  EXPECT_DOUBLE_EQ(by_step.at(7), 4.0);
  EXPECT_DOUBLE_EQ(by_step.at(8), 4.0);
}

TEST(KernelTimeTable, AKernelLaunchedOutsideEveryStepCountsNowhere) {
  KernelTimeTable table;
  table.addKernel(5, 0, 9'000);  // e.g. a copy the recorder made between steps
  table.linkToStep(6, 1);
  table.addKernel(6, 0, 1'000);
  const auto by_step = table.takeKernelTimeUsByStep();
  ASSERT_EQ(by_step.size(), 1u);
  EXPECT_DOUBLE_EQ(by_step.at(1), 1.0);
}

TEST(KernelTimeTable, TakingEmptiesTheTableSoIterationsDoNotMix) {
  KernelTimeTable table;
  table.linkToStep(1, 3);
  table.addKernel(1, 0, 2'000);
  EXPECT_DOUBLE_EQ(table.takeKernelTimeUsByStep().at(3), 2.0);
  table.addKernel(1, 0, 5'000);  // the same id again, now with no link
  EXPECT_TRUE(table.takeKernelTimeUsByStep().empty());
}

}  // namespace
// Times of 0 for some steps are kernels' absence (a view launches none); times
// of 0 for all of them are the timer's failure.
TEST(KernelTimeTable, AnIterationWithNoKernelTimeAtAllIsTheTimersFailure) {
  EXPECT_TRUE(noKernelTimeLinked({0, 0, 0}));
  EXPECT_FALSE(noKernelTimeLinked({0, 12.5, 0}));
  EXPECT_FALSE(noKernelTimeLinked({}));
}

}  // namespace acprof
