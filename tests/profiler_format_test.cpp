#include "acprof/profile_format.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include <functional>

namespace acprof {
namespace {

// A two-step profile by hand: one weight (static, 100 B), an activation made in
// step 0 and freed in step 1, and a temporary made and freed inside step 0.
Profile handMadeProfile() {
  Profile p;
  p.meta.model_sha256 = "abc";
  p.event_count = 4;
  ForwardNode relu;
  relu.id = 0;
  relu.kind = "aten::relu";
  relu.scope = "layer";
  relu.inputs = {"x"};
  relu.outputs = {"y"};
  relu.reads = {0};
  relu.forward_step = 0;
  relu.forward_time_us = 1.5;
  relu.backward_steps = {1};
  p.nodes.push_back(relu);
  auto value = [](int id, const std::string& name, int producer) {
    GraphValue v;
    v.id = id;
    v.name = name;
    v.producer_node = producer;
    v.type = "Tensor";
    v.is_tensor = v.can_leave = true;
    v.bytes = 40;
    return v;
  };
  p.values = {value(0, "x", -1), value(1, "y", 0)};
  p.graph_outputs = {1};
  Step forward;
  forward.index = 0;
  forward.phase = Phase::Forward;
  forward.node = 0;
  forward.first_event = 0;
  Step backward;
  backward.index = 1;
  backward.phase = Phase::Backward;
  backward.first_event = 3;
  p.steps = {forward, backward};
  auto tensor = [](int id, int64_t bytes, Category c, int alloc, int free) {
    TensorRecord t;
    t.id = id;
    t.bytes = bytes;
    t.category = c;
    t.alloc_event = alloc;
    t.free_event = free;
    return t;
  };
  p.tensors = {tensor(0, 100, Category::Weight, -1, 4), tensor(1, 40, Category::Activation, 0, 3),
               tensor(2, 7, Category::Temporary, 1, 2)};
  timelineFromTensors(p);
  return p;
}

TEST(ProfileFormat, TimelineReplaysIntervalsExactly) {
  const Profile p = handMadeProfile();
  // Peak: weight + activation + temporary = 147 at event 1, in step 0.
  EXPECT_EQ(p.summary.peak_bytes, 147);
  EXPECT_EQ(p.summary.peak_step, 0);
  EXPECT_EQ(p.steps[0].peak_bytes, 147);
  EXPECT_EQ(p.steps[0].bytes_at_end[static_cast<int>(Category::Activation)], 40);
  EXPECT_EQ(p.steps[0].bytes_at_end[static_cast<int>(Category::Temporary)], 0);
  EXPECT_EQ(p.steps[1].bytes_at_end[static_cast<int>(Category::Activation)], 0);
  EXPECT_EQ(p.steps[1].bytes_at_end[static_cast<int>(Category::Weight)], 100);
  const std::vector<int64_t> live = liveBytesPerEvent(p);
  EXPECT_EQ(live, (std::vector<int64_t>{140, 147, 140, 100}));
  // Per category: the weight throughout, the activation over [0, 3), the temporary at event 1.
  const std::vector<CategoryBytes> per_category = categoryBytesPerEvent(p);
  ASSERT_EQ(per_category.size(), 4u);
  auto bytesAt = [&](int event, Category c) { return per_category[event][static_cast<int>(c)]; };
  EXPECT_EQ(bytesAt(0, Category::Weight), 100);
  EXPECT_EQ(bytesAt(0, Category::Activation), 40);
  EXPECT_EQ(bytesAt(0, Category::Temporary), 0);
  EXPECT_EQ(bytesAt(1, Category::Temporary), 7);
  EXPECT_EQ(bytesAt(2, Category::Temporary), 0);
  EXPECT_EQ(bytesAt(3, Category::Activation), 0);
  EXPECT_EQ(bytesAt(3, Category::Weight), 100);
}

// The hand-made profile with every field of every record set away from its
// default, so that a field the writer leaves out or the reader skips comes
// back different.
Profile profileWithEveryFieldSet() {
  Profile p = handMadeProfile();
  ProfileMeta& m = p.meta;
  m.model_path = "models/net.pt";
  m.torch_version = "9.9.9";
  m.run.device = "cuda:1";
  m.run.executor_optimize = true;
  m.time_source = "cupti_kernels";
  m.command = "acprof profile net.pt";
  m.run.input_specs = {"float32[2,3]", "int64[2]"};
  m.run.target_spec = "int64[2]";
  m.run.loss = "cross_entropy";
  m.run.autocast = "bfloat16";
  m.run.optimizer = "adamw";
  m.run.warmup_iters = 2;
  m.run.measured_iters = 7;
  m.run.seed = 7;
  m.run.intra_op_threads = 3;
  m.allocator_bytes_at_start = 512;
  m.other_executor_mode_peak_bytes = 777;
  m.checkpoint_rng_state_bytes = 16;
  m.forward_without_grad_ratio = 0.75;
  m.probe_cost_us = 1.25;
  ForwardNode& n = p.nodes[0];
  n.role = CutRole::Barrier;
  n.barrier_reason = "writes its input";
  n.writes = {1};
  GraphValue& v = p.values[1];
  v.entry = ValueEntry::Clone;
  v.input_form = InputForm::OptionalWithFlag;
  v.tensor = 1;
  v.requires_grad = true;
  v.needs_grad = true;
  v.type = "List[Tensor]";
  TensorRecord& t = p.tensors[1];
  t.shape = {2, 5};
  t.dtype = "bfloat16";
  t.device = "cuda:1";
  t.name = "y";
  t.producer_node = 0;
  t.alloc_step = 0;
  t.free_step = 1;
  t.users = {0};
  t.last_forward_use_step = 0;
  t.first_backward_use_step = 1;
  t.saved_by = {{0, 1}, {-1, -1}};
  t.gradient_of = std::vector<int>{0};
  Step& s = p.steps[1];
  s.node = 0;
  s.op = "ReluBackward0";
  s.scope = "layer";
  s.time_us = 3.25;
  s.allocator_bytes = 640;
  s.allocator_peak_bytes = 680;
  p.summary.allocator_peak_bytes = 700;
  p.summary.reserved_peak_bytes = 2048;
  p.summary.phase_time_us = {0.5, 1.5, 2.5, 3.5, 4.5};
  return p;
}

TEST(ProfileFormat, JsonRoundTripKeepsEveryField) {
  const Profile p = profileWithEveryFieldSet();
  const Profile back = profileFromJson(profileToJson(p), "test");
#define EXPECT_SAME(field) EXPECT_EQ(back.field, p.field) << #field
  // The records profileWithEveryFieldSet fills: each field away from its
  // default (ids and indices excepted where 0 is the record's own), so that a
  // dropped field cannot come back equal by chance.
  const Profile plain;
  const ForwardNode plain_node;
  const GraphValue plain_value;
  const TensorRecord plain_tensor;
  const Step plain_step;
#define EXPECT_SET(field, plain_field) EXPECT_NE(p.field, plain_field) << #field " is left at its default"
  EXPECT_SET(meta.model_path, plain.meta.model_path);
  EXPECT_SET(meta.model_sha256, plain.meta.model_sha256);
  EXPECT_SET(meta.torch_version, plain.meta.torch_version);
  EXPECT_SET(meta.run.device, plain.meta.run.device);
  EXPECT_SET(meta.run.executor_optimize, plain.meta.run.executor_optimize);
  EXPECT_SET(meta.time_source, plain.meta.time_source);
  EXPECT_SET(meta.command, plain.meta.command);
  EXPECT_SET(meta.run.input_specs, plain.meta.run.input_specs);
  EXPECT_SET(meta.run.target_spec, plain.meta.run.target_spec);
  EXPECT_SET(meta.run.loss, plain.meta.run.loss);
  EXPECT_SET(meta.run.autocast, plain.meta.run.autocast);
  EXPECT_SET(meta.run.optimizer, plain.meta.run.optimizer);
  EXPECT_SET(meta.run.warmup_iters, plain.meta.run.warmup_iters);
  EXPECT_SET(meta.run.measured_iters, plain.meta.run.measured_iters);
  EXPECT_SET(meta.run.seed, plain.meta.run.seed);
  EXPECT_SET(meta.run.intra_op_threads, plain.meta.run.intra_op_threads);
  EXPECT_SET(meta.allocator_bytes_at_start, plain.meta.allocator_bytes_at_start);
  EXPECT_SET(meta.other_executor_mode_peak_bytes, plain.meta.other_executor_mode_peak_bytes);
  EXPECT_SET(meta.checkpoint_rng_state_bytes, plain.meta.checkpoint_rng_state_bytes);
  EXPECT_SET(meta.forward_without_grad_ratio, plain.meta.forward_without_grad_ratio);
  EXPECT_SET(meta.probe_cost_us, plain.meta.probe_cost_us);
  EXPECT_SET(event_count, plain.event_count);
  EXPECT_SET(graph_outputs, plain.graph_outputs);
  EXPECT_SET(summary.peak_bytes, plain.summary.peak_bytes);
  EXPECT_SET(summary.peak_step, plain.summary.peak_step);
  EXPECT_SET(summary.peak_breakdown, plain.summary.peak_breakdown);
  EXPECT_SET(summary.allocator_peak_bytes, plain.summary.allocator_peak_bytes);
  EXPECT_SET(summary.reserved_peak_bytes, plain.summary.reserved_peak_bytes);
  EXPECT_SET(summary.phase_time_us, plain.summary.phase_time_us);
  for (auto field : {&ForwardNode::kind, &ForwardNode::scope, &ForwardNode::barrier_reason})
    EXPECT_NE(p.nodes[0].*field, plain_node.*field);
  for (auto field : {&ForwardNode::inputs, &ForwardNode::outputs}) EXPECT_NE(p.nodes[0].*field, plain_node.*field);
  for (auto field : {&ForwardNode::reads, &ForwardNode::writes, &ForwardNode::backward_steps})
    EXPECT_NE(p.nodes[0].*field, plain_node.*field);
  EXPECT_NE(p.nodes[0].role, plain_node.role);
  EXPECT_NE(p.nodes[0].forward_step, plain_node.forward_step);
  EXPECT_NE(p.nodes[0].forward_time_us, plain_node.forward_time_us);
  EXPECT_NE(p.values[1].id, plain_value.id);
  EXPECT_NE(p.values[1].name, plain_value.name);
  EXPECT_NE(p.values[1].producer_node, plain_value.producer_node);
  EXPECT_NE(p.values[1].type, plain_value.type);
  EXPECT_NE(p.values[1].entry, plain_value.entry);
  EXPECT_NE(p.values[1].input_form, plain_value.input_form);
  EXPECT_NE(p.values[1].tensor, plain_value.tensor);
  EXPECT_NE(p.values[1].can_leave, plain_value.can_leave);
  EXPECT_NE(p.values[1].is_tensor, plain_value.is_tensor);
  EXPECT_NE(p.values[1].requires_grad, plain_value.requires_grad);
  EXPECT_NE(p.values[1].needs_grad, plain_value.needs_grad);
  EXPECT_NE(p.values[1].bytes, plain_value.bytes);
  const TensorRecord& t = p.tensors[1];
  EXPECT_NE(t.id, plain_tensor.id);
  EXPECT_NE(t.bytes, plain_tensor.bytes);
  EXPECT_NE(t.shape, plain_tensor.shape);
  for (auto field : {&TensorRecord::dtype, &TensorRecord::device, &TensorRecord::name})
    EXPECT_NE(t.*field, plain_tensor.*field);
  EXPECT_NE(t.category, plain_tensor.category);
  for (auto field : {&TensorRecord::producer_node, &TensorRecord::alloc_event, &TensorRecord::free_event,
                     &TensorRecord::alloc_step, &TensorRecord::free_step, &TensorRecord::last_forward_use_step,
                     &TensorRecord::first_backward_use_step})
    EXPECT_NE(t.*field, plain_tensor.*field);
  EXPECT_NE(t.users, plain_tensor.users);
  EXPECT_NE(t.saved_by, plain_tensor.saved_by);
  EXPECT_NE(t.gradient_of, plain_tensor.gradient_of);
  const Step& s = p.steps[1];
  EXPECT_NE(s.index, plain_step.index);
  EXPECT_NE(s.phase, plain_step.phase);
  EXPECT_NE(s.node, plain_step.node);
  EXPECT_NE(s.op, plain_step.op);
  EXPECT_NE(s.scope, plain_step.scope);
  EXPECT_NE(s.first_event, plain_step.first_event);
  EXPECT_NE(s.time_us, plain_step.time_us);
  EXPECT_NE(s.allocator_bytes, plain_step.allocator_bytes);
  EXPECT_NE(s.allocator_peak_bytes, plain_step.allocator_peak_bytes);
  EXPECT_NE(s.bytes_at_end, plain_step.bytes_at_end);
  EXPECT_NE(s.peak_bytes, plain_step.peak_bytes);
#undef EXPECT_SET

  ASSERT_EQ(back.nodes.size(), p.nodes.size());
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    EXPECT_SAME(nodes[i].id);
    EXPECT_SAME(nodes[i].kind);
    EXPECT_SAME(nodes[i].scope);
    EXPECT_SAME(nodes[i].inputs);
    EXPECT_SAME(nodes[i].outputs);
    EXPECT_SAME(nodes[i].role);
    EXPECT_SAME(nodes[i].barrier_reason);
    EXPECT_SAME(nodes[i].reads);
    EXPECT_SAME(nodes[i].writes);
    EXPECT_SAME(nodes[i].forward_step);
    EXPECT_SAME(nodes[i].forward_time_us);
    EXPECT_SAME(nodes[i].backward_steps);
  }
  ASSERT_EQ(back.values.size(), p.values.size());
  for (size_t i = 0; i < p.values.size(); ++i) {
    EXPECT_SAME(values[i].id);
    EXPECT_SAME(values[i].name);
    EXPECT_SAME(values[i].producer_node);
    EXPECT_SAME(values[i].type);
    EXPECT_SAME(values[i].entry);
    EXPECT_SAME(values[i].input_form);
    EXPECT_SAME(values[i].tensor);
    EXPECT_SAME(values[i].can_leave);
    EXPECT_SAME(values[i].is_tensor);
    EXPECT_SAME(values[i].requires_grad);
    EXPECT_SAME(values[i].needs_grad);
    EXPECT_SAME(values[i].bytes);
  }
  ASSERT_EQ(back.tensors.size(), p.tensors.size());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    EXPECT_SAME(tensors[i].id);
    EXPECT_SAME(tensors[i].bytes);
    EXPECT_SAME(tensors[i].shape);
    EXPECT_SAME(tensors[i].dtype);
    EXPECT_SAME(tensors[i].device);
    EXPECT_SAME(tensors[i].category);
    EXPECT_SAME(tensors[i].name);
    EXPECT_SAME(tensors[i].producer_node);
    EXPECT_SAME(tensors[i].alloc_event);
    EXPECT_SAME(tensors[i].free_event);
    EXPECT_SAME(tensors[i].alloc_step);
    EXPECT_SAME(tensors[i].free_step);
    EXPECT_SAME(tensors[i].users);
    EXPECT_SAME(tensors[i].last_forward_use_step);
    EXPECT_SAME(tensors[i].first_backward_use_step);
    EXPECT_SAME(tensors[i].saved_by);
    EXPECT_SAME(tensors[i].gradient_of);
  }
  ASSERT_EQ(back.steps.size(), p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    EXPECT_SAME(steps[i].index);
    EXPECT_SAME(steps[i].phase);
    EXPECT_SAME(steps[i].node);
    EXPECT_SAME(steps[i].op);
    EXPECT_SAME(steps[i].scope);
    EXPECT_SAME(steps[i].first_event);
    EXPECT_SAME(steps[i].time_us);
    EXPECT_SAME(steps[i].allocator_bytes);
    EXPECT_SAME(steps[i].allocator_peak_bytes);
    EXPECT_SAME(steps[i].bytes_at_end);
    EXPECT_SAME(steps[i].peak_bytes);
  }
  EXPECT_SAME(meta.model_path);
  EXPECT_SAME(meta.model_sha256);
  EXPECT_SAME(meta.torch_version);
  EXPECT_SAME(meta.time_source);
  EXPECT_SAME(meta.command);
  EXPECT_SAME(meta.run.device);
  EXPECT_SAME(meta.run.executor_optimize);
  EXPECT_SAME(meta.run.input_specs);
  EXPECT_SAME(meta.run.target_spec);
  EXPECT_SAME(meta.run.loss);
  EXPECT_SAME(meta.run.autocast);
  EXPECT_SAME(meta.run.optimizer);
  EXPECT_SAME(meta.run.warmup_iters);
  EXPECT_SAME(meta.run.measured_iters);
  EXPECT_SAME(meta.run.seed);
  EXPECT_SAME(meta.run.intra_op_threads);
  EXPECT_SAME(meta.allocator_bytes_at_start);
  EXPECT_SAME(meta.other_executor_mode_peak_bytes);
  EXPECT_SAME(meta.checkpoint_rng_state_bytes);
  EXPECT_SAME(meta.forward_without_grad_ratio);
  EXPECT_SAME(meta.probe_cost_us);
  EXPECT_SAME(event_count);
  EXPECT_SAME(graph_outputs);
  EXPECT_SAME(summary.peak_bytes);
  EXPECT_SAME(summary.peak_step);
  EXPECT_SAME(summary.peak_breakdown);
  EXPECT_SAME(summary.allocator_peak_bytes);
  EXPECT_SAME(summary.reserved_peak_bytes);
  EXPECT_SAME(summary.phase_time_us);
#undef EXPECT_SAME
}

// Every way a value enters a segment is written by name and read back, the
// list of tensors a module holds ("elements") among them.
TEST(ProfileFormat, EveryValueEntryRoundTrips) {
  for (ValueEntry entry : {ValueEntry::Input, ValueEntry::Clone, ValueEntry::Constant, ValueEntry::Blocked,
                           ValueEntry::Elements}) {
    Profile p = handMadeProfile();
    p.values[1].entry = entry;
    EXPECT_EQ(profileFromJson(profileToJson(p), "entry.json").values[1].entry, entry) << valueEntryName(entry);
  }
  EXPECT_STREQ(valueEntryName(ValueEntry::Elements), "elements");
}

// Every form a checkpoint input takes is written by name and read back, and
// each keeps the bytes the rewriter's conversion of it allocates.
TEST(ProfileFormat, EveryInputFormRoundTripsWithTheBytesItKeeps) {
  const std::pair<InputForm, int64_t> forms[] = {{InputForm::Tensor, 0},
                                                 {InputForm::HeldOptional, 0},
                                                 {InputForm::Number, 8},
                                                 {InputForm::Bool, 1},
                                                 {InputForm::OptionalWithFlag, 1}};
  for (const auto& [form, bytes] : forms) {
    Profile p = handMadeProfile();
    p.values[1].input_form = form;
    EXPECT_EQ(profileFromJson(profileToJson(p), "form.json").values[1].input_form, form) << inputFormName(form);
    EXPECT_EQ(inputFormExtraBytes(form), bytes) << inputFormName(form);
  }
  EXPECT_STREQ(inputFormName(InputForm::OptionalWithFlag), "optional_with_flag");
}

// A value names a storage of the profile or none: any other id is damage.
TEST(ProfileFormat, AValueNamingATensorThatIsNotThereIsRefused) {
  Profile p = handMadeProfile();
  nlohmann::json j = nlohmann::json::parse(profileToJson(p));
  j["values"][1]["tensor"] = static_cast<int>(p.tensors.size());
  EXPECT_THROW(profileFromJson(j.dump(), "dangling.json"), FormatError);
  j["values"][1]["tensor"] = -1;
  EXPECT_NO_THROW(profileFromJson(j.dump(), "none.json"));
}

// Reserved bytes are optional (the CPU allocator reports none): a profile
// without them writes no field, and files written before the field existed,
// under the same schema version, still read, without it.
TEST(ProfileFormat, ReservedPeakIsOptionalAndOlderFilesStillRead) {
  const Profile p = handMadeProfile();
  ASSERT_FALSE(p.summary.reserved_peak_bytes.has_value());
  const std::string json = profileToJson(p);
  EXPECT_EQ(json.find("reserved_peak_bytes"), std::string::npos) << "an absent figure is written";
  EXPECT_FALSE(profileFromJson(json, "old.json").summary.reserved_peak_bytes.has_value());

  Profile with_reserved = handMadeProfile();
  with_reserved.summary.reserved_peak_bytes = 4096;
  EXPECT_EQ(profileFromJson(profileToJson(with_reserved), "new.json").summary.reserved_peak_bytes,
            std::optional<int64_t>(4096));
  with_reserved.summary.reserved_peak_bytes = -1;
  EXPECT_THROW(profileFromJson(profileToJson(with_reserved), "damaged.json"), FormatError);
}

// What the run observed of a value's need for grad is optional: a profile
// written before it was recorded reads the graph's answer in its place.
TEST(ProfileFormat, NeedsGradIsOptionalAndOlderFilesReadTheGraphsAnswer) {
  Profile p = handMadeProfile();
  p.values[1].requires_grad = true;
  p.values[1].needs_grad = false;
  EXPECT_FALSE(profileFromJson(profileToJson(p), "new.json").values[1].needs_grad);

  nlohmann::json older = nlohmann::json::parse(profileToJson(p));
  for (nlohmann::json& value : older["values"]) value.erase("needs_grad");
  const Profile back = profileFromJson(older.dump(), "old.json");
  for (size_t i = 0; i < back.values.size(); ++i) EXPECT_EQ(back.values[i].needs_grad, back.values[i].requires_grad);
  EXPECT_TRUE(back.values[1].needs_grad);
}

// Saved-tensor facts are optional: a profile written before they were
// recorded reads with none (the planner then keeps its older, safe rule),
// while a recorded empty list (nothing saved the tensor) stays distinct.
TEST(ProfileFormat, SavedByIsOptionalAndEmptyIsNotAbsent) {
  const Profile p = handMadeProfile();
  ASSERT_FALSE(p.tensors[1].saved_by.has_value());
  const std::string json = profileToJson(p);
  EXPECT_EQ(json.find("saved_by"), std::string::npos) << "absent facts are written";
  EXPECT_FALSE(profileFromJson(json, "old.json").tensors[1].saved_by.has_value());

  Profile recorded = handMadeProfile();
  recorded.tensors[1].saved_by.emplace();
  const Profile back = profileFromJson(profileToJson(recorded), "new.json");
  ASSERT_TRUE(back.tensors[1].saved_by.has_value());
  EXPECT_TRUE(back.tensors[1].saved_by->empty());

  recorded.tensors[1].saved_by = {{7, 1}};  // the hand-made profile has one node
  try {
    profileFromJson(profileToJson(recorded), "edited.json");
    ADD_FAILURE() << "accepted a save by a node the profile does not have";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 1 is saved by node 7"), std::string::npos) << e.what();
  }
}

// Gradient identity is optional likewise: absent in a profile written before
// it was recorded, empty where a tensor is no value's gradient, and a value
// the profile does not have is refused.
TEST(ProfileFormat, GradientOfIsOptionalAndNamesValuesTheProfileHas) {
  const Profile p = handMadeProfile();
  ASSERT_FALSE(p.tensors[1].gradient_of.has_value());
  EXPECT_EQ(profileToJson(p).find("gradient_of"), std::string::npos) << "absent facts are written";

  Profile recorded = handMadeProfile();
  recorded.tensors[1].gradient_of.emplace();
  const Profile back = profileFromJson(profileToJson(recorded), "new.json");
  ASSERT_TRUE(back.tensors[1].gradient_of.has_value());
  EXPECT_TRUE(back.tensors[1].gradient_of->empty());

  recorded.tensors[1].gradient_of = std::vector<int>{static_cast<int>(recorded.values.size())};
  try {
    profileFromJson(profileToJson(recorded), "edited.json");
    ADD_FAILURE() << "accepted the gradient of a value the profile does not have";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("is the gradient of value"), std::string::npos) << e.what();
  }
}

// The run's seed (inputs, targets, dropout masks) is recorded so that the
// rewrite verifies the very step that was profiled; profiles written before it
// was recorded ran with seed 0, and read so.
TEST(ProfileFormat, SeedIsRecordedAndOlderFilesReadAsSeedZero) {
  Profile p = handMadeProfile();
  p.meta.run.seed = 1234;
  const std::string json = profileToJson(p);
  EXPECT_EQ(profileFromJson(json, "new.json").meta.run.seed, 1234u);
  std::string old = json;
  const std::string field = "\"seed\": 1234";
  ASSERT_NE(old.find(field), std::string::npos) << old.substr(0, 400);
  old.replace(old.find(field), field.size(), "\"seed_was_not_here\": 0");
  EXPECT_EQ(profileFromJson(old, "old.json").meta.run.seed, 0u);
}

// The communication category came after the schema's version: a file written
// before it has breakdowns without it, which read as no bytes there; any older
// category missing is still damage.
TEST(ProfileFormat, BreakdownsWithoutTheCommunicationCategoryReadAsNoneThere) {
  const std::string json = profileToJson(handMadeProfile());
  nlohmann::json old = nlohmann::json::parse(json);
  for (auto& step : old["steps"]) step["bytes_at_end"].erase("communication");
  old["summary"]["peak_breakdown"].erase("communication");
  EXPECT_EQ(profileToJson(profileFromJson(old.dump(), "old.json")), json);
  nlohmann::json damaged = nlohmann::json::parse(json);
  damaged["summary"]["peak_breakdown"].erase("activation");
  EXPECT_THROW(profileFromJson(damaged.dump(), "damaged.json"), FormatError);
}

// Profiles written before ForwardNode::backward_time_us was dropped (a copy of
// the backward steps' times that nothing read) carry it under the same schema
// version: they still read, to the same profile.
TEST(ProfileFormat, ReadsProfilesThatStillCarryANodesBackwardTime) {
  const std::string current = profileToJson(handMadeProfile());
  std::string old = current;
  const std::string key = "\"backward_steps\"";
  ASSERT_NE(old.find(key), std::string::npos);
  old.insert(old.find(key), "\"backward_time_us\": 2.0, ");
  EXPECT_EQ(profileToJson(profileFromJson(old, "old.json")), current);
}

TEST(ProfileFormat, RejectsOtherSchemaVersionWithTheFix) {
  std::string json = profileToJson(handMadeProfile());
  const std::string key = "\"schema_version\": " + std::to_string(kProfileSchemaVersion);
  json.replace(json.find(key), key.size(), "\"schema_version\": 99");
  try {
    profileFromJson(json, "old.json");
    FAIL() << "accepted schema 99";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("re-run 'acprof profile'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("upgrade acprof"), std::string::npos) << "99 is newer: " << e.what();
  }
}

TEST(ProfileFormat, RejectsDamagedJsonAndDanglingIndices) {
  EXPECT_THROW(profileFromJson("{\"format\": \"acprof-profile\", ", "cut.json"), FormatError);
  std::string json = profileToJson(handMadeProfile());
  const std::string key = "\"alloc_event\": -1";
  json.replace(json.find(key), key.size(), "\"alloc_event\": 12");
  EXPECT_THROW(profileFromJson(json, "dangling.json"), FormatError);
  std::string reads = profileToJson(handMadeProfile());
  const std::string read_key = "\"reads\": [";
  ASSERT_NE(reads.find(read_key), std::string::npos) << reads;
  const size_t first_read = reads.find('0', reads.find(read_key));
  reads.replace(first_read, 1, "7");
  EXPECT_THROW(profileFromJson(reads, "dangling_read.json"), FormatError);
}

// What fuzz/profile_json_fuzzer.cpp found the reader letting through, each a
// one-line FormatError now: a number no double holds (nlohmann's out_of_range
// escaped as an internal error), numbers that do not fit their field (cast
// with undefined behaviour, or silently truncated), a tensor's step past the
// last step (the planner indexes steps by it), and byte counts whose sums
// would overflow int64.
TEST(ProfileFormat, RejectsNumbersThatDoNotFitAndStepsPastTheLast) {
  const std::string good = profileToJson(handMadeProfile());
  struct Edit {
    std::string from, to, words;
  };
  const std::vector<Edit> edits = {
      {"\"event_count\": 4", "\"event_count\": 1e400", "not valid JSON (a number out of range)"},
      {"\"event_count\": 4", "\"event_count\": 1e300", "field 'event_count' has the wrong type or is out of range"},
      {"\"event_count\": 4", "\"event_count\": 4.5", "field 'event_count' has the wrong type"},
      {"\"event_count\": 4", "\"event_count\": 4294967300", "field 'event_count' has the wrong type"},
      {"\"alloc_step\": -1", "\"alloc_step\": 2", "tensor 0 has allocation step 2"},
      {"\"bytes\": 100", "\"bytes\": 9000000000000000000", "tensor 0 has 9000000000000000000 bytes"},
      {"\"event_count\": 4", "\"event_count\": 7", "7 events for 3 tensors"},
      // A name from the file with a newline in it: quoted as an escape, with the file, the field and the fix.
      {"\"phase\": \"forward\"", "\"phase\": \"for\\nward\"",
       "edited.json: field 'phase': unknown phase 'for\\nward'; re-run 'acprof profile'"},
  };
  for (const Edit& edit : edits) {
    std::string json = good;
    ASSERT_NE(json.find(edit.from), std::string::npos) << edit.from;
    json.replace(json.find(edit.from), edit.from.size(), edit.to);
    try {
      profileFromJson(json, "edited.json");
      ADD_FAILURE() << "accepted " << edit.to;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(edit.words), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// Every step index the planner and the CLI look up without checking: each
// pointing one past the last step (the hand-made profile has two) is refused,
// naming the field, while -1 (none) stays valid where the format allows it.
TEST(ProfileFormat, RejectsStepIndicesPastTheLastStep) {
  struct Damage {
    std::function<void(Profile&)> apply;
    std::string words;
  };
  const std::vector<Damage> damages = {
      {[](Profile& p) { p.tensors[1].free_step = 2; }, "tensor 1 has free step 2"},
      {[](Profile& p) { p.tensors[1].alloc_step = 2; }, "tensor 1 has allocation step 2"},
      {[](Profile& p) { p.tensors[1].last_forward_use_step = 2; }, "tensor 1 has last forward use at step 2"},
      {[](Profile& p) { p.tensors[1].first_backward_use_step = 2; }, "tensor 1 has first backward use at step 2"},
      {[](Profile& p) { p.tensors[2].free_step = -2; }, "tensor 2 has free step -2"},
      {[](Profile& p) { p.tensors[1].saved_by = {{0, 2}}; }, "tensor 1 has release by a saving node at step 2"},
      {[](Profile& p) { p.summary.peak_step = 2; }, "the summary has peak step 2"},
  };
  ASSERT_EQ(handMadeProfile().steps.size(), 2u);
  EXPECT_NO_THROW(profileFromJson(profileToJson(handMadeProfile()), "good.json"));
  for (const Damage& damage : damages) {
    Profile p = handMadeProfile();
    damage.apply(p);
    try {
      profileFromJson(profileToJson(p), "edited.json");
      ADD_FAILURE() << "accepted a profile with " << damage.words;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(damage.words), std::string::npos) << e.what();
    }
  }
}

TEST(ProfileFormat, AtomicWriteLeavesNoFileWhenDirectoryIsMissing) {
  const std::string path = "/nonexistent-dir-acprof/profile.json";
  EXPECT_THROW(writeProfileFile(handMadeProfile(), path), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A pipe given as the output is written through, not replaced by a regular file.
TEST(ProfileFormat, WritesThroughAPipeInsteadOfReplacingIt) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                        ("acprof_format_fifo_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "out.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo);
    received.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  writeProfileFile(handMadeProfile(), fifo);
  reader.join();
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_EQ(received, profileToJson(handMadeProfile()));
  std::filesystem::remove_all(dir);
}

// A device that fails every write (a node of /dev/full's kind, made in a
// temporary directory) is an error, not "wrote", and stays a device.
TEST(ProfileFormat, AFailedWriteThroughIsAnErrorAndTheDeviceStays) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                        ("acprof_format_full_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string full = (dir / "full").string();
  if (::mknod(full.c_str(), S_IFCHR | 0600, makedev(1, 7)) != 0)
    GTEST_SKIP() << "cannot make a device node here (needs root): " << std::strerror(errno);
  EXPECT_THROW(writeProfileFile(handMadeProfile(), full), Error);
  EXPECT_TRUE(std::filesystem::is_character_file(full));
  std::filesystem::remove_all(dir);
}

TEST(ProfileFormat, FormatBytesUsesBinaryUnits) {
  EXPECT_EQ(formatBytes(12), "12 B");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(int64_t{3} << 30), "3.00 GiB");
}

// One bit per category, so a category counted or left out wrongly shows in the sum.
TEST(ProfileFormat, UnremovableBytesAreWeightsGradientsOptimizerStateInputsAndCommunicationBuffers) {
  CategoryBytes bytes{};
  for (int c = 0; c < kCategoryCount; ++c) bytes[c] = int64_t{1} << c;
  const int64_t expected = bytes[static_cast<int>(Category::Weight)] + bytes[static_cast<int>(Category::Gradient)] +
                           bytes[static_cast<int>(Category::OptimizerState)] + bytes[static_cast<int>(Category::Input)] +
                           bytes[static_cast<int>(Category::Communication)];
  EXPECT_EQ(unremovableBytes(bytes), expected);
  EXPECT_EQ(totalBytes(bytes) - unremovableBytes(bytes),
            bytes[static_cast<int>(Category::Activation)] + bytes[static_cast<int>(Category::Temporary)] +
                bytes[static_cast<int>(Category::Output)]);
}

}  // namespace
}  // namespace acprof
