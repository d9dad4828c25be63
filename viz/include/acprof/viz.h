// Viz: renders profiles (and optionally a plan) for people and for trace viewers.
//
// Every renderer reads only the profile and plan formats and returns the whole
// file as a string; callers write it with acprof::writeFileAtomically. The
// guarantees:
//   - HTML reports are one self-contained file that works offline: dygraphs
//     (Debian's libjs-dygraphs) and its licence are compiled into the binary,
//     no script or style is fetched.
//   - Names from the model (ops, scopes, tensor names) are data, never markup:
//     they are embedded as JSON with <, >, &, U+2028 and U+2029 escaped and
//     shown with textContent, so no name can end the <script> element or
//     inject HTML. Invalid UTF-8 is replaced, not rejected.
//   - The x axis of the memory charts is wall time by default, or the
//     allocator event index (ChartXAxis). Long timelines are downsampled in
//     C++ to a bounded number of samples, by event, while every bucket's
//     maximum and the global peak are kept exactly, whichever the axis.
//   - Categories are stacked and coloured like PyTorch's memory timeline
//     (torch.profiler._memory_profiler).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"

namespace acprof {

// What the charts' x axis measures: wall time (each step as wide as its
// measured median time, its allocator events spread evenly over it), or the
// allocator event index (each allocation or free one unit, so a peak inside a
// short op is as wide as any other event).
enum class ChartXAxis { WallTime, AllocatorEvents };

// The memory timeline of one profile: stacked bytes per category over the
// iteration's events, phases shaded, the peak marked with its breakdown, the
// largest activations. With a plan: its budget line, its predicted peak per
// step and its segments highlighted, and a table of the segments.
std::string renderTimelineHtml(const Profile& profile, const Plan* plan = nullptr,
                               ChartXAxis x_axis = ChartXAxis::WallTime);

// The paired timing 'acprof rewrite' measured, the report's headline extra
// time: the profiles' own times include acprof's probes around every op, so
// they are shown only as what they are, instrumented profile times.
struct MeasuredStepTime {
  double before_us = 0;    // the original's median training step
  double extra_share = 0;  // median over alternated pairs of (rewritten - original) / original
  std::optional<double> extra_share_error;  // that median's standard error, where there are enough pairs
  int pairs = 0;
  // False where a limit ended the pairs with the standard error over its
  // bound: the page then says "inconclusive" in place of the extra time
  // (rewriter.h, Note: [an inconclusive extra time]).
  bool conclusive = true;
};

// Before and after a rewrite: both stacked timelines and both totals overlaid,
// aligned phase by phase (the after profile's events are stretched linearly
// inside each phase onto the before profile's events, so forward lines up with
// forward and backward with backward). With a plan: budget, prediction,
// recomputed segments highlighted and the segments table. `verification`: a
// sentence on how the rewrite was verified, shown under the charts ("" for none).
// `measured`: the rewrite's paired timing, the headline extra time (null: not timed).
std::string renderComparisonHtml(const Profile& before, const Profile& after, const Plan* plan = nullptr,
                                 const std::string& verification = "", const MeasuredStepTime* measured = nullptr,
                                 ChartXAxis x_axis = ChartXAxis::WallTime);

// The same stacked chart as a static SVG image (for docs and papers).
std::string renderTimelineSvg(const Profile& profile, const Plan* plan = nullptr);

// The trade-off of 'acprof plan --sweep' as a static SVG: predicted peak
// against predicted extra time (% of the profiled iteration), the sweep's
// solver's frontier (auto by default) as a staircase, chen and per-block
// marked, and `plan` (the plan
// chosen for a budget) ringed with its budget line.
std::string renderFrontierSvg(const Profile& profile, const std::vector<FrontierPoint>& frontier,
                              const Plan* plan = nullptr);

// A Chrome Trace Event JSON file that Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one slice per step laid end to end by its measured
// time, phase slices around them, memory counters per category, an instant at
// the peak, and with a plan, flow arrows from each dropped activation's
// producer step to the step before which the plan recomputes it.
std::string renderPerfettoTrace(const Profile& profile, const Plan* plan = nullptr);

}  // namespace acprof
