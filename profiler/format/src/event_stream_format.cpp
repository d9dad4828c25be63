#include "acprof/event_stream_format.h"

#include <cstdint>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "acprof/contract.h"
#include "acprof/json_fields.h"
#include "acprof/measured_iterations.h"

namespace acprof {
namespace {

using json = nlohmann::json;

// The stream is written by acprof's own recorder, never by hand outside tests:
// a damaged one is acprof's bug.
constexpr const char* kStreamFix = "acprof's recorder wrote it; report this with the command that made it";

struct Reader {
  const std::string& where;

  json_fields::Source source() const { return {where, kStreamFix}; }
  template <typename T>
  T get(const json& object, const char* key) const {
    return json_fields::field<T>(object, key, source());
  }
  template <typename T>
  T get(const json& object, const char* key, T absent) const {
    return json_fields::optionalField<T>(object, key, source()).value_or(absent);
  }
  const json& list(const json& object, const char* key) const { return json_fields::arrayField(object, key, source()); }
  [[noreturn]] void bad(const std::string& what) const {
    throw FormatError(fmt::format("{}: {}; {}", printable(where), what, kStreamFix));
  }

  // A storage's address: a non-negative integer, 0 or null for none.
  const void* pointer(const json& object, const char* key) const {
    const auto it = object.is_object() ? object.find(key) : object.end();
    if (it == object.end() || it->is_null()) return nullptr;
    if (!json_fields::holds<uint64_t>(*it)) bad(fmt::format("field '{}' is not an address", key));
    return reinterpret_cast<const void*>(static_cast<uintptr_t>(it->get<uint64_t>()));
  }
  std::vector<const void*> pointers(const json& object, const char* key) const {
    std::vector<const void*> out;
    for (const json& p : list(object, key)) {
      if (!json_fields::holds<uint64_t>(p)) bad(fmt::format("'{}' holds something that is not an address", key));
      out.push_back(reinterpret_cast<const void*>(static_cast<uintptr_t>(p.get<uint64_t>())));
    }
    return out;
  }

  GradientTarget target(const json& object) const {
    GradientTarget t;
    t.node = pointer(object, "node");
    t.sequence_nr = get<uint64_t>(object, "sequence_nr");
    t.input_nr = get<int>(object, "input_nr");
    return t;
  }
};

// The graph part as profile.json states it, before any step: the profile
// reader checks it (names, indices, the meta's fields) as it checks a profile.
Profile graphOf(const json& graph, const std::string& where) {
  json summary = {{"peak_bytes", 0}, {"peak_step", -1}, {"allocator_peak_bytes", 0}};
  summary["peak_breakdown"] = json_fields::categoryBytesToJson(CategoryBytes{});
  json phase_time = json::object();
  for (int p = 0; p < kPhaseCount; ++p) phase_time[phaseName(static_cast<Phase>(p))] = 0.0;
  summary["phase_time_us"] = phase_time;
  const Reader r{where};
  const json profile = {{"format", "acprof-profile"},
                        {"schema_version", kProfileSchemaVersion},
                        {"meta", r.get<json>(graph, "meta")},
                        {"event_count", 0},
                        {"summary", summary},
                        {"nodes", r.list(graph, "nodes")},
                        {"values", r.list(graph, "values")},
                        {"graph_outputs", r.get<json>(graph, "graph_outputs")},
                        {"steps", json::array()},
                        {"tensors", json::array()}};
  return profileFromJson(profile.dump(), where);
}

MeasuredIteration iterationOf(const json& j, const Profile& graph, const std::string& where) {
  const Reader r{where};
  MeasuredIteration it;
  IterationRecord& record = it.record;
  record.time_source = r.get<std::string>(j, "time_source", "cpu_wall");
  record.gradients_recorded = r.get<bool>(j, "gradients_recorded", false);
  const int node_count = static_cast<int>(graph.nodes.size());

  const json& steps = r.list(j, "steps");
  const json& events = r.list(j, "events");
  const int step_count = static_cast<int>(steps.size());
  const int event_count = static_cast<int>(events.size());
  int previous_first_event = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    const json& step = steps[s];
    StepTiming t;
    t.phase = phaseFromName(r.get<std::string>(step, "phase"));
    t.node = r.get<int>(step, "node", -1);
    if (t.node < -1 || t.node >= node_count || (t.node >= 0 && t.phase != Phase::Forward))
      r.bad(fmt::format("step {} names node {} (the graph has {} nodes; only forward steps name one)", s, t.node,
                        node_count));
    t.op = r.get<std::string>(step, "op", "");
    t.autograd_sequence_nr = r.get<int64_t>(step, "autograd_sequence_nr", -1);
    t.sequence_at_start = r.get<int64_t>(step, "sequence_at_start", -1);
    t.first_event = r.get<int>(step, "first_event");
    if (t.first_event < previous_first_event || t.first_event > event_count)
      r.bad(fmt::format("step {} starts at event {} (after {}, of {} events)", s, t.first_event, previous_first_event,
                        event_count));
    previous_first_event = t.first_event;
    record.steps.push_back(t);
    it.step_time_us.push_back(r.get<double>(step, "time_us"));
  }
  // The later measured iterations' step times, where the recorder measured
  // more than this one: each step's time is then the median over all of them,
  // by the rule the LibTorch recorder follows (measured_iterations.h).
  const auto later = r.get<std::vector<std::vector<double>>>(j, "later_step_time_us", {});
  if (!later.empty()) {
    std::vector<std::vector<double>> iterations{it.step_time_us};
    iterations.insert(iterations.end(), later.begin(), later.end());
    it.step_time_us = stepTimeMedians(iterations);
  }
  for (size_t e = 0; e < events.size(); ++e) {
    const json& event = events[e];
    AllocationEvent a;
    a.ptr = const_cast<void*>(r.pointer(event, "ptr"));
    a.delta_bytes = r.get<int64_t>(event, "delta_bytes");
    a.allocator_total = r.get<int64_t>(event, "allocator_total");
    a.allocator_reserved = r.get<int64_t>(event, "allocator_reserved", 0);
    a.step = r.get<int>(event, "step");
    // Every event belongs to a step: the derivation files each storage under the step that made it.
    if (a.delta_bytes == 0 || a.step < 0 || a.step >= step_count)
      r.bad(fmt::format("event {} is {} bytes in step {} (of {} steps)", e, a.delta_bytes, a.step, step_count));
    record.events.push_back(a);
  }
  for (const json& seen : r.list(j, "observed")) {
    ObservedValue v;
    v.node = r.get<int>(seen, "node");
    v.output_index = r.get<int>(seen, "output_index", 0);
    v.list_index = r.get<int>(seen, "list_index", -1);
    if (v.node < 0 || v.node >= node_count || v.output_index < 0 || v.list_index < -1)
      r.bad(fmt::format("an observed value names output {} of node {} (the graph has {} nodes)", v.output_index,
                        v.node, node_count));
    v.storage_ptr = r.pointer(seen, "storage_ptr");
    v.shape = r.get<std::vector<int64_t>>(seen, "shape");
    v.dtype = r.get<std::string>(seen, "dtype");
    v.requires_grad = r.get<bool>(seen, "requires_grad");
    v.bytes = r.get<int64_t>(seen, "bytes");
    v.event_index = r.get<int>(seen, "event_index");
    if (seen.contains("gradient_target") && !seen["gradient_target"].is_null())
      v.gradient_target = r.target(seen["gradient_target"]);
    record.observed.push_back(std::move(v));
  }
  for (const json& saved : r.list(j, "saved_tensors")) {
    SavedTensorEvent s;
    s.save_id = r.get<uint64_t>(saved, "save_id");
    s.storage_ptr = r.pointer(saved, "storage_ptr");
    s.step = r.get<int>(saved, "step");
    s.event_index = r.get<int>(saved, "event_index");
    if (s.step < -1 || s.step >= step_count)
      r.bad(fmt::format("save {} happened in step {} (of {} steps)", s.save_id, s.step, step_count));
    record.saved_tensors.push_back(s);
  }
  for (const json& gradient : r.list(j, "gradients")) {
    GradientReport g;
    g.storage_ptr = r.pointer(gradient, "storage_ptr");
    g.target = r.target(r.get<json>(gradient, "target"));
    g.event_index = r.get<int>(gradient, "event_index");
    record.gradients.push_back(g);
  }
  for (const json& s : r.list(j, "statics")) {
    StaticStorage storage;
    storage.ptr = r.pointer(s, "ptr");
    storage.bytes = r.get<int64_t>(s, "bytes");
    storage.category = categoryFromName(r.get<std::string>(s, "category"));
    storage.name = r.get<std::string>(s, "name", "");
    storage.shape = r.get<std::vector<int64_t>>(s, "shape", {});
    storage.dtype = r.get<std::string>(s, "dtype", "");
    it.statics.push_back(std::move(storage));
  }
  for (const void* p : r.pointers(j, "gradient_ptrs")) it.gradient_ptrs.insert(p);
  for (const void* p : r.pointers(j, "output_ptrs")) it.output_ptrs.insert(p);
  it.input_ptrs = r.pointers(j, "input_ptrs");
  it.input_bytes = r.get<std::vector<int64_t>>(j, "input_bytes");
  if (it.input_bytes.size() != it.input_ptrs.size())
    r.bad(fmt::format("{} input addresses for {} input sizes", it.input_ptrs.size(), it.input_bytes.size()));
  return it;
}

}  // namespace

Profile profileFromEventStreamJson(const std::string& json_text, const std::string& where) {
  const Reader r{where};
  const json root = json_fields::parse(json_text, r.source());
  const auto format = root.is_object() ? root.find("format") : root.end();
  if (format == root.end() || *format != kEventStreamFormat)
    r.bad(fmt::format("not an acprof event stream (format '{}')", kEventStreamFormat));
  const int version = r.get<int>(root, "schema_version");
  if (version != contract::kEventStreamSchemaVersion)
    throw FormatError(fmt::format("{}: event stream schema version {}, but this acprof engine reads version {}; the "
                                  "acprof package and its engine module come from different builds: reinstall acprof",
                                  printable(where), version, contract::kEventStreamSchemaVersion));
  Profile profile = graphOf(r.get<json>(root, "graph"), where);
  const MeasuredIteration iteration = iterationOf(r.get<json>(root, "iteration"), profile, where);
  deriveProfile(profile, iteration);
  // What the derivation made is read back as any profile is, so the engine
  // hands on only a profile the planner accepts.
  return profileFromJson(profileToJson(profile), where);
}

}  // namespace acprof
