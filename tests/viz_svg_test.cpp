#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "acprof/viz.h"
#include "text_count.h"
#include "viz_synthetic_profile.h"

namespace acprof {
namespace {

using testing::countOf;

TEST(TimelineSvg, IsOneSvgElementWithABandPerNonEmptyCategoryInPyTorchColours) {
  const std::string svg = renderTimelineSvg(testing::smallTrainingProfile());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(countOf(svg, "<svg"), 1);
  EXPECT_EQ(countOf(svg, "</svg>"), 1);
  // The small profile uses weight, input, temporary, activation, gradient and
  // output; optimizer state (goldenrod) stays empty and is not drawn.
  for (const char* color : {"#006400", "#000000", "#9370db", "#ff0000", "#0000cd", "#808080"})
    EXPECT_NE(svg.find(std::string("fill=\"") + color + "\"><title>"), std::string::npos) << color;
  EXPECT_EQ(svg.find("fill=\"#daa520\"><title>"), std::string::npos);
  EXPECT_NE(svg.find("peak 11.23 KiB at aten::linear"), std::string::npos);
  // Tags balance: every opened path/text closes.
  EXPECT_EQ(countOf(svg, "<text"), countOf(svg, "</text>"));
  EXPECT_EQ(countOf(svg, "<title>"), countOf(svg, "</title>"));
}

TEST(TimelineSvg, EscapesNamesAndDrawsThePlansBudget) {
  testing::SmallProfileNames names;
  names.model_path = "<model & \"co\">.pt";
  const Profile profile = testing::smallTrainingProfile(names);
  const Plan plan = testing::smallTrainingPlan(profile);
  const std::string svg = renderTimelineSvg(profile, &plan);
  EXPECT_NE(svg.find("&lt;model &amp; &quot;co&quot;&gt;.pt"), std::string::npos);
  EXPECT_EQ(svg.find("<model"), std::string::npos);
  EXPECT_NE(svg.find("budget 8.79 KiB"), std::string::npos);
  EXPECT_NE(svg.find("stroke=\"#ff7f0e\""), std::string::npos);  // the predicted peak line
}

}  // namespace
}  // namespace acprof

namespace acprof {
namespace {

std::vector<FrontierPoint> smallFrontier() {
  return {{"none", 0, 12000, 0, 0},      {"mu-two", 11000, 10000, 100, 1}, {"mu-two", 9000, 8000, 300, 2},
          {"chen", 0, 9000, 400, 3},      {"per-block", 0, 8000, 350, 2}};
}

// The staircase joins none and mu-two's points in order; the fixed strategies
// are separate labelled marks; every point has a tooltip; the model path is escaped.
TEST(FrontierSvg, DrawsTheStaircaseTheMarkedStrategiesAndEscapesTheTitle) {
  testing::SmallProfileNames names;
  names.model_path = "<m>.pt";
  const Profile profile = testing::smallTrainingProfile(names);
  const std::string svg = renderFrontierSvg(profile, smallFrontier());
  EXPECT_EQ(countOf(svg, "<svg"), 1);
  EXPECT_EQ(countOf(svg, "<circle"), 5);
  EXPECT_EQ(countOf(svg, "<path d=\"M"), 1);
  EXPECT_EQ(countOf(svg, " L"), 4);  // two steps of two segments each, after the move to the first point
  EXPECT_NE(svg.find(">chen</text>"), std::string::npos);
  EXPECT_NE(svg.find(">per-block</text>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;m&gt;.pt"), std::string::npos);
  EXPECT_EQ(svg.find("<m>.pt"), std::string::npos);
  EXPECT_EQ(svg.find("this plan"), std::string::npos);
  EXPECT_EQ(countOf(svg, "<text"), countOf(svg, "</text>"));
}

// With a plan: it is ringed and its budget drawn; the rewrite's HTML report
// carries the same drawing when the plan has a frontier, and none without.
TEST(FrontierSvg, MarksThePlanAndAppearsInTheReportOnlyWithASweep) {
  const Profile profile = testing::smallTrainingProfile();
  Plan plan = testing::smallTrainingPlan(profile);
  const std::string svg = renderFrontierSvg(profile, smallFrontier(), &plan);
  EXPECT_NE(svg.find("this plan"), std::string::npos);
  EXPECT_NE(svg.find(">budget</text>"), std::string::npos);
  EXPECT_EQ(renderComparisonHtml(profile, profile, &plan).find("Peak vs extra time"), std::string::npos);
  plan.frontier = smallFrontier();
  const std::string html = renderComparisonHtml(profile, profile, &plan);
  EXPECT_NE(html.find("Peak vs extra time"), std::string::npos);
  EXPECT_NE(html.find(">per-block</text>"), std::string::npos);
}

}  // namespace
}  // namespace acprof
