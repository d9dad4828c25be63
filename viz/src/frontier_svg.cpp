// The memory/time frontier of 'acprof plan --sweep' as a static SVG: predicted
// peak against predicted extra time, the solver's plans joined from no
// recompute to its floor (planner/src/frontier.cpp), the fixed strategies (chen, per-block) as separate marks, and
// the plan chosen for the budget, if any, ringed.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "acprof/viz.h"
#include "markup_escape.h"
#include "svg_document.h"

namespace acprof {
namespace {

using viz::svgNumber;

constexpr double kFrontierWidth = 720, kFrontierHeight = 440;
constexpr double kLeft = 88, kRight = 690, kTop = 48, kBottom = 372;
constexpr double kMiB = 1024.0 * 1024.0;

// A tick step of 1, 2 or 5 times a power of ten that gives at most `max_ticks` ticks.
double tickStep(double max_value, int max_ticks) {
  for (double power = 1e-3;; power *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (max_value / (m * power) < max_ticks) return m * power;
}

const char* markColor(const std::string& label) {
  if (label == "chen") return "#d62728";
  if (label == "per-block") return "#9467bd";
  return "#1f77b4";
}

}  // namespace

std::string renderFrontierSvg(const Profile& profile, const std::vector<FrontierPoint>& frontier, const Plan* plan) {
  const double iteration_us = std::max(iterationTimeUs(profile), 1e-9);
  // x: extra time in % of the profiled iteration; y: predicted peak in MiB, from 0.
  double max_x = 1, max_y = 1;
  for (const FrontierPoint& p : frontier) {
    max_x = std::max(max_x, 100.0 * p.extra_time_us / iteration_us);
    max_y = std::max(max_y, static_cast<double>(p.peak_bytes) / kMiB);
  }
  const double x_step = tickStep(max_x * 1.1, 8), y_step = tickStep(max_y * 1.1, 7);
  const double x_end = (static_cast<int>(max_x * 1.1 / x_step) + 1) * x_step;
  const double y_end = (static_cast<int>(max_y * 1.1 / y_step) + 1) * y_step;
  auto px = [&](double percent) { return kLeft + (kRight - kLeft) * percent / x_end; };
  auto py = [&](double mib) { return kBottom - (kBottom - kTop) * mib / y_end; };
  auto pointX = [&](const FrontierPoint& p) { return px(100.0 * p.extra_time_us / iteration_us); };
  auto pointY = [&](const FrontierPoint& p) { return py(static_cast<double>(p.peak_bytes) / kMiB); };

  std::string svg = viz::svgOpening(kFrontierWidth, kFrontierHeight, "Peak vs extra time", kLeft, profile);
  for (double x = 0; x <= x_end + 1e-9; x += x_step)
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e0e0e0\"/><text x=\"{0}\" y=\"{3}\" "
                       "text-anchor=\"middle\">{4:g} %</text>\n",
                       svgNumber(px(x)), svgNumber(kTop), svgNumber(kBottom), svgNumber(kBottom + 16), x);
  for (double y = 0; y <= y_end + 1e-9; y += y_step)
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\" stroke=\"#e0e0e0\"/><text x=\"{3}\" y=\"{4}\" "
                       "text-anchor=\"end\">{5:g} MiB</text>\n",
                       svgNumber(py(y)), svgNumber(kLeft), svgNumber(kRight), svgNumber(kLeft - 6), svgNumber(py(y) + 4), y);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">predicted extra time (% of the profiled "
                     "iteration)</text>\n",
                     svgNumber((kLeft + kRight) / 2), svgNumber(kBottom + 36));
  svg += fmt::format("<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">predicted "
                     "peak</text>\n",
                     svgNumber((kTop + kBottom) / 2));

  // The solver's frontier (none, then the points planned for a budget): a
  // staircase (a budget between two points gets the slower one's time), then the marks.
  std::string path;
  const FrontierPoint* previous = nullptr;
  for (const FrontierPoint& p : frontier) {
    if (p.label != "none" && p.budget_bytes == 0) continue;
    if (!previous)
      path += fmt::format("M{} {} ", svgNumber(pointX(p)), svgNumber(pointY(p)));
    else
      path += fmt::format("L{} {} L{} {} ", svgNumber(pointX(p)), svgNumber(pointY(*previous)), svgNumber(pointX(p)),
                          svgNumber(pointY(p)));
    previous = &p;
  }
  if (!path.empty()) svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n", path);
  for (const FrontierPoint& p : frontier) {
    const bool fixed = p.label != "none" && p.budget_bytes == 0;
    svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"><title>{}: {:.2f} MiB, +{:.1f} %, {} "
                       "segments</title></circle>\n",
                       svgNumber(pointX(p)), svgNumber(pointY(p)), fixed ? 6 : 4, markColor(p.label), p.label,
                       static_cast<double>(p.peak_bytes) / kMiB, 100.0 * p.extra_time_us / iteration_us,
                       p.segment_count);
    if (fixed)
      svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n", svgNumber(pointX(p) + 9),
                         svgNumber(pointY(p) + 4), markColor(p.label), p.label);
  }
  if (plan) {
    const double x = px(100.0 * plan->extra_time_us / iteration_us);
    const double y = py(static_cast<double>(plan->predicted_peak_bytes) / kMiB);
    svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"9\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"2\"/>"
                       "<text x=\"{}\" y=\"{}\" fill=\"#2ca02c\">this plan</text>\n",
                       svgNumber(x), svgNumber(y), svgNumber(x + 12), svgNumber(y - 8));
    if (plan->budget_bytes > 0) {
      const double b = py(static_cast<double>(plan->budget_bytes) / kMiB);
      if (b >= kTop)
        svg += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/>"
                           "<text x=\"{1}\" y=\"{3}\" text-anchor=\"end\" fill=\"#d62728\">budget</text>\n",
                           svgNumber(kLeft), svgNumber(kRight), svgNumber(b), svgNumber(b - 4));
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace acprof
