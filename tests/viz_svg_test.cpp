#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "acprof/viz.h"
#include "viz_synthetic_profile.h"

namespace acprof {
namespace {

int countOf(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

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
