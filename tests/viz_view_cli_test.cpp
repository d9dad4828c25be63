// End to end: 'acprof view' on profiles and a plan written to disk.
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "test_support.h"
#include "viz_synthetic_profile.h"

namespace acprof {
namespace {

namespace fs = std::filesystem;
using testing::runAcprof;

class ViewCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::makeScratchDir("view");
    profile_ = testing::smallTrainingProfile();
    writeProfileFile(profile_, dir_ + "/profile.json");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
  Profile profile_;
};

TEST_F(ViewCommand, DefaultsToProfileJsonAndWritesTimelineHtml) {
  const auto result = runAcprof("view", dir_);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "wrote timeline.html\n");
  const std::string html = readWholeFile(dir_ + "/timeline.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("\"kind\":\"timeline\""), std::string::npos);
}

TEST_F(ViewCommand, WritesComparisonSvgAndTraceWithAPlan) {
  Profile after = testing::smallTrainingProfile();
  after.meta.model_path = "small.ckpt.pt";
  writeProfileFile(after, dir_ + "/after.json");
  writePlanFile(testing::smallTrainingPlan(profile_), dir_ + "/plan.json");
  const auto result =
      runAcprof("view profile.json after.json --plan plan.json -o report.html --svg chart.svg --trace trace.json", dir_);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(readWholeFile(dir_ + "/report.html").find("\"kind\":\"comparison\""), std::string::npos);
  EXPECT_EQ(readWholeFile(dir_ + "/chart.svg").rfind("<svg", 0), 0u);
  const auto trace = nlohmann::json::parse(readWholeFile(dir_ + "/trace.json"));
  EXPECT_FALSE(trace["traceEvents"].empty());
}

TEST_F(ViewCommand, NeverOverwritesAnInput) {
  const std::string before = readWholeFile(dir_ + "/profile.json");
  const auto result = runAcprof("view profile.json -o profile.json", dir_);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err.rfind("acprof: error: profile.json: the output would overwrite an input", 0), 0u) << result.err;
  EXPECT_EQ(testing::lineCount(result.err), 1);
  EXPECT_EQ(readWholeFile(dir_ + "/profile.json"), before);
}

TEST_F(ViewCommand, RefusesOneFileForTwoOutputsAndWritesNothing) {
  const auto result = runAcprof("view --svg same.out --trace same.out", dir_);
  EXPECT_EQ(result.exit_code, 2) << "exit code 2: usage";
  EXPECT_NE(result.err.find("given for two outputs"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(dir_ + "/timeline.html"));
  EXPECT_FALSE(fs::exists(dir_ + "/same.out"));
}

TEST_F(ViewCommand, AMissingProfileIsAOneLineErrorAndNoOutput) {
  const auto result = runAcprof("view missing.json", dir_);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err.rfind("acprof: error: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find("missing.json"), std::string::npos) << result.err;
  EXPECT_EQ(testing::lineCount(result.err), 1);
  EXPECT_FALSE(fs::exists(dir_ + "/timeline.html"));
}

// Runs of acprof that write one output at the same moment: each writes a
// temporary file of its own and renames it into place, so every run succeeds
// and the output is always one run's whole page, never a mix of two. The two
// kinds of run write different pages (with and without a plan), each tens of
// KB that take several writes, so writing into the path itself would interleave.
TEST_F(ViewCommand, ConcurrentRunsWritingOneOutputLeaveOneWholePage) {
  writePlanFile(testing::smallTrainingPlan(profile_), dir_ + "/plan.json");
  ASSERT_EQ(runAcprof("view profile.json -o alone.html", dir_).exit_code, 0);
  ASSERT_EQ(runAcprof("view profile.json --plan plan.json -o alone_with_plan.html", dir_).exit_code, 0);
  const std::string alone = readWholeFile(dir_ + "/alone.html");
  const std::string alone_with_plan = readWholeFile(dir_ + "/alone_with_plan.html");
  ASSERT_NE(alone, alone_with_plan);
  ASSERT_GT(alone.size(), 50000u);

  constexpr int kRounds = 2;
  constexpr int kRunsPerRound = 4;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<testing::CommandResult> results(kRunsPerRound);
    std::vector<std::thread> runs;
    for (int i = 0; i < kRunsPerRound; ++i)
      runs.emplace_back([&, i] {
        results[i] = runAcprof(i % 2 ? "view profile.json --plan plan.json -o out.html" : "view profile.json -o out.html",
                               dir_);
      });
    for (std::thread& run : runs) run.join();
    for (const testing::CommandResult& result : results) EXPECT_EQ(result.exit_code, 0) << result.err;
    const std::string out = readWholeFile(dir_ + "/out.html");
    EXPECT_TRUE(out == alone || out == alone_with_plan) << "round " << round << ": out.html is " << out.size()
                                                        << " bytes, neither run's page";
  }
  std::set<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir_)) left.insert(entry.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"profile.json", "plan.json", "alone.html", "alone_with_plan.html", "out.html"}))
      << "a temporary file was left behind";
}

}  // namespace
}  // namespace acprof
