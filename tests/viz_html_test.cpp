#include <algorithm>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "acprof/segment_names.h"

#include "acprof/viz.h"
#include "embedded_assets.h"
#include "text_count.h"
#include "viz_synthetic_profile.h"

namespace acprof {
namespace {

using testing::countOf;

using nlohmann::json;

const std::string kDataOpen = "<script type=\"application/json\" id=\"acprof-data\">";

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The embedded data as the browser's JSON.parse would see it: the text up to
// the first "</script" after the opening tag, which is where the HTML parser
// ends the element whatever the JSON says.
json embeddedData(const std::string& html) {
  const size_t open = html.find(kDataOpen);
  EXPECT_NE(open, std::string::npos);
  const size_t begin = open + kDataOpen.size();
  const size_t end = lowercase(html).find("</script", begin);
  return json::parse(html.substr(begin, end - begin));
}

TEST(TimelineHtml, EmbedsDygraphsWithItsLicenceAndLoadsNothingFromTheNetwork) {
  const std::string html = renderTimelineHtml(testing::smallTrainingProfile());
  EXPECT_NE(html.find(viz::assets::kDygraphJs), std::string::npos);
  EXPECT_NE(html.find(viz::assets::kDygraphCss), std::string::npos);
  EXPECT_NE(html.find(viz::assets::kDygraphCopyright), std::string::npos);
  EXPECT_NE(html.find("Dan Vanderkam"), std::string::npos);  // dygraphs' copyright line, from Debian's file
  EXPECT_NE(html.find("Permission is hereby granted"), std::string::npos);  // and the MIT licence text
  EXPECT_GT(viz::assets::kDygraphJs.size(), 20000u);
  const std::string lower = lowercase(html);
  EXPECT_FALSE(std::regex_search(lower, std::regex("<script[^>]*\\bsrc\\s*=")));
  EXPECT_FALSE(std::regex_search(lower, std::regex("<link\\b")));
  EXPECT_FALSE(std::regex_search(lower, std::regex("@import|url\\(\\s*['\"]?(https?:)?//")));
  EXPECT_FALSE(std::regex_search(lower, std::regex("(src|href)\\s*=\\s*['\"]?(https?:)?//")));
  EXPECT_FALSE(std::regex_search(lower, std::regex("\\b(fetch|xmlhttprequest|importscripts)\\s*\\(")));
}

TEST(TimelineHtml, ChartCarriesCornerPointsPerCategoryAndTheExactPeak) {
  const Profile profile = testing::smallTrainingProfile();
  const json data = embeddedData(renderTimelineHtml(profile, nullptr, ChartXAxis::AllocatorEvents));
  const json& section = data["profiles"][0];
  const int samples = static_cast<int>(section["samples"]["event"].size());
  EXPECT_EQ(samples, profile.event_count);  // 12 events: nothing to downsample
  ASSERT_EQ(section["chart"]["x"].size(), 2u * samples);
  // Corners: sample 3 (the peak event) holds on [3, 4).
  EXPECT_EQ(section["chart"]["x"][6], 3);
  EXPECT_EQ(section["chart"]["x"][7], 4);
  int64_t total_at_peak = 0;
  for (const json& category : section["chart"]["bytes"]) {
    ASSERT_EQ(category.size(), 2u * samples);
    EXPECT_EQ(category[6], category[7]);
    total_at_peak += category[6].get<int64_t>();
  }
  EXPECT_EQ(total_at_peak, testing::kSmallProfilePeakBytes);
  EXPECT_EQ(section["peak"]["bytes"], testing::kSmallProfilePeakBytes);
  EXPECT_EQ(section["peak"]["event"], 3);
  EXPECT_EQ(section["peak"]["step"], 2);
  EXPECT_EQ(section["steps"]["op"][section["peak"]["step"].get<int>()], "aten::linear");
  // PyTorch's colours, bottom of the stack first: what stays through the step, then what the step makes.
  EXPECT_EQ(data["categories"][0]["name"], "weight");
  EXPECT_EQ(data["categories"][0]["color"], "#006400");
  EXPECT_EQ(data["categories"][3]["name"], "communication");
  EXPECT_EQ(data["categories"][5]["name"], "activation");
  EXPECT_EQ(data["categories"][5]["color"], "#ff0000");
}

// Kernel time and wall time are not comparable; the report says which the profile holds.
TEST(TimelineHtml, StatesWhatTheStepTimesMeasure) {
  Profile profile = testing::smallTrainingProfile();
  EXPECT_EQ(embeddedData(renderTimelineHtml(profile))["profiles"][0]["time"]["source"], "wall time");
  profile.meta.time_source = "cupti_kernels";
  EXPECT_EQ(embeddedData(renderTimelineHtml(profile))["profiles"][0]["time"]["source"],
            "summed GPU kernel time (CUPTI)");
}

TEST(TimelineHtml, NamesWithMarkupQuotesAndOddUnicodeCannotLeaveTheScriptElement) {
  testing::SmallProfileNames names;
  names.relu_op = "</script><script>alert(1)</script><!-- \"q\" 'a' \\b\\ & ünï→ \u2028x\u2029";
  names.conv_scope = "</SCRIPT ><img src=x onerror=alert(2)>";
  names.model_path = "</title><script>alert(3)</script>.pt";
  std::string invalid_utf8_scope = "bad\xff\xfe utf8";
  Profile profile = testing::smallTrainingProfile(names);
  profile.steps[2].scope = invalid_utf8_scope;
  const std::string html = renderTimelineHtml(profile, nullptr);

  // Exactly the page's own three scripts open and close.
  const std::string lower = lowercase(html);
  EXPECT_EQ(countOf(lower, "<script"), 3);
  EXPECT_EQ(countOf(lower, "</script"), 3);
  EXPECT_EQ(countOf(lower, "<img"), 0);
  EXPECT_EQ(countOf(html, "<!--"), 0);
  EXPECT_EQ(html.find("\u2028"), std::string::npos);
  EXPECT_EQ(html.find("\u2029"), std::string::npos);
  EXPECT_NE(html.find("<title>acprof: &lt;/title&gt;&lt;script&gt;alert(3)&lt;/script&gt;.pt</title>"),
            std::string::npos);

  // And the data parses back to the very same names.
  const json data = embeddedData(html);
  const json& steps = data["profiles"][0]["steps"];
  EXPECT_EQ(steps["op"][1], names.relu_op);
  EXPECT_EQ(steps["scope"][0], names.conv_scope);
  EXPECT_EQ(steps["scope"][2], "bad\uFFFD\uFFFD utf8");
  EXPECT_EQ(data["title"], names.model_path);
}

TEST(TimelineHtml, PlanAddsBudgetPredictionSegmentHighlightsAndTheSegmentsTable) {
  const Profile profile = testing::smallTrainingProfile();
  const Plan plan = testing::smallTrainingPlan(profile);
  const json data = embeddedData(renderTimelineHtml(profile, &plan, ChartXAxis::AllocatorEvents));
  ASSERT_TRUE(data["plan"].is_object());
  EXPECT_EQ(data["plan"]["budget_bytes"], 9000);
  EXPECT_EQ(data["plan"]["predicted_peak_bytes"], 7500);
  // One predicted value per step, as corners over the step's events.
  EXPECT_EQ(data["plan"]["predicted"]["x"].size(), 2 * profile.steps.size());
  EXPECT_EQ(data["plan"]["predicted"]["bytes"][4], 7500);
  const json& segment = data["plan"]["segments"][0];
  EXPECT_EQ(segment["dropped_bytes"], 4000);
  EXPECT_EQ(segment["first_op"], "aten::conv2d");
  EXPECT_EQ(segment["last_op"], "aten::relu");
  // Named as the terminal names it (segment_names.h), by module path and ops.
  EXPECT_EQ(segment["description"], segmentDescription(profile, plan.segments[0]));
  EXPECT_NE(segment["description"].get<std::string>().find("conv2d, relu"), std::string::npos) << segment;
  EXPECT_EQ(segment["recompute_step"], 5);  // as the plan says
  // Highlights: the segment's forward steps are events [0, 2); its recompute is step 5's events [8, 9).
  const json& highlights = data["profiles"][0]["highlights"];
  ASSERT_EQ(highlights.size(), 2u);
  EXPECT_EQ(highlights[0]["kind"], "segment");
  EXPECT_EQ(highlights[0]["x0"], 0);
  EXPECT_EQ(highlights[0]["x1"], 2);
  EXPECT_EQ(highlights[1]["kind"], "recompute");
  EXPECT_EQ(highlights[1]["x0"], 8);
  EXPECT_EQ(highlights[1]["x1"], 9);
  // A is dropped by the plan and marked so in the activations table.
  const json& activations = data["profiles"][0]["largest_activations"];
  ASSERT_EQ(activations.size(), 2u);
  EXPECT_EQ(activations[0]["name"], "A");
  EXPECT_EQ(activations[0]["dropped"], true);
  EXPECT_EQ(activations[1]["dropped"], false);
}

TEST(TimelineHtml, LongTimelinesAreDownsampledToABoundedChartThatKeepsThePeak) {
  const int64_t spike = 300LL << 20;
  const Profile profile = testing::longSawtoothProfile(400'000, 123'456, spike);
  const json data = embeddedData(renderTimelineHtml(profile, nullptr, ChartXAxis::AllocatorEvents));
  const json& section = data["profiles"][0];
  EXPECT_TRUE(section["downsampled"].get<bool>());
  EXPECT_LE(section["samples"]["event"].size(), 16001u);
  EXPECT_EQ(section["chart"]["x"].size(), 2 * section["samples"]["event"].size());
  EXPECT_EQ(section["peak"]["event"], 123'456);
  EXPECT_EQ(section["peak"]["bytes"], (1 << 20) + spike);
  // The spike is drawn: some corner of the stack reaches it exactly.
  int64_t drawn_max = 0;
  for (size_t i = 0; i < section["chart"]["x"].size(); ++i) {
    int64_t total = 0;
    for (const json& category : section["chart"]["bytes"]) total += category[i].get<int64_t>();
    drawn_max = std::max(drawn_max, total);
  }
  EXPECT_EQ(drawn_max, (1 << 20) + spike);
}

TEST(TimelineHtml, RejectsAPlanMadeForAnotherModel) {
  const Profile profile = testing::smallTrainingProfile();
  Plan plan = testing::smallTrainingPlan(profile);
  plan.model_sha256 = "another";
  try {
    renderTimelineHtml(profile, &plan);
    FAIL() << "a plan for another model was drawn";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another model"), std::string::npos) << e.what();
  }
}

TEST(ComparisonHtml, AlignsTheAfterProfilePhaseByPhaseAndOverlaysBothTotals) {
  const Profile before = testing::smallTrainingProfile();
  // "After": the same model with A never stored, as if recomputed.
  Profile after = testing::smallTrainingProfile();
  for (TensorRecord& t : after.tensors)
    if (t.name == "A") t.bytes = 0;
  timelineFromTensors(after);
  const Plan plan = testing::smallTrainingPlan(before);
  const json data =
      embeddedData(renderComparisonHtml(before, after, &plan, "", nullptr, ChartXAxis::AllocatorEvents));
  EXPECT_EQ(data["kind"], "comparison");
  ASSERT_EQ(data["profiles"].size(), 2u);
  EXPECT_EQ(data["profiles"][0]["peak"]["bytes"], testing::kSmallProfilePeakBytes);
  EXPECT_EQ(data["profiles"][1]["peak"]["bytes"], testing::kSmallProfilePeakBytes - 4000);
  const json& overlay = data["overlay"];
  ASSERT_EQ(overlay["x"].size(), overlay["before"].size());
  ASSERT_EQ(overlay["x"].size(), overlay["after"].size());
  int64_t before_max = 0, after_max = 0;
  for (size_t i = 0; i < overlay["x"].size(); ++i) {
    before_max = std::max(before_max, overlay["before"][i].get<int64_t>());
    after_max = std::max(after_max, overlay["after"][i].get<int64_t>());
  }
  EXPECT_EQ(before_max, testing::kSmallProfilePeakBytes);
  EXPECT_EQ(after_max, testing::kSmallProfilePeakBytes - 4000);
}

// The rewrite's verification sentence is part of the page, escaped, and
// absent when none is given (acprof view compares two profiles unverified).
TEST(ComparisonHtml, ShowsTheVerificationSentenceItIsGiven) {
  const Profile profile = testing::smallTrainingProfile();
  const std::string with = renderComparisonHtml(profile, profile, nullptr, "Verification: <bit> for bit.");
  EXPECT_NE(with.find("<p id=\"verification\">Verification: &lt;bit&gt; for bit.</p>"), std::string::npos);
  EXPECT_EQ(renderComparisonHtml(profile, profile).find("id=\"verification\""), std::string::npos);
}

// By default the x axis is wall time: each step spans its measured time, so a
// phase is as wide as it took (the optimizer's many small steps no longer
// fill the page), and the chart ends at the iteration's total time.
TEST(TimelineHtml, TheDefaultXAxisIsWallTimeWithEachStepAsWideAsItTook) {
  Profile profile = testing::smallTrainingProfile();
  const json events = embeddedData(renderTimelineHtml(profile, nullptr, ChartXAxis::AllocatorEvents));
  const json time = embeddedData(renderTimelineHtml(profile));
  EXPECT_EQ(events["x_axis"], "allocator_event");
  EXPECT_EQ(time["x_axis"], "wall_time_ms");
  double total_ms = 0;
  for (const Step& step : profile.steps) total_ms += step.time_us / 1000.0;
  EXPECT_NEAR(time["profiles"][0]["end_x"].get<double>(), total_ms, 1e-4);
  EXPECT_EQ(events["profiles"][0]["end_x"].get<double>(), profile.event_count);
  // Each phase spans the time of its steps.
  for (const json& span : time["profiles"][0]["phases"]) {
    double phase_ms = 0;
    for (const Step& step : profile.steps)
      if (phaseName(step.phase) == span["phase"].get<std::string>()) phase_ms += step.time_us / 1000.0;
    EXPECT_NEAR(span["x1"].get<double>() - span["x0"].get<double>(), phase_ms, 1e-3) << span;
  }
}

// The headline extra time is the rewrite's paired measurement, carried as
// data for the page; without one the page has none to show.
TEST(ComparisonHtml, CarriesTheRewritesMeasuredExtraTime) {
  const Profile profile = testing::smallTrainingProfile();
  const MeasuredStepTime measured{59600, 0.175, 0.006, 12};
  const json with = embeddedData(renderComparisonHtml(profile, profile, nullptr, "", &measured));
  EXPECT_DOUBLE_EQ(with.at("measured_time").at("extra_share").get<double>(), 0.175);
  EXPECT_DOUBLE_EQ(with.at("measured_time").at("extra_share_error").get<double>(), 0.006);
  EXPECT_EQ(with.at("measured_time").at("pairs").get<int>(), 12);
  EXPECT_DOUBLE_EQ(with.at("measured_time").at("before_us").get<double>(), 59600);
  EXPECT_EQ(with.at("measured_time").at("verdict"), "conclusive");
  EXPECT_TRUE(embeddedData(renderComparisonHtml(profile, profile)).at("measured_time").is_null());
}

// An extra time the pairs left inconclusive is marked so as data, for the
// page to say "inconclusive" in place of the number (rewriter.h, Note: [an
// inconclusive extra time]).
TEST(ComparisonHtml, MarksAnInconclusiveMeasuredExtraTime) {
  const Profile profile = testing::smallTrainingProfile();
  const MeasuredStepTime measured{750600, 0.505, 0.168, 2, /*conclusive=*/false};
  const json page = embeddedData(renderComparisonHtml(profile, profile, nullptr, "", &measured));
  EXPECT_EQ(page.at("measured_time").at("verdict"), "inconclusive");
  EXPECT_NE(renderComparisonHtml(profile, profile, nullptr, "", &measured).find("\"inconclusive: \""),
            std::string::npos) << "the page's script says it";
}

}  // namespace
}  // namespace acprof
