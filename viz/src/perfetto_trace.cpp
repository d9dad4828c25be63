// The Chrome Trace Event JSON: the steps of the iteration as slices laid end
// to end by their measured times, memory as counters, the peak as an instant,
// and the plan's recomputes as flow arrows. Perfetto and chrome://tracing
// read it ("JSON Object Format" of the Trace Event Format).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "acprof/viz.h"
#include "memory_series.h"
#include "plan_overlay.h"

namespace acprof {
namespace {

using nlohmann::json;

constexpr int kPid = 1;
constexpr int kStepsTid = 1;     // phase and step slices
constexpr int kCountersTid = 0;  // counters and the peak are process-wide
// Counter samples per trace; Perfetto stays fast well beyond this.
constexpr int kMaxTraceSamples = 20000;

// Each step starts where the previous one ended; events inside a step are
// spread evenly over its duration, because only step times are measured.
struct TraceClock {
  std::vector<double> step_start_us;
  std::vector<double> step_time_us;
  const Profile& profile;

  explicit TraceClock(const Profile& p) : profile(p) {
    double t = 0;
    for (const Step& step : p.steps) {
      step_start_us.push_back(t);
      const double time_us = std::max(step.time_us, 0.0);
      step_time_us.push_back(time_us);
      t += time_us;
    }
  }
  // Time at which an event happens (its position inside its step).
  double eventUs(int event) const {
    const int step = stepOfEvent(profile, event);
    if (step < 0) return 0;
    const int first = profile.steps[step].first_event, end = stepEndEvent(profile, step);
    const double fraction = end > first ? static_cast<double>(event - first) / (end - first) : 0;
    return step_start_us[step] + fraction * step_time_us[step];
  }
  double stepMiddleUs(int step) const { return step_start_us[step] + step_time_us[step] / 2; }
};

json metadataEvent(const char* name, int tid, const std::string& value) {
  return {{"ph", "M"}, {"name", name}, {"pid", kPid}, {"tid", tid}, {"ts", 0}, {"args", {{"name", value}}}};
}

json categoryArgs(const CategoryBytes& bytes) {
  json args = json::object();
  for (const viz::CategoryStyle& style : viz::categoryStackOrder())
    args[categoryName(style.category)] = bytes[static_cast<int>(style.category)];
  return args;
}

void appendSlices(const Profile& profile, const TraceClock& clock, json& events) {
  // One slice per run of steps in the same phase, enclosing those steps.
  for (size_t first = 0; first < profile.steps.size();) {
    size_t last = first;
    while (last + 1 < profile.steps.size() && profile.steps[last + 1].phase == profile.steps[first].phase) ++last;
    const double ts = clock.step_start_us[first];
    events.push_back({{"ph", "X"}, {"name", phaseName(profile.steps[first].phase)}, {"cat", "phase"},
                      {"pid", kPid}, {"tid", kStepsTid}, {"ts", ts},
                      {"dur", clock.step_start_us[last] + clock.step_time_us[last] - ts}});
    first = last + 1;
  }
  for (size_t s = 0; s < profile.steps.size(); ++s) {
    const Step& step = profile.steps[s];
    events.push_back({{"ph", "X"},
                      {"name", step.op.empty() ? std::string("step ") + std::to_string(s) : step.op},
                      {"cat", phaseName(step.phase)},
                      {"pid", kPid},
                      {"tid", kStepsTid},
                      {"ts", clock.step_start_us[s]},
                      {"dur", clock.step_time_us[s]},
                      {"args",
                       {{"step", s},
                        {"scope", step.scope},
                        {"node", step.node},
                        {"first_event", step.first_event},
                        {"peak_bytes", step.peak_bytes},
                        {"allocator_bytes", step.allocator_bytes}}}});
  }
}

void appendMemory(const Profile& profile, const TraceClock& clock, json& events) {
  const viz::SampledTimeline sampled = viz::sampleTimeline(profile, kMaxTraceSamples);
  for (size_t i = 0; i < sampled.events.size(); ++i)
    events.push_back({{"ph", "C"}, {"name", "memory bytes"}, {"pid", kPid}, {"tid", kCountersTid},
                      {"ts", clock.eventUs(sampled.events[i])}, {"args", categoryArgs(sampled.bytes[i])}});
  if (sampled.peak_event < 0) return;
  const int step = stepOfEvent(profile, sampled.peak_event);
  const int64_t peak = totalBytes(sampled.peak_bytes);
  json args = categoryArgs(sampled.peak_bytes);
  args["total"] = peak;
  args["event"] = sampled.peak_event;
  args["step"] = step;
  args["op"] = step >= 0 ? profile.steps[step].op : "";
  events.push_back({{"ph", "i"}, {"name", "peak " + formatBytes(peak)}, {"cat", "memory"}, {"s", "g"},
                    {"pid", kPid}, {"tid", kStepsTid}, {"ts", clock.eventUs(sampled.peak_event)},
                    {"args", args}});
}

// Arrows from the step that made each dropped activation to the step the
// recompute runs before; both ends bind to the step slice around them.
void appendRecomputeFlows(const Profile& profile, const Plan& plan, const TraceClock& clock, json& events) {
  std::map<int, const TensorRecord*> tensors;
  for (const TensorRecord& t : profile.tensors) tensors[t.id] = &t;
  const std::vector<viz::SegmentPlacement> placements = viz::placeSegments(profile, plan);
  int flow_id = 1;
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    const int recompute_step = placements[i].recompute_step;
    if (recompute_step < 0) continue;
    for (int tensor_id : plan.segments[i].dropped_tensors) {
      const auto found = tensors.find(tensor_id);
      if (found == tensors.end()) continue;
      const ForwardNode* producer = profile.findNode(found->second->producer_node);
      const int producer_step = producer ? producer->forward_step : found->second->alloc_step;
      if (producer_step < 0) continue;
      const std::string name = "recompute " + (found->second->name.empty() ? "tensor " + std::to_string(tensor_id)
                                                                          : found->second->name);
      const json args = {{"segment", i + 1}, {"tensor", tensor_id}, {"bytes", found->second->bytes}};
      events.push_back({{"ph", "s"}, {"id", flow_id}, {"name", name}, {"cat", "recompute"}, {"pid", kPid},
                        {"tid", kStepsTid}, {"ts", clock.stepMiddleUs(producer_step)}, {"args", args}});
      events.push_back({{"ph", "f"}, {"bp", "e"}, {"id", flow_id}, {"name", name}, {"cat", "recompute"},
                        {"pid", kPid}, {"tid", kStepsTid}, {"ts", clock.stepMiddleUs(recompute_step)},
                        {"args", args}});
      ++flow_id;
    }
  }
}

void appendPrediction(const Profile& profile, const Plan& plan, const TraceClock& clock, json& events) {
  const std::vector<int64_t> peaks = viz::predictedPeakPerStep(profile, plan);
  for (size_t s = 0; s < peaks.size(); ++s)
    if (peaks[s] >= 0)
      events.push_back({{"ph", "C"}, {"name", "plan predicted peak bytes"}, {"pid", kPid}, {"tid", kCountersTid},
                        {"ts", clock.step_start_us[s]}, {"args", {{"bytes", peaks[s]}}}});
}

}  // namespace

std::string renderPerfettoTrace(const Profile& profile, const Plan* plan) {
  if (plan) checkPlanMatchesProfile(*plan, profile);
  const TraceClock clock(profile);
  json events = json::array();
  const std::string model = profile.meta.model_path.empty() ? "profile" : profile.meta.model_path;
  events.push_back(metadataEvent("process_name", 0, "acprof: " + model));
  events.push_back(metadataEvent("thread_name", kStepsTid, "training step (" + profile.meta.run.device + ")"));
  appendSlices(profile, clock, events);
  appendMemory(profile, clock, events);
  if (plan) {
    appendRecomputeFlows(profile, *plan, clock, events);
    appendPrediction(profile, *plan, clock, events);
  }
  const json trace = {
      {"traceEvents", events},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"generator", "acprof"},
        {"model_path", profile.meta.model_path},
        {"time_axis", "steps laid end to end by their median measured time; events spread evenly inside a step"}}}};
  return trace.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace acprof
