#include "acprof/profile_format.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "acprof/json_fields.h"

namespace acprof {
namespace {

using nlohmann::json;

// python/acprof/contract.json names the categories and phases for the eager front end too.
constexpr const auto& kCategoryNames = contract::kCategoryNames;
static_assert(std::size(kCategoryNames) == kCategoryCount,
              "python/acprof/contract.json names one category per acprof::Category");
constexpr const auto& kPhaseNames = contract::kPhaseNames;
static_assert(std::size(kPhaseNames) == kPhaseCount, "python/acprof/contract.json names one phase per acprof::Phase");
constexpr const char* kCutRoleNames[] = {"compute", "duplicable", "barrier"};
constexpr const char* kValueEntryNames[] = {"input", "clone", "constant", "blocked", "elements"};
constexpr const char* kInputFormNames[] = {"tensor", "held_optional", "number", "bool", "optional_with_flag"};

// The enumerator named `name`: its position in `names`, the enum's order.
template <typename Enum, size_t N>
Enum enumNamed(const char* const (&names)[N], const std::string& name, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<Enum>(i);
  throw FormatError(fmt::format("unknown {} '{}'", what, printable(name)));
}

constexpr const char* kProfileFix = "re-run 'acprof profile' to regenerate it";

template <typename T>
T field(const json& object, const char* key, const std::string& where) {
  return json_fields::field<T>(object, key, {where, kProfileFix});
}

const json& arrayField(const json& object, const char* key, const std::string& where) {
  return json_fields::arrayField(object, key, {where, kProfileFix});
}

// A field holding one of a fixed set of names ("role": "compute"), read with
// the file and the fix around the name reader's own message.
template <typename Enum>
Enum namedField(const json& object, const char* key, const std::string& where,
                Enum (*fromName)(const std::string&)) {
  const std::string name = field<std::string>(object, key, where);
  try {
    return fromName(name);
  } catch (const FormatError& e) {
    throw FormatError(fmt::format("{}: field '{}': {}; {}", printable(where), key, e.what(), kProfileFix));
  }
}

json metaToJson(const ProfileMeta& m) {
  return json{{"model_path", m.model_path},
              {"model_sha256", m.model_sha256},
              {"torch_version", m.torch_version},
              {"device", m.run.device},
              {"executor_optimize", m.run.executor_optimize},
              {"time_source", m.time_source},
              {"command", m.command},
              {"input_specs", m.run.input_specs},
              {"target_spec", m.run.target_spec},
              {"loss", m.run.loss},
              {"autocast", m.run.autocast},
              {"optimizer", m.run.optimizer},
              {"warmup_iters", m.run.warmup_iters},
              {"measured_iters", m.run.measured_iters},
              {"allocator_bytes_at_start", m.allocator_bytes_at_start},
              {"other_executor_mode_peak_bytes", m.other_executor_mode_peak_bytes},
              {"checkpoint_rng_state_bytes", m.checkpoint_rng_state_bytes},
              {"forward_without_grad_ratio", m.forward_without_grad_ratio},
              {"probe_cost_us", m.probe_cost_us},
              {"seed", m.run.seed},
              {"intra_op_threads", m.run.intra_op_threads}};
}

ProfileMeta metaFromJson(const json& j, const std::string& where) {
  ProfileMeta m;
  m.model_path = field<std::string>(j, "model_path", where);
  m.model_sha256 = field<std::string>(j, "model_sha256", where);
  m.torch_version = field<std::string>(j, "torch_version", where);
  m.run.device = field<std::string>(j, "device", where);
  m.run.executor_optimize = field<bool>(j, "executor_optimize", where);
  m.time_source = field<std::string>(j, "time_source", where);
  m.command = field<std::string>(j, "command", where);
  m.run.input_specs = field<std::vector<std::string>>(j, "input_specs", where);
  m.run.target_spec = field<std::string>(j, "target_spec", where);
  m.run.loss = field<std::string>(j, "loss", where);
  m.run.autocast = field<std::string>(j, "autocast", where);
  m.run.optimizer = field<std::string>(j, "optimizer", where);
  m.run.warmup_iters = field<int>(j, "warmup_iters", where);
  m.run.measured_iters = field<int>(j, "measured_iters", where);
  m.allocator_bytes_at_start = field<int64_t>(j, "allocator_bytes_at_start", where);
  m.other_executor_mode_peak_bytes = field<int64_t>(j, "other_executor_mode_peak_bytes", where);
  m.checkpoint_rng_state_bytes = field<int64_t>(j, "checkpoint_rng_state_bytes", where);
  m.forward_without_grad_ratio = field<double>(j, "forward_without_grad_ratio", where);
  // Profiles written before the probes' cost was recorded say nothing of it (-1).
  m.probe_cost_us = json_fields::optionalField<double>(j, "probe_cost_us", {where, kProfileFix}).value_or(-1);
  // Profiles written before the seed was recorded ran with seed 0.
  m.run.seed = json_fields::optionalField<uint64_t>(j, "seed", {where, kProfileFix}).value_or(0);
  // Profiles written before the thread count was recorded say nothing of it (0).
  m.run.intra_op_threads = json_fields::optionalField<int>(j, "intra_op_threads", {where, kProfileFix}).value_or(0);
  return m;
}

json nodeToJson(const ForwardNode& n) {
  return json{{"id", n.id},
              {"kind", n.kind},
              {"scope", n.scope},
              {"inputs", n.inputs},
              {"outputs", n.outputs},
              {"role", cutRoleName(n.role)},
              {"barrier_reason", n.barrier_reason},
              {"reads", n.reads},
              {"writes", n.writes},
              {"forward_step", n.forward_step},
              {"forward_time_us", n.forward_time_us},
              {"backward_steps", n.backward_steps}};
}

ForwardNode nodeFromJson(const json& j, const std::string& where) {
  ForwardNode n;
  n.id = field<int>(j, "id", where);
  n.kind = field<std::string>(j, "kind", where);
  n.scope = field<std::string>(j, "scope", where);
  n.inputs = field<std::vector<std::string>>(j, "inputs", where);
  n.outputs = field<std::vector<std::string>>(j, "outputs", where);
  n.role = namedField(j, "role", where, cutRoleFromName);
  n.barrier_reason = field<std::string>(j, "barrier_reason", where);
  n.reads = field<std::vector<int>>(j, "reads", where);
  n.writes = field<std::vector<int>>(j, "writes", where);
  n.forward_step = field<int>(j, "forward_step", where);
  n.forward_time_us = field<double>(j, "forward_time_us", where);
  n.backward_steps = field<std::vector<int>>(j, "backward_steps", where);
  // Profiles written before it was dropped still carry "backward_time_us" (the
  // sum of the backward steps' times, a copy nothing read); like any key not
  // read here, it is ignored.
  return n;
}

json valueToJson(const GraphValue& v) {
  return json{{"id", v.id},
              {"name", v.name},
              {"producer_node", v.producer_node},
              {"type", v.type},
              {"entry", valueEntryName(v.entry)},
              {"input_form", inputFormName(v.input_form)},
              {"can_leave", v.can_leave},
              {"is_tensor", v.is_tensor},
              {"requires_grad", v.requires_grad},
              {"needs_grad", v.needs_grad},
              {"bytes", v.bytes},
              {"tensor", v.tensor}};
}

GraphValue valueFromJson(const json& j, const std::string& where) {
  GraphValue v;
  v.id = field<int>(j, "id", where);
  v.name = field<std::string>(j, "name", where);
  v.producer_node = field<int>(j, "producer_node", where);
  v.type = field<std::string>(j, "type", where);
  v.entry = namedField(j, "entry", where, valueEntryFromName);
  v.input_form = namedField(j, "input_form", where, inputFormFromName);
  v.can_leave = field<bool>(j, "can_leave", where);
  v.is_tensor = field<bool>(j, "is_tensor", where);
  v.requires_grad = field<bool>(j, "requires_grad", where);
  // Absent in profiles written before the run observed it: the graph's answer stands.
  v.needs_grad = json_fields::optionalField<bool>(j, "needs_grad", {where, kProfileFix}).value_or(v.requires_grad);
  v.bytes = field<int64_t>(j, "bytes", where);
  v.tensor = field<int>(j, "tensor", where);
  return v;
}

json tensorToJson(const TensorRecord& t) {
  json out{{"id", t.id},
           {"bytes", t.bytes},
           {"shape", t.shape},
           {"dtype", t.dtype},
           {"device", t.device},
           {"category", categoryName(t.category)},
           {"name", t.name},
           {"producer_node", t.producer_node},
           {"alloc_event", t.alloc_event},
           {"free_event", t.free_event},
           {"alloc_step", t.alloc_step},
           {"free_step", t.free_step},
           {"users", t.users},
           {"last_forward_use_step", t.last_forward_use_step},
           {"first_backward_use_step", t.first_backward_use_step}};
  if (t.saved_by) {
    json saved = json::array();
    for (const TensorRecord::SavedBy& by : *t.saved_by)
      saved.push_back(json{{"node", by.node}, {"release_step", by.release_step}});
    out["saved_by"] = std::move(saved);
  }
  if (t.gradient_of) out["gradient_of"] = *t.gradient_of;
  return out;
}

TensorRecord tensorFromJson(const json& j, const std::string& where) {
  TensorRecord t;
  t.id = field<int>(j, "id", where);
  t.bytes = field<int64_t>(j, "bytes", where);
  t.shape = field<std::vector<int64_t>>(j, "shape", where);
  t.dtype = field<std::string>(j, "dtype", where);
  t.device = field<std::string>(j, "device", where);
  t.category = namedField(j, "category", where, categoryFromName);
  t.name = field<std::string>(j, "name", where);
  t.producer_node = field<int>(j, "producer_node", where);
  t.alloc_event = field<int>(j, "alloc_event", where);
  t.free_event = field<int>(j, "free_event", where);
  t.alloc_step = field<int>(j, "alloc_step", where);
  t.free_step = field<int>(j, "free_step", where);
  t.users = field<std::vector<int>>(j, "users", where);
  t.last_forward_use_step = field<int>(j, "last_forward_use_step", where);
  t.first_backward_use_step = field<int>(j, "first_backward_use_step", where);
  if (j.contains("saved_by")) {
    t.saved_by.emplace();
    for (const json& by : arrayField(j, "saved_by", where))
      t.saved_by->push_back({field<int>(by, "node", where), field<int>(by, "release_step", where)});
  }
  if (j.contains("gradient_of")) t.gradient_of = field<std::vector<int>>(j, "gradient_of", where);
  return t;
}

json stepToJson(const Step& s) {
  return json{{"index", s.index},
              {"phase", phaseName(s.phase)},
              {"node", s.node},
              {"op", s.op},
              {"scope", s.scope},
              {"first_event", s.first_event},
              {"time_us", s.time_us},
              {"allocator_bytes", s.allocator_bytes},
              {"allocator_peak_bytes", s.allocator_peak_bytes},
              {"bytes_at_end", json_fields::categoryBytesToJson(s.bytes_at_end)},
              {"peak_bytes", s.peak_bytes}};
}

Step stepFromJson(const json& j, const std::string& where) {
  Step s;
  s.index = field<int>(j, "index", where);
  s.phase = namedField(j, "phase", where, phaseFromName);
  s.node = field<int>(j, "node", where);
  s.op = field<std::string>(j, "op", where);
  s.scope = field<std::string>(j, "scope", where);
  s.first_event = field<int>(j, "first_event", where);
  s.time_us = field<double>(j, "time_us", where);
  s.allocator_bytes = field<int64_t>(j, "allocator_bytes", where);
  s.allocator_peak_bytes = field<int64_t>(j, "allocator_peak_bytes", where);
  s.bytes_at_end = json_fields::categoryBytesField(j, "bytes_at_end", {where, kProfileFix});
  s.peak_bytes = field<int64_t>(j, "peak_bytes", where);
  return s;
}

json summaryToJson(const PeakSummary& s) {
  json phases = json::object();
  for (int i = 0; i < kPhaseCount; ++i) phases[kPhaseNames[i]] = s.phase_time_us[i];
  json summary{{"peak_bytes", s.peak_bytes},
               {"peak_step", s.peak_step},
               {"peak_breakdown", json_fields::categoryBytesToJson(s.peak_breakdown)},
               {"allocator_peak_bytes", s.allocator_peak_bytes},
               {"phase_time_us", phases}};
  if (s.reserved_peak_bytes) summary["reserved_peak_bytes"] = *s.reserved_peak_bytes;
  return summary;
}

PeakSummary summaryFromJson(const json& j, const std::string& where) {
  PeakSummary s;
  s.peak_bytes = field<int64_t>(j, "peak_bytes", where);
  s.peak_step = field<int>(j, "peak_step", where);
  s.peak_breakdown = json_fields::categoryBytesField(j, "peak_breakdown", {where, kProfileFix});
  s.allocator_peak_bytes = field<int64_t>(j, "allocator_peak_bytes", where);
  s.reserved_peak_bytes = json_fields::optionalField<int64_t>(j, "reserved_peak_bytes", {where, kProfileFix});
  const json phases = field<json>(j, "phase_time_us", where);
  for (int i = 0; i < kPhaseCount; ++i) s.phase_time_us[i] = field<double>(phases, kPhaseNames[i], where);
  return s;
}

// No training step holds 8 PiB: a byte count above it is damage, and keeping
// every sum of a profile's bytes below it lets later stages add them up (with
// recompute copies) without overflowing int64.
constexpr int64_t kMaxProfileBytes = int64_t{1} << 53;

// Cross-field checks: a reader that accepts a profile promises every index in
// it points somewhere, so later stages can index without checking.
void validate(const Profile& p, const std::string& where) {
  const int node_count = static_cast<int>(p.nodes.size());
  const int step_count = static_cast<int>(p.steps.size());
  const int value_count = static_cast<int>(p.values.size());
  auto bad = [&](const std::string& what) {
    throw FormatError(fmt::format("{}: {}; the profile is damaged, re-run 'acprof profile'", printable(where), what));
  };
  auto checkStep = [&](int step, const char* what, size_t owner, const char* owner_kind) {
    if (step < -1 || step >= step_count) bad(fmt::format("{} {} has {} {}", owner_kind, owner, what, step));
  };
  if (p.event_count < 0) bad(fmt::format("the event count is {}", p.event_count));
  // Every event is the allocation or the free of one recorded storage.
  if (static_cast<size_t>(p.event_count) > 2 * p.tensors.size())
    bad(fmt::format("{} events for {} tensors", p.event_count, p.tensors.size()));
  if (p.summary.peak_step < -1 || p.summary.peak_step >= step_count)
    bad(fmt::format("the summary has peak step {}", p.summary.peak_step));
  if (p.summary.reserved_peak_bytes &&
      (*p.summary.reserved_peak_bytes < 0 || *p.summary.reserved_peak_bytes > kMaxProfileBytes))
    bad(fmt::format("the summary has {} reserved bytes", *p.summary.reserved_peak_bytes));
  if (p.meta.checkpoint_rng_state_bytes < 0 || p.meta.checkpoint_rng_state_bytes > kMaxProfileBytes)
    bad(fmt::format("a checkpoint keeps {} bytes of generator state", p.meta.checkpoint_rng_state_bytes));
  for (int i = 0; i < node_count; ++i) {
    const ForwardNode& n = p.nodes[i];
    if (n.id != i) bad(fmt::format("node {} has id {}", i, n.id));
    if (n.forward_step < -1 || n.forward_step >= step_count) bad(fmt::format("node {} has step {}", i, n.forward_step));
    for (int s : n.backward_steps)
      if (s < 0 || s >= step_count) bad(fmt::format("node {} has backward step {}", i, s));
    for (const std::vector<int>* ids : {&n.reads, &n.writes})
      for (int v : *ids)
        if (v < 0 || v >= value_count) bad(fmt::format("node {} names value {}", i, v));
  }
  for (int i = 0; i < value_count; ++i) {
    const GraphValue& v = p.values[i];
    if (v.id != i) bad(fmt::format("value {} has id {}", i, v.id));
    if (v.producer_node < -1 || v.producer_node >= node_count)
      bad(fmt::format("value {} names producer node {}", i, v.producer_node));
    if (v.bytes < 0 || v.bytes > kMaxProfileBytes) bad(fmt::format("value {} has {} bytes", i, v.bytes));
    if (v.tensor < -1 || v.tensor >= static_cast<int>(p.tensors.size()))
      bad(fmt::format("value {} names tensor {}", i, v.tensor));
  }
  for (int v : p.graph_outputs)
    if (v < 0 || v >= value_count) bad(fmt::format("the graph outputs name value {}", v));
  for (int i = 0; i < step_count; ++i) {
    const Step& s = p.steps[i];
    if (s.index != i) bad(fmt::format("step {} has index {}", i, s.index));
    if (s.node < -1 || s.node >= node_count) bad(fmt::format("step {} names node {}", i, s.node));
    if (s.first_event < 0 || s.first_event > p.event_count) bad(fmt::format("step {} starts at event {}", i, s.first_event));
    if (i > 0 && s.first_event < p.steps[i - 1].first_event) bad(fmt::format("step {} starts before step {}", i, i - 1));
  }
  int64_t total_bytes = 0;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const TensorRecord& t = p.tensors[i];
    if (t.id != static_cast<int>(i)) bad(fmt::format("tensor {} has id {}", i, t.id));
    if (t.bytes < 0 || t.bytes > kMaxProfileBytes) bad(fmt::format("tensor {} has {} bytes", i, t.bytes));
    total_bytes += t.bytes;
    if (total_bytes > kMaxProfileBytes) bad(fmt::format("the tensors hold more than {} bytes", kMaxProfileBytes));
    checkStep(t.alloc_step, "allocation step", i, "tensor");
    checkStep(t.free_step, "free step", i, "tensor");
    checkStep(t.last_forward_use_step, "last forward use at step", i, "tensor");
    checkStep(t.first_backward_use_step, "first backward use at step", i, "tensor");
    if (t.alloc_event < -1 || t.free_event > p.event_count || t.free_event <= t.alloc_event)
      bad(fmt::format("tensor {} lives over events [{}, {})", i, t.alloc_event, t.free_event));
    if (t.producer_node < -1 || t.producer_node >= node_count)
      bad(fmt::format("tensor {} names producer node {}", i, t.producer_node));
    for (int user : t.users)
      if (user < 0 || user >= node_count) bad(fmt::format("tensor {} names user node {}", i, user));
    if (t.saved_by) {
      for (const TensorRecord::SavedBy& by : *t.saved_by) {
        if (by.node < -1 || by.node >= node_count) bad(fmt::format("tensor {} is saved by node {}", i, by.node));
        checkStep(by.release_step, "release by a saving node at step", i, "tensor");
      }
    }
    if (t.gradient_of)
      for (int value : *t.gradient_of)
        if (value < 0 || value >= static_cast<int>(p.values.size()))
          bad(fmt::format("tensor {} is the gradient of value {}", i, value));
  }
}

}  // namespace

const char* categoryName(Category category) { return kCategoryNames[static_cast<int>(category)]; }
const char* phaseName(Phase phase) { return kPhaseNames[static_cast<int>(phase)]; }

Category categoryFromName(const std::string& name) {
  return enumNamed<Category>(kCategoryNames, name, "tensor category");
}

const char* cutRoleName(CutRole role) { return kCutRoleNames[static_cast<int>(role)]; }
const char* valueEntryName(ValueEntry entry) { return kValueEntryNames[static_cast<int>(entry)]; }

CutRole cutRoleFromName(const std::string& name) { return enumNamed<CutRole>(kCutRoleNames, name, "node role"); }

ValueEntry valueEntryFromName(const std::string& name) {
  return enumNamed<ValueEntry>(kValueEntryNames, name, "value entry");
}

const char* inputFormName(InputForm form) { return kInputFormNames[static_cast<int>(form)]; }

InputForm inputFormFromName(const std::string& name) {
  return enumNamed<InputForm>(kInputFormNames, name, "input form");
}

int64_t inputFormExtraBytes(InputForm form) {
  switch (form) {
    case InputForm::Number: return 8;
    case InputForm::Bool:
    case InputForm::OptionalWithFlag: return 1;
    case InputForm::Tensor:
    case InputForm::HeldOptional: break;
  }
  return 0;
}

Phase phaseFromName(const std::string& name) { return enumNamed<Phase>(kPhaseNames, name, "phase"); }

const ForwardNode* Profile::findNode(int id) const {
  if (id < 0 || id >= static_cast<int>(nodes.size())) return nullptr;
  return &nodes[id];
}

const GraphValue* Profile::findValue(const std::string& name) const {
  for (const GraphValue& v : values)
    if (v.name == name) return &v;
  return nullptr;
}

namespace {

// The one replay of the tensors' intervals: live bytes per category before the
// first event (index 0) and after each event e (index e + 1).
std::vector<CategoryBytes> categoryBytesFromStart(const Profile& profile) {
  const int event_count = profile.event_count;
  // A difference array first: +bytes where a storage starts counting, -bytes where it stops.
  std::vector<CategoryBytes> live(static_cast<size_t>(event_count) + 1, CategoryBytes{});
  for (const TensorRecord& t : profile.tensors) {
    const int c = static_cast<int>(t.category);
    if (t.alloc_event >= event_count) continue;
    live[std::max(t.alloc_event, -1) + 1][c] += t.bytes;
    if (t.free_event >= 0 && t.free_event < event_count) live[t.free_event + 1][c] -= t.bytes;
  }
  for (int e = 1; e <= event_count; ++e)
    for (int c = 0; c < kCategoryCount; ++c) live[e][c] += live[e - 1][c];
  return live;
}

}  // namespace

int64_t totalBytes(const CategoryBytes& bytes) {
  int64_t sum = 0;
  for (int64_t b : bytes) sum += b;
  return sum;
}

int64_t unremovableBytes(const CategoryBytes& bytes) {
  int64_t sum = 0;
  for (Category c : {Category::Weight, Category::Gradient, Category::OptimizerState, Category::Input,
                     Category::Communication})
    sum += bytes[static_cast<int>(c)];
  return sum;
}

std::vector<CategoryBytes> categoryBytesPerEvent(const Profile& profile) {
  std::vector<CategoryBytes> live = categoryBytesFromStart(profile);
  live.erase(live.begin());
  return live;
}

std::vector<int64_t> liveBytesPerEvent(const Profile& profile) {
  const std::vector<CategoryBytes> per_category = categoryBytesPerEvent(profile);
  std::vector<int64_t> live(per_category.size());
  for (size_t e = 0; e < live.size(); ++e) live[e] = totalBytes(per_category[e]);
  return live;
}

int stepEndEvent(const Profile& profile, int step) {
  return step + 1 < static_cast<int>(profile.steps.size()) ? profile.steps[step + 1].first_event
                                                           : profile.event_count;
}

int stepOfEvent(const Profile& profile, int event) {
  auto it = std::upper_bound(profile.steps.begin(), profile.steps.end(), event,
                             [](int e, const Step& s) { return e < s.first_event; });
  return static_cast<int>(it - profile.steps.begin()) - 1;
}

void timelineFromTensors(Profile& profile) {
  const std::vector<CategoryBytes> live = categoryBytesFromStart(profile);  // [e + 1]: after event e
  PeakSummary& summary = profile.summary;
  summary.peak_bytes = totalBytes(live[0]);
  summary.peak_breakdown = live[0];
  summary.peak_step = profile.steps.empty() ? -1 : 0;
  int event = 0;
  for (size_t i = 0; i < profile.steps.size(); ++i) {
    Step& step = profile.steps[i];
    const int end = stepEndEvent(profile, static_cast<int>(i));
    int64_t step_peak = totalBytes(live[event]);
    for (; event < end; ++event) {
      const int64_t bytes = totalBytes(live[event + 1]);
      step_peak = std::max(step_peak, bytes);
      if (bytes > summary.peak_bytes) {
        summary.peak_bytes = bytes;
        summary.peak_breakdown = live[event + 1];
        summary.peak_step = static_cast<int>(i);
      }
    }
    step.bytes_at_end = live[event];
    step.peak_bytes = step_peak;
  }
  summary.phase_time_us = {};
  for (const Step& step : profile.steps) summary.phase_time_us[static_cast<int>(step.phase)] += step.time_us;
}

std::string profileToJson(const Profile& p) {
  json nodes = json::array();
  for (const ForwardNode& n : p.nodes) nodes.push_back(nodeToJson(n));
  json values = json::array();
  for (const GraphValue& v : p.values) values.push_back(valueToJson(v));
  json tensors = json::array();
  for (const TensorRecord& t : p.tensors) tensors.push_back(tensorToJson(t));
  json steps = json::array();
  for (const Step& s : p.steps) steps.push_back(stepToJson(s));
  json root{{"format", "acprof-profile"},
            {"schema_version", kProfileSchemaVersion},
            {"meta", metaToJson(p.meta)},
            {"event_count", p.event_count},
            {"summary", summaryToJson(p.summary)},
            {"nodes", std::move(nodes)},
            {"values", std::move(values)},
            {"graph_outputs", p.graph_outputs},
            {"steps", std::move(steps)},
            {"tensors", std::move(tensors)}};
  return root.dump(1) + "\n";
}

Profile profileFromJson(const std::string& json_text, const std::string& where) {
  const json root = json_fields::parse(json_text, {where, kProfileFix});
  const auto format = root.is_object() ? root.find("format") : root.end();
  if (format == root.end() || *format != "acprof-profile")
    throw FormatError(fmt::format("{}: not an acprof profile; pass the profile.json written by 'acprof profile'",
                                  printable(where)));
  const int version = field<int>(root, "schema_version", where);
  if (version > kProfileSchemaVersion)
    throw FormatError(fmt::format("{}: profile schema version {} is newer than this acprof reads (version {}); "
                                  "upgrade acprof, or re-run 'acprof profile' with this one",
                                  printable(where), version, kProfileSchemaVersion));
  if (version != kProfileSchemaVersion)
    throw FormatError(fmt::format("{}: profile schema version {} is not supported (this acprof reads version {}); "
                                  "re-run 'acprof profile' with this acprof",
                                  printable(where), version, kProfileSchemaVersion));
  Profile p;
  p.meta = metaFromJson(field<json>(root, "meta", where), where);
  p.event_count = field<int>(root, "event_count", where);
  p.summary = summaryFromJson(field<json>(root, "summary", where), where);
  for (const json& n : arrayField(root, "nodes", where)) p.nodes.push_back(nodeFromJson(n, where));
  for (const json& v : arrayField(root, "values", where)) p.values.push_back(valueFromJson(v, where));
  p.graph_outputs = field<std::vector<int>>(root, "graph_outputs", where);
  for (const json& s : arrayField(root, "steps", where)) p.steps.push_back(stepFromJson(s, where));
  for (const json& t : arrayField(root, "tensors", where)) p.tensors.push_back(tensorFromJson(t, where));
  validate(p, where);
  return p;
}

Profile readProfileFile(const std::string& path) { return profileFromJson(readWholeFile(path), path); }

void writeProfileFile(const Profile& profile, const std::string& path) {
  writeFileAtomically(path, profileToJson(profile));
}

double iterationTimeUs(const Profile& profile) {
  double total_us = 0;
  for (const Step& step : profile.steps) total_us += step.time_us;
  return total_us;
}

std::vector<const TensorRecord*> largestActivations(const Profile& profile, size_t count) {
  std::vector<const TensorRecord*> activations;
  for (const TensorRecord& t : profile.tensors)
    if (t.category == Category::Activation) activations.push_back(&t);
  std::stable_sort(activations.begin(), activations.end(),
                   [](const TensorRecord* a, const TensorRecord* b) { return a->bytes > b->bytes; });
  if (activations.size() > count) activations.resize(count);
  return activations;
}

std::string formatBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes < 0 ? -bytes : bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  const char* sign = bytes < 0 ? "-" : "";
  if (unit == 0) return fmt::format("{}{} B", sign, static_cast<int64_t>(value));
  return fmt::format("{}{:.2f} {}", sign, value, units[unit]);
}

}  // namespace acprof
