// The stacked memory chart as a static SVG: the same categories, colours,
// phases, peak and plan overlays as the HTML page, for docs and papers.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "acprof/viz.h"
#include "markup_escape.h"
#include "svg_document.h"
#include "memory_series.h"
#include "plan_overlay.h"

namespace acprof {
namespace {

using viz::CategoryStyle;
using viz::svgNumber;

constexpr double kWidth = 960, kHeight = 440;
constexpr double kPlotLeft = 88, kPlotRight = 940, kPlotTop = 48, kPlotBottom = 352;
// About two samples per horizontal pixel: finer detail is invisible in print.
constexpr int kMaxSvgSamples = 1800;

const char* phaseShade(Phase phase) {
  switch (phase) {
    case Phase::Forward: return "#1f77b4";
    case Phase::Backward: return "#ff7f0e";
    case Phase::Optimizer: return "#2ca02c";
    default: return "#808080";
  }
}

// Tick step for bytes in binary units: 1, 2, 5, 10, ... times a power of 1024.
int64_t byteTickStep(int64_t max_bytes, int max_ticks) {
  for (int64_t unit = 1;; unit *= 1024)
    for (int64_t m : {1, 2, 5, 10, 20, 50, 100, 200, 500})
      if (max_bytes / (m * unit) < max_ticks) return m * unit;
}

int64_t decimalTickStep(int64_t max_value, int max_ticks) {
  for (int64_t power = 1;; power *= 10)
    for (int64_t m : {1, 2, 5})
      if (max_value / (m * power) < max_ticks) return m * power;
}

struct ChartScale {
  double event_count, max_bytes;
  double x(double event) const { return kPlotLeft + (kPlotRight - kPlotLeft) * event / event_count; }
  double y(double bytes) const { return kPlotBottom - (kPlotBottom - kPlotTop) * bytes / max_bytes; }
};

// A step-shaped path through the held values, left to right.
void appendStepPath(std::string& path, const ChartScale& scale, const std::vector<int>& events,
                    const std::vector<int64_t>& values, double end_event, bool move_first) {
  for (size_t i = 0; i < events.size(); ++i) {
    const double x0 = scale.x(events[i]), x1 = scale.x(i + 1 < events.size() ? events[i + 1] : end_event);
    const double y = scale.y(static_cast<double>(values[i]));
    path += fmt::format("{}{} {} L{} {} ", i == 0 && move_first ? "M" : "L", svgNumber(x0), svgNumber(y), svgNumber(x1),
                        svgNumber(y));
  }
}

}  // namespace

std::string renderTimelineSvg(const Profile& profile, const Plan* plan) {
  if (plan) checkPlanMatchesProfile(*plan, profile);
  const viz::SampledTimeline sampled = viz::sampleTimeline(profile, kMaxSvgSamples);
  const auto& order = viz::categoryStackOrder();

  int64_t max_bytes = std::max<int64_t>(totalBytes(sampled.peak_bytes), 1);
  std::vector<int64_t> predicted;
  if (plan) {
    max_bytes = std::max(max_bytes, plan->budget_bytes);
    predicted = viz::predictedPeakPerStep(profile, *plan);
    for (int64_t p : predicted) max_bytes = std::max(max_bytes, p);
  }
  const int64_t tick_step = byteTickStep(max_bytes * 11 / 10, 6);
  const ChartScale scale{static_cast<double>(std::max(profile.event_count, 1)),
                         static_cast<double>((max_bytes * 11 / 10 / tick_step + 1) * tick_step)};

  std::string svg = viz::svgOpening(kWidth, kHeight, "Memory timeline", kPlotLeft, profile);

  // Phases behind everything, labelled along the top.
  for (const viz::PhaseSpan& span : viz::phaseSpans(profile)) {
    const double x0 = scale.x(span.first_event), x1 = scale.x(span.end_event);
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.10\"/>\n",
                       svgNumber(x0), svgNumber(kPlotTop), svgNumber(x1 - x0), svgNumber(kPlotBottom - kPlotTop),
                       phaseShade(span.phase));
    if (x1 - x0 > 50)
      svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#444\">{}</text>\n", svgNumber(x0 + 4), svgNumber(kPlotTop + 14),
                         phaseName(span.phase));
  }

  // Stacked categories: each band runs along its top edge and back along the one below.
  std::vector<int64_t> below(sampled.events.size(), 0);
  for (const CategoryStyle& style : order) {
    std::vector<int64_t> above(below);
    bool any = false;
    for (size_t i = 0; i < sampled.bytes.size(); ++i) {
      const int64_t b = sampled.bytes[i][static_cast<int>(style.category)];
      above[i] += b;
      any = any || b != 0;
    }
    if (any) {
      std::string path;
      appendStepPath(path, scale, sampled.events, above, profile.event_count, true);
      for (size_t j = sampled.events.size(); j-- > 0;) {
        const double x1 = scale.x(j + 1 < sampled.events.size() ? sampled.events[j + 1] : profile.event_count);
        const double y = scale.y(static_cast<double>(below[j]));
        path += fmt::format("L{} {} L{} {} ", svgNumber(x1), svgNumber(y), svgNumber(scale.x(sampled.events[j])), svgNumber(y));
      }
      svg += fmt::format("<path d=\"{}Z\" fill=\"{}\"><title>{}</title></path>\n", path, style.color,
                         categoryName(style.category));
    }
    below = std::move(above);
  }

  if (plan) {
    for (const viz::SegmentPlacement& p : viz::placeSegments(profile, *plan)) {
      if (p.first_forward_step < 0) continue;
      const double x0 = scale.x(profile.steps[p.first_forward_step].first_event);
      const double x1 = std::max(scale.x(stepEndEvent(profile, p.last_forward_step)), x0 + 1);
      svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#ffd700\" fill-opacity=\"0.3\" "
                         "stroke=\"#b8860b\"/>\n",
                         svgNumber(x0), svgNumber(kPlotTop), svgNumber(x1 - x0), svgNumber(kPlotBottom - kPlotTop));
    }
    std::vector<int> steps_events;
    std::vector<int64_t> steps_peaks;
    for (size_t s = 0; s < predicted.size(); ++s)
      if (predicted[s] >= 0) {
        steps_events.push_back(profile.steps[s].first_event);
        steps_peaks.push_back(predicted[s]);
      }
    if (!steps_events.empty()) {
      std::string path;
      appendStepPath(path, scale, steps_events, steps_peaks, profile.event_count, true);
      svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"2\" "
                         "stroke-dasharray=\"4 3\"/>\n",
                         path);
    }
    if (plan->budget_bytes > 0) {
      const double y = scale.y(static_cast<double>(plan->budget_bytes));
      svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#c2185b\" stroke-width=\"2\" "
                         "stroke-dasharray=\"8 5\"/>\n<text x=\"{}\" y=\"{}\" fill=\"#c2185b\" "
                         "text-anchor=\"end\" font-weight=\"bold\">budget {}</text>\n",
                         svgNumber(kPlotLeft), svgNumber(y), svgNumber(kPlotRight), svgNumber(y), svgNumber(kPlotRight - 4),
                         svgNumber(y - 4), formatBytes(plan->budget_bytes));
    }
  }

  if (sampled.peak_event >= 0) {
    const int64_t peak = totalBytes(sampled.peak_bytes);
    const double x = scale.x(sampled.peak_event + 0.5), y = scale.y(static_cast<double>(peak));
    const int step = stepOfEvent(profile, sampled.peak_event);
    std::string where = step >= 0 ? " at " + profile.steps[step].op : "";
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#000\" stroke-dasharray=\"2 2\"/>\n"
                       "<path d=\"M{0} {2} l-5 -8 h10 Z\" fill=\"#000\"/>\n",
                       svgNumber(x), svgNumber(kPlotBottom), svgNumber(y));
    const bool label_left = x > (kPlotLeft + kPlotRight) / 2;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\" text-anchor=\"{}\">peak {}{}</text>\n",
                       svgNumber(label_left ? x - 8 : x + 8), svgNumber(std::max(y - 10, kPlotTop + 28)),
                       label_left ? "end" : "start", formatBytes(peak), viz::escapeMarkupText(where));
  }

  // Axes last so they sit on top.
  svg += fmt::format("<g stroke=\"#333\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>"
                     "<line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{1}\"/></g>\n",
                     svgNumber(kPlotLeft), svgNumber(kPlotBottom), svgNumber(kPlotRight), svgNumber(kPlotTop));
  for (int64_t b = 0; b <= static_cast<int64_t>(scale.max_bytes); b += tick_step) {
    const double y = scale.y(static_cast<double>(b));
    svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000\" stroke-opacity=\"0.12\"/>"
                       "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
                       svgNumber(kPlotLeft), svgNumber(y), svgNumber(kPlotRight), svgNumber(y), svgNumber(kPlotLeft - 6),
                       svgNumber(y + 4), formatBytes(b));
  }
  const int64_t event_step = decimalTickStep(std::max(profile.event_count, 1), 9);
  for (int64_t e = 0; e <= profile.event_count; e += event_step) {
    const double x = scale.x(static_cast<double>(e));
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>"
                       "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       svgNumber(x), svgNumber(kPlotBottom), svgNumber(kPlotBottom + 5), svgNumber(kPlotBottom + 18), e);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">allocator event (each "
                     "allocation or free is one event)</text>\n",
                     svgNumber((kPlotLeft + kPlotRight) / 2), svgNumber(kPlotBottom + 36));

  // Legend, top of the stack first as in the chart.
  double legend_x = kPlotLeft;
  const double legend_y = kHeight - 26;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::string name = categoryName(it->category);
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"11\" height=\"11\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}"
                       "</text>\n",
                       svgNumber(legend_x), svgNumber(legend_y - 10), it->color, svgNumber(legend_x + 15), svgNumber(legend_y),
                       name);
    legend_x += 30 + 7.0 * name.size();
  }
  if (plan)
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#ff7f0e\" stroke-width=\"2\" "
                       "stroke-dasharray=\"4 3\"/><text x=\"{3}\" y=\"{4}\">predicted peak per step</text>\n",
                       svgNumber(legend_x), svgNumber(legend_y - 4), svgNumber(legend_x + 22), svgNumber(legend_x + 27),
                       svgNumber(legend_y));
  svg += "</svg>\n";
  return svg;
}

}  // namespace acprof
