#include "acprof/plan_format.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace acprof {
namespace {

using nlohmann::json;

template <typename T>
T field(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end())
    throw FormatError(fmt::format("{}: missing field '{}'; re-run 'acprof plan' to regenerate it", where, key));
  try {
    return it->template get<T>();
  } catch (const json::exception&) {
    throw FormatError(fmt::format("{}: field '{}' has the wrong type; re-run 'acprof plan' to regenerate it",
                                  where, key));
  }
}

json segmentToJson(const SegmentCut& s) {
  return json{{"first_node", s.first_node},
              {"last_node", s.last_node},
              {"input_values", s.input_values},
              {"output_values", s.output_values},
              {"replayed_inputs", s.replayed_inputs},
              {"kept_state_bytes", s.kept_state_bytes},
              {"recompute_step", s.recompute_step},
              {"dropped_tensors", s.dropped_tensors},
              {"dropped_bytes", s.dropped_bytes},
              {"recompute_time_us", s.recompute_time_us}};
}

SegmentCut segmentFromJson(const json& j, const std::string& where) {
  SegmentCut s;
  s.first_node = field<int>(j, "first_node", where);
  s.last_node = field<int>(j, "last_node", where);
  s.input_values = field<std::vector<std::string>>(j, "input_values", where);
  s.output_values = field<std::vector<std::string>>(j, "output_values", where);
  s.replayed_inputs = field<std::vector<std::string>>(j, "replayed_inputs", where);
  s.kept_state_bytes = field<int64_t>(j, "kept_state_bytes", where);
  s.recompute_step = field<int>(j, "recompute_step", where);
  s.dropped_tensors = field<std::vector<int>>(j, "dropped_tensors", where);
  s.dropped_bytes = field<int64_t>(j, "dropped_bytes", where);
  s.recompute_time_us = field<double>(j, "recompute_time_us", where);
  if (s.first_node < 0 || s.last_node < s.first_node)
    throw FormatError(fmt::format("{}: segment [{}, {}] is not a node range; re-run 'acprof plan'", where,
                                  s.first_node, s.last_node));
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
            {"budget_text", p.budget_text},
            {"budget_bytes", p.budget_bytes},
            {"baseline_peak_bytes", p.baseline_peak_bytes},
            {"predicted_peak_bytes", p.predicted_peak_bytes},
            {"predicted_peak_step", p.predicted_peak_step},
            {"baseline_iteration_time_us", p.baseline_iteration_time_us},
            {"extra_time_us", p.extra_time_us},
            {"segments", std::move(segments)},
            {"predicted_timeline", std::move(timeline)}};
  return root.dump(1) + "\n";
}

Plan planFromJson(const std::string& json_text, const std::string& where) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw FormatError(fmt::format("{}: not valid JSON (byte {}); re-run 'acprof plan' to regenerate it", where,
                                  e.byte));
  }
  if (!root.is_object() || root.value("format", "") != "acprof-plan")
    throw FormatError(fmt::format("{}: not an acprof plan; pass the plan.json written by 'acprof plan'", where));
  const int version = field<int>(root, "schema_version", where);
  if (version != kPlanSchemaVersion)
    throw FormatError(fmt::format("{}: plan schema version {} is not supported (this acprof reads version {}); "
                                  "re-run 'acprof plan' with this acprof",
                                  where, version, kPlanSchemaVersion));
  Plan p;
  p.model_sha256 = field<std::string>(root, "model_sha256", where);
  p.model_path = field<std::string>(root, "model_path", where);
  p.profile_path = field<std::string>(root, "profile_path", where);
  p.solver = field<std::string>(root, "solver", where);
  p.budget_text = field<std::string>(root, "budget_text", where);
  p.budget_bytes = field<int64_t>(root, "budget_bytes", where);
  p.baseline_peak_bytes = field<int64_t>(root, "baseline_peak_bytes", where);
  p.predicted_peak_bytes = field<int64_t>(root, "predicted_peak_bytes", where);
  p.predicted_peak_step = field<int>(root, "predicted_peak_step", where);
  p.baseline_iteration_time_us = field<double>(root, "baseline_iteration_time_us", where);
  p.extra_time_us = field<double>(root, "extra_time_us", where);
  for (const json& s : field<json>(root, "segments", where)) p.segments.push_back(segmentFromJson(s, where));
  for (const json& t : field<json>(root, "predicted_timeline", where))
    p.predicted_timeline.push_back(TimelinePoint{field<int>(t, "step", where), field<bool>(t, "recompute", where),
                                                 field<int64_t>(t, "peak_bytes", where)});
  for (size_t i = 1; i < p.segments.size(); ++i)
    if (p.segments[i].first_node <= p.segments[i - 1].last_node)
      throw FormatError(fmt::format("{}: segments {} and {} overlap or are out of order; re-run 'acprof plan'",
                                    where, i - 1, i));
  return p;
}

Plan readPlanFile(const std::string& path) { return planFromJson(readWholeFile(path), path); }

void writePlanFile(const Plan& plan, const std::string& path) { writeFileAtomically(path, planToJson(plan)); }

}  // namespace acprof
