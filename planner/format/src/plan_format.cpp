#include "acprof/plan_format.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "acprof/json_fields.h"

namespace acprof {
namespace {

using nlohmann::json;

constexpr const char* kPlanFix = "re-run 'acprof plan' to regenerate it";

template <typename T>
T field(const json& object, const char* key, const std::string& where) {
  return json_fields::field<T>(object, key, {where, kPlanFix});
}

json segmentToJson(const SegmentCut& s) {
  json segment{{"first_node", s.first_node},
              {"last_node", s.last_node},
              {"input_values", s.input_values},
              {"output_values", s.output_values},
              {"replayed_inputs", s.replayed_inputs},
              {"kept_state_bytes", s.kept_state_bytes},
              {"recompute_step", s.recompute_step},
              {"dropped_tensors", s.dropped_tensors},
              {"dropped_bytes", s.dropped_bytes},
              {"recompute_time_us", s.recompute_time_us}};
  if (!s.outputs_without_grad.empty()) segment["outputs_without_grad"] = s.outputs_without_grad;
  return segment;
}

SegmentCut segmentFromJson(const json& j, const std::string& where) {
  SegmentCut s;
  s.first_node = field<int>(j, "first_node", where);
  s.last_node = field<int>(j, "last_node", where);
  s.input_values = field<std::vector<std::string>>(j, "input_values", where);
  s.output_values = field<std::vector<std::string>>(j, "output_values", where);
  s.replayed_inputs = field<std::vector<std::string>>(j, "replayed_inputs", where);
  s.outputs_without_grad =
      json_fields::optionalField<std::vector<std::string>>(j, "outputs_without_grad", {where, kPlanFix})
          .value_or(std::vector<std::string>{});
  s.kept_state_bytes = field<int64_t>(j, "kept_state_bytes", where);
  s.recompute_step = field<int>(j, "recompute_step", where);
  s.dropped_tensors = field<std::vector<int>>(j, "dropped_tensors", where);
  s.dropped_bytes = field<int64_t>(j, "dropped_bytes", where);
  s.recompute_time_us = field<double>(j, "recompute_time_us", where);
  if (s.first_node < 0 || s.last_node < s.first_node)
    throw FormatError(fmt::format("{}: segment [{}, {}] is not a node range; re-run 'acprof plan'",
                                  printable(where), s.first_node, s.last_node));
  return s;
}

}  // namespace

std::string planToJson(const Plan& p) {
  json segments = json::array();
  for (const SegmentCut& s : p.segments) segments.push_back(segmentToJson(s));
  json timeline = json::array();
  for (const TimelinePoint& t : p.predicted_timeline)
    timeline.push_back(json{{"step", t.step}, {"recompute", t.recompute}, {"peak_bytes", t.peak_bytes}});
  json root{{"format", "acprof-plan"},
            {"schema_version", kPlanSchemaVersion},
            {"model_sha256", p.model_sha256},
            {"model_path", p.model_path},
            {"profile_path", p.profile_path},
            {"solver", p.solver},
            {"solver_report", p.solver_report},
            {"budget_text", p.budget_text},
            {"budget_bytes", p.budget_bytes},
            {"baseline_peak_bytes", p.baseline_peak_bytes},
            {"predicted_peak_bytes", p.predicted_peak_bytes},
            {"predicted_peak_step", p.predicted_peak_step},
            {"baseline_iteration_time_us", p.baseline_iteration_time_us},
            {"extra_time_us", p.extra_time_us},
            {"segments", std::move(segments)},
            {"predicted_timeline", std::move(timeline)}};
  if (p.predicted_peak_breakdown)
    root["predicted_peak_breakdown"] = json_fields::categoryBytesToJson(*p.predicted_peak_breakdown);
  if (!p.frontier.empty()) {
    json frontier = json::array();
    for (const FrontierPoint& f : p.frontier)
      frontier.push_back(json{{"label", f.label},
                              {"budget_bytes", f.budget_bytes},
                              {"peak_bytes", f.peak_bytes},
                              {"extra_time_us", f.extra_time_us},
                              {"segment_count", f.segment_count}});
    root["frontier"] = std::move(frontier);
  }
  return root.dump(1) + "\n";
}

Plan planFromJson(const std::string& json_text, const std::string& where) {
  const json root = json_fields::parse(json_text, {where, kPlanFix});
  const auto format = root.is_object() ? root.find("format") : root.end();
  if (format == root.end() || *format != "acprof-plan")
    throw FormatError(
        fmt::format("{}: not an acprof plan; pass the plan.json written by 'acprof plan'", printable(where)));
  const int version = field<int>(root, "schema_version", where);
  if (version > kPlanSchemaVersion)
    throw FormatError(fmt::format("{}: plan schema version {} is newer than this acprof reads (version {}); "
                                  "upgrade acprof, or re-run 'acprof plan' with this one",
                                  printable(where), version, kPlanSchemaVersion));
  if (version != kPlanSchemaVersion)
    throw FormatError(fmt::format("{}: plan schema version {} is not supported (this acprof reads version {}); "
                                  "re-run 'acprof plan' with this acprof",
                                  printable(where), version, kPlanSchemaVersion));
  Plan p;
  p.model_sha256 = field<std::string>(root, "model_sha256", where);
  p.model_path = field<std::string>(root, "model_path", where);
  p.profile_path = field<std::string>(root, "profile_path", where);
  p.solver = field<std::string>(root, "solver", where);
  if (root.contains("solver_report")) p.solver_report = field<std::string>(root, "solver_report", where);
  p.budget_text = field<std::string>(root, "budget_text", where);
  p.budget_bytes = field<int64_t>(root, "budget_bytes", where);
  p.baseline_peak_bytes = field<int64_t>(root, "baseline_peak_bytes", where);
  p.predicted_peak_bytes = field<int64_t>(root, "predicted_peak_bytes", where);
  p.predicted_peak_step = field<int>(root, "predicted_peak_step", where);
  if (root.contains("predicted_peak_breakdown"))
    p.predicted_peak_breakdown = json_fields::categoryBytesField(root, "predicted_peak_breakdown", {where, kPlanFix});
  if (p.predicted_peak_breakdown) {
    int64_t sum = 0;
    for (int64_t bytes : *p.predicted_peak_breakdown) sum += bytes;
    if (sum != p.predicted_peak_bytes)
      throw FormatError(fmt::format("{}: the predicted peak's breakdown adds up to {} B, not to the predicted peak "
                                    "{} B; re-run 'acprof plan'",
                                    printable(where), sum, p.predicted_peak_bytes));
  }
  p.baseline_iteration_time_us = field<double>(root, "baseline_iteration_time_us", where);
  p.extra_time_us = field<double>(root, "extra_time_us", where);
  for (const json& s : json_fields::arrayField(root, "segments", {where, kPlanFix}))
    p.segments.push_back(segmentFromJson(s, where));
  for (const json& t : json_fields::arrayField(root, "predicted_timeline", {where, kPlanFix}))
    p.predicted_timeline.push_back(TimelinePoint{field<int>(t, "step", where), field<bool>(t, "recompute", where),
                                                 field<int64_t>(t, "peak_bytes", where)});
  if (root.contains("frontier"))
    for (const json& f : field<json>(root, "frontier", where))
      p.frontier.push_back(FrontierPoint{field<std::string>(f, "label", where), field<int64_t>(f, "budget_bytes", where),
                                         field<int64_t>(f, "peak_bytes", where), field<double>(f, "extra_time_us", where),
                                         field<int>(f, "segment_count", where)});
  for (size_t i = 1; i < p.segments.size(); ++i)
    if (p.segments[i].first_node <= p.segments[i - 1].last_node)
      throw FormatError(fmt::format("{}: segments {} and {} overlap or are out of order; re-run 'acprof plan'",
                                    printable(where), i - 1, i));
  return p;
}

void checkPlanMatchesProfile(const Plan& plan, const Profile& profile) {
  if (!plan.model_sha256.empty() && !profile.meta.model_sha256.empty() &&
      plan.model_sha256 != profile.meta.model_sha256)
    throw FormatError(fmt::format("the plan was made for another model ({}) than the profile ({}); pass the plan "
                                  "made from this profile",
                                  printable(plan.model_path), printable(profile.meta.model_path)));
  const auto mismatch = [](const std::string& what) {
    throw FormatError(fmt::format("{}; the plan was edited or made from another profile: re-run 'acprof plan' on "
                                  "this one",
                                  what));
  };
  const int node_count = static_cast<int>(profile.nodes.size());
  const int step_count = static_cast<int>(profile.steps.size());
  const int tensor_count = static_cast<int>(profile.tensors.size());
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    const SegmentCut& segment = plan.segments[i];
    if (segment.first_node < 0 || segment.last_node >= node_count || segment.first_node > segment.last_node)
      mismatch(fmt::format("the plan's segment {} covers nodes {}..{}, outside the profile's {} nodes", i,
                           segment.first_node, segment.last_node, node_count));
    if (segment.recompute_step < -1 || segment.recompute_step >= step_count)
      mismatch(fmt::format("the plan's segment {} recomputes before step {}, outside the profile's {} steps", i,
                           segment.recompute_step, step_count));
    for (int tensor : segment.dropped_tensors)
      if (tensor < 0 || tensor >= tensor_count)
        mismatch(fmt::format("the plan's segment {} drops tensor {}, outside the profile's {} tensors", i, tensor,
                             tensor_count));
  }
  if (plan.predicted_peak_step < -1 || plan.predicted_peak_step >= step_count)
    mismatch(fmt::format("the plan predicts its peak at step {}, outside the profile's {} steps",
                         plan.predicted_peak_step, step_count));
  for (const TimelinePoint& point : plan.predicted_timeline)
    if (point.step < 0 || point.step >= step_count)
      mismatch(fmt::format("the plan predicts step {}, outside the profile's {} steps", point.step, step_count));
}

Plan readPlanFile(const std::string& path) { return planFromJson(readWholeFile(path), path); }

void writePlanFile(const Plan& plan, const std::string& path) { writeFileAtomically(path, planToJson(plan)); }

}  // namespace acprof
