// End to end: 'acprof view' on profiles and a plan written to disk.
#include <filesystem>
#include <string>

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

}  // namespace
}  // namespace acprof
