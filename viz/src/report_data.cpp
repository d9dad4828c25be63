#include "report_data.h"

#include "acprof/segment_names.h"

#include "acprof/checkpoint_operator.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "memory_series.h"
#include "plan_overlay.h"

namespace acprof::viz {
namespace {

using nlohmann::json;
using AxisMap = std::function<double(double)>;

// Two decimals are plenty for a pixel position and keep the page small.
// Fine enough that distinct events stay distinct on a millisecond axis too
// (0.1 us), so the overlay's merge by position loses no sample.
double roundedX(double x) { return std::round(x * 1e4) / 1e4; }

// Corner points of a step-shaped series: value i holds on [xs[i], xs[i+1]),
// the last one until end_x.
void appendCorners(const std::vector<double>& xs, double end_x, json& corner_xs) {
  for (size_t i = 0; i < xs.size(); ++i) {
    corner_xs.push_back(roundedX(xs[i]));
    corner_xs.push_back(roundedX(i + 1 < xs.size() ? xs[i + 1] : end_x));
  }
}
json cornerValues(const std::vector<int64_t>& values) {
  json out = json::array();
  for (int64_t v : values) {
    out.push_back(v);
    out.push_back(v);
  }
  return out;
}

json stackOrderedBytes(const CategoryBytes& bytes) {
  json out = json::array();
  for (const CategoryStyle& style : categoryStackOrder()) out.push_back(bytes[static_cast<int>(style.category)]);
  return out;
}

// "" where the recorder saw no value on the storage (a workspace): "[]" would
// read as a 0-dim tensor.
std::string shapeText(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "";
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

json stepsTable(const Profile& profile) {
  json op = json::array(), scope = json::array(), phase = json::array(), first_event = json::array(),
       time_us = json::array();
  for (const Step& step : profile.steps) {
    op.push_back(step.op);
    scope.push_back(step.scope);
    phase.push_back(phaseName(step.phase));
    first_event.push_back(step.first_event);
    time_us.push_back(step.time_us);
  }
  return {{"op", op}, {"scope", scope}, {"phase", phase}, {"first_event", first_event}, {"time_us", time_us}};
}

// A graph value's debug name where it is one a person wrote ("attn_out.1"),
// "" for TorchScript's numbering ("5567"), which names nothing in the model.
std::string personName(const std::string& name) {
  const bool numbered = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
  return numbered ? "" : name;
}

json largestActivationRows(const Profile& profile, const Plan* plan, size_t count) {
  std::vector<int> dropped;
  if (plan)
    for (const SegmentCut& s : plan->segments) dropped.insert(dropped.end(), s.dropped_tensors.begin(), s.dropped_tensors.end());
  json rows = json::array();
  for (const TensorRecord* t : largestActivations(profile, count)) {
    const ForwardNode* producer = profile.findNode(t->producer_node);
    rows.push_back({{"bytes", t->bytes},
                    {"op", producer ? producer->kind : ""},
                    {"scope", producer ? producer->scope : ""},
                    {"name", personName(t->name)},
                    {"shape", shapeText(t->shape)},
                    {"dtype", t->dtype},
                    {"dropped", std::find(dropped.begin(), dropped.end(), t->id) != dropped.end()}});
  }
  return rows;
}

// What the step times measure, in words: a kernel-time iteration and a wall-time
// one are not comparable, so the report says which it shows.
std::string timeSourceText(const std::string& time_source) {
  if (time_source == "cupti_kernels") return "summed GPU kernel time (CUPTI)";
  if (time_source == "cuda_sync_wall") return "wall time, device synchronized at each step";
  if (time_source == "cpu_wall") return "wall time";
  return time_source;
}

json phaseTimes(const Profile& profile) {
  json times = json::object();
  const double total_us = iterationTimeUs(profile);
  for (Phase phase : {Phase::Forward, Phase::Loss, Phase::Backward, Phase::Optimizer})
    times[phaseName(phase)] = profile.summary.phase_time_us[static_cast<int>(phase)];
  return {{"total_us", total_us}, {"per_phase_us", times}, {"source", timeSourceText(profile.meta.time_source)}};
}

// One profile's chart and tables, with x mapped onto the page's shared axis.
json profileSection(const std::string& label, const Profile& profile, const SampledTimeline& sampled,
                    const AxisMap& axis, const Plan* plan) {
  json section;
  section["label"] = label;
  section["model_path"] = profile.meta.model_path;
  section["device"] = profile.meta.run.device;
  section["event_count"] = profile.event_count;
  section["step_count"] = profile.steps.size();
  section["time"] = phaseTimes(profile);
  section["steps"] = stepsTable(profile);
  section["end_x"] = roundedX(axis(profile.event_count));

  json phases = json::array();
  for (const PhaseSpan& span : phaseSpans(profile))
    phases.push_back({{"phase", phaseName(span.phase)},
                      {"x0", roundedX(axis(span.first_event))},
                      {"x1", roundedX(axis(span.end_event))}});
  section["phases"] = phases;

  std::vector<double> xs;
  json events = json::array(), steps = json::array();
  for (int e : sampled.events) {
    xs.push_back(axis(e));
    events.push_back(e);
    steps.push_back(stepOfEvent(profile, e));
  }
  json chart_x = json::array();
  appendCorners(xs, axis(profile.event_count), chart_x);
  json chart_bytes = json::array();
  for (const CategoryStyle& style : categoryStackOrder()) {
    std::vector<int64_t> values;
    for (const CategoryBytes& b : sampled.bytes) values.push_back(b[static_cast<int>(style.category)]);
    chart_bytes.push_back(cornerValues(values));
  }
  section["samples"] = {{"event", events}, {"step", steps}};
  section["chart"] = {{"x", chart_x}, {"bytes", chart_bytes}};
  section["downsampled"] = static_cast<int>(sampled.events.size()) < profile.event_count;

  json peak = nullptr;
  if (sampled.peak_event >= 0) {
    const int step = stepOfEvent(profile, sampled.peak_event);
    peak = {{"bytes", totalBytes(sampled.peak_bytes)},
            {"event", sampled.peak_event},
            {"x", roundedX(axis(sampled.peak_event))},
            {"x_end", roundedX(axis(sampled.peak_event + 1))},
            {"step", step},
            {"breakdown", stackOrderedBytes(sampled.peak_bytes)}};
  }
  section["peak"] = peak;
  section["largest_activations"] = largestActivationRows(profile, plan, 12);
  section["highlights"] = json::array();
  return section;
}

json planSection(const Profile& profile, const Plan& plan, const AxisMap& axis) {
  json section = {{"solver", plan.solver},
                  {"budget_text", plan.budget_text},
                  {"budget_bytes", plan.budget_bytes},
                  {"baseline_peak_bytes", plan.baseline_peak_bytes},
                  {"predicted_peak_bytes", plan.predicted_peak_bytes},
                  {"predicted_peak_step", plan.predicted_peak_step},
                  {"baseline_iteration_time_us", plan.baseline_iteration_time_us},
                  {"extra_time_us", plan.extra_time_us}};
  // The prediction is a peak per step: a step-shaped line over the step's events.
  const std::vector<int64_t> peaks = predictedPeakPerStep(profile, plan);
  std::vector<double> xs;
  std::vector<int64_t> values;
  for (size_t s = 0; s < peaks.size(); ++s) {
    if (peaks[s] < 0) continue;
    xs.push_back(axis(profile.steps[s].first_event));
    values.push_back(peaks[s]);
  }
  json predicted_x = json::array();
  appendCorners(xs, axis(profile.event_count), predicted_x);
  section["predicted"] = {{"x", predicted_x}, {"bytes", cornerValues(values)}};

  const std::vector<SegmentPlacement> placements = placeSegments(profile, plan);
  json segments = json::array();
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    const SegmentCut& cut = plan.segments[i];
    const ForwardNode* first = profile.findNode(cut.first_node);
    const ForwardNode* last = profile.findNode(cut.last_node);
    segments.push_back({{"first_node", cut.first_node},
                        {"last_node", cut.last_node},
                        {"first_op", first ? first->kind : ""},
                        {"last_op", last ? last->kind : ""},
                        {"scope", first ? first->scope : ""},
                        {"description", segmentDescription(profile, cut)},
                        {"dropped_tensor_count", cut.dropped_tensors.size()},
                        {"dropped_bytes", cut.dropped_bytes},
                        {"recompute_time_us", cut.recompute_time_us},
                        {"recompute_step", placements[i].recompute_step}});
  }
  section["segments"] = segments;
  return section;
}

// Bands marking each segment's forward steps and its recompute in backward.
json segmentHighlights(const Profile& profile, const Plan& plan, const AxisMap& axis) {
  json highlights = json::array();
  const std::vector<SegmentPlacement> placements = placeSegments(profile, plan);
  for (size_t i = 0; i < placements.size(); ++i) {
    const SegmentPlacement& p = placements[i];
    const std::string name = "segment " + std::to_string(i + 1);
    if (p.first_forward_step >= 0)
      highlights.push_back({{"kind", "segment"},
                            {"label", name},
                            {"x0", roundedX(axis(profile.steps[p.first_forward_step].first_event))},
                            {"x1", roundedX(axis(stepEndEvent(profile, p.last_forward_step)))}});
    if (p.recompute_step >= 0)
      highlights.push_back({{"kind", "recompute"},
                            {"label", "recompute " + name},
                            {"x0", roundedX(axis(profile.steps[p.recompute_step].first_event))},
                            {"x1", roundedX(axis(stepEndEvent(profile, p.recompute_step)))}});
  }
  return highlights;
}

// The rewritten model's checkpoint calls: steps of a forward node that calls
// the checkpoint operator, in forward (the segment) and in backward (its
// recompute and gradient, linked to the node by the profile).
json checkpointHighlights(const Profile& profile, const AxisMap& axis) {
  json highlights = json::array();
  for (size_t s = 0; s < profile.steps.size(); ++s) {
    const Step& step = profile.steps[s];
    const ForwardNode* node = profile.findNode(step.node);
    if (!node || node->kind != kCheckpointOperator) continue;
    highlights.push_back({{"kind", step.phase == Phase::Forward ? "segment" : "recompute"},
                          {"label", step.op},
                          {"x0", roundedX(axis(step.first_event))},
                          {"x1", roundedX(axis(stepEndEvent(profile, static_cast<int>(s))))}});
  }
  return highlights;
}

json categoriesTable() {
  json categories = json::array();
  for (const CategoryStyle& style : categoryStackOrder())
    categories.push_back({{"name", categoryName(style.category)}, {"color", style.color}});
  return categories;
}

// Both totals on the before axis: every sample position of either profile,
// each total held from its own last sample at or before that position.
json overlaySection(const SampledTimeline& before, const SampledTimeline& after, const AxisMap& before_axis,
                    const AxisMap& after_axis, double end_x) {
  std::map<double, std::pair<int, int>> merged;  // x -> (before sample, after sample), -1: none at x
  for (size_t i = 0; i < before.events.size(); ++i)
    merged[roundedX(before_axis(before.events[i]))] = {static_cast<int>(i), -1};
  for (size_t i = 0; i < after.events.size(); ++i) {
    auto [it, inserted] = merged.try_emplace(roundedX(after_axis(after.events[i])), -1, static_cast<int>(i));
    if (!inserted) it->second.second = static_cast<int>(i);
  }
  std::vector<double> xs;
  std::vector<int64_t> before_totals, after_totals;
  json before_samples = json::array(), after_samples = json::array();
  int held_before = 0, held_after = 0;
  for (const auto& [x, samples] : merged) {
    if (samples.first >= 0) held_before = samples.first;
    if (samples.second >= 0) held_after = samples.second;
    xs.push_back(x);
    before_totals.push_back(before.bytes.empty() ? 0 : totalBytes(before.bytes[held_before]));
    after_totals.push_back(after.bytes.empty() ? 0 : totalBytes(after.bytes[held_after]));
    before_samples.push_back(held_before);
    after_samples.push_back(held_after);
  }
  json corner_x = json::array();
  appendCorners(xs, end_x, corner_x);
  return {{"x", corner_x},
          {"before", cornerValues(before_totals)},
          {"after", cornerValues(after_totals)},
          {"before_sample", before_samples},
          {"after_sample", after_samples}};
}

std::string modelTitle(const Profile& profile) {
  return profile.meta.model_path.empty() ? std::string("profile") : profile.meta.model_path;
}

// The page's x axis for a profile's events: wall time or the events themselves.
AxisMap baseAxis(const Profile& profile, ChartXAxis x_axis) {
  if (x_axis == ChartXAxis::AllocatorEvents) return [](double x) { return x; };
  return [time = std::make_shared<EventTimeAxis>(profile)](double x) { return time->map(x); };
}

const char* axisName(ChartXAxis x_axis) {
  return x_axis == ChartXAxis::AllocatorEvents ? "allocator_event" : "wall_time_ms";
}

}  // namespace

json timelinePageData(const Profile& profile, const Plan* plan, ChartXAxis x_axis, int max_samples) {
  if (plan) checkPlanMatchesProfile(*plan, profile);
  const AxisMap axis = baseAxis(profile, x_axis);
  json page;
  page["kind"] = "timeline";
  page["title"] = modelTitle(profile);
  page["x_axis"] = axisName(x_axis);
  page["categories"] = categoriesTable();
  json section = profileSection("profile", profile, sampleTimeline(profile, max_samples), axis, plan);
  if (plan) section["highlights"] = segmentHighlights(profile, *plan, axis);
  page["profiles"] = json::array({section});
  page["plan"] = plan ? planSection(profile, *plan, axis) : json(nullptr);
  page["overlay"] = nullptr;
  return page;
}

json comparisonPageData(const Profile& before, const Profile& after, const Plan* plan,
                        const MeasuredStepTime* measured, ChartXAxis x_axis, int max_samples) {
  if (plan) checkPlanMatchesProfile(*plan, before);
  const AxisMap before_axis = baseAxis(before, x_axis);
  const PhaseAlignedAxis aligned(after, before);
  const AxisMap after_axis = [&aligned, &before_axis](double x) { return before_axis(aligned.map(x)); };
  const SampledTimeline before_sampled = sampleTimeline(before, max_samples);
  const SampledTimeline after_sampled = sampleTimeline(after, max_samples);
  json page;
  page["kind"] = "comparison";
  page["title"] = modelTitle(before) + " → " + modelTitle(after);
  page["x_axis"] = axisName(x_axis);
  page["categories"] = categoriesTable();
  json before_section = profileSection("before", before, before_sampled, before_axis, plan);
  json after_section = profileSection("after", after, after_sampled, after_axis, nullptr);
  if (plan) before_section["highlights"] = segmentHighlights(before, *plan, before_axis);
  after_section["highlights"] = checkpointHighlights(after, after_axis);
  page["profiles"] = json::array({before_section, after_section});
  page["plan"] = plan ? planSection(before, *plan, before_axis) : json(nullptr);
  page["overlay"] = overlaySection(before_sampled, after_sampled, before_axis, after_axis,
                                   before_axis(before.event_count));
  page["measured_time"] =
      measured ? json{{"before_us", measured->before_us},
                      {"extra_share", measured->extra_share},
                      {"extra_share_error", measured->extra_share_error ? json(*measured->extra_share_error) : json()},
                      {"pairs", measured->pairs},
                      {"verdict", measured->conclusive ? "conclusive" : "inconclusive"}}
               : json(nullptr);
  return page;
}

}  // namespace acprof::viz
