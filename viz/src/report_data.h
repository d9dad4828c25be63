// The data a report page draws, as the JSON that viz/assets/report.js reads.
// Step-shaped series are sent as explicit corner points (x, value held until
// the next x), so the page draws them as plain polylines and areas.
#pragma once

#include <nlohmann/json.hpp>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/viz.h"

namespace acprof::viz {

// Enough for a full-screen chart (several samples per pixel) while a page
// with three charts stays a few megabytes and smooth to hover.
inline constexpr int kMaxChartSamples = 16000;

nlohmann::json timelinePageData(const Profile& profile, const Plan* plan, ChartXAxis x_axis = ChartXAxis::WallTime,
                                int max_samples = kMaxChartSamples);
// The after profile is drawn on the before profile's axis, aligned phase by phase.
nlohmann::json comparisonPageData(const Profile& before, const Profile& after, const Plan* plan,
                                  const MeasuredStepTime* measured = nullptr, ChartXAxis x_axis = ChartXAxis::WallTime,
                                  int max_samples = kMaxChartSamples);

}  // namespace acprof::viz
