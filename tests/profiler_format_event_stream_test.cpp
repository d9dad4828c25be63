// The profile derived from a hand-written event stream: what deriveProfile
// makes of allocations, frees, steps, observed values and saves, torch-free.
#include "acprof/event_stream.h"

#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace acprof {
namespace {

// Fake storage addresses: the derivation only compares them.
void* storage(int n) { return reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 * n)); }

int64_t categoryOf(const CategoryBytes& bytes, Category category) { return bytes[static_cast<int>(category)]; }

// h = linear(x, W); y = relu(h); loss of y; backward: relu's, then linear's.
// relu saves h for backward; linear's backward frees h and makes W's gradient.
//
//   step 0  forward node 0 (linear)   e0 +128 h
//   step 1  forward node 1 (relu)     e1 +128 y            relu saves h (save 7)
//   step 2  loss                      e2 +4   loss
//   step 3  ReluBackward0   (seq 1)   e3 +128 dh
//   step 4  AddmmBackward0  (seq 0)   e4 +400 dW, e5 -128 dh, relu's save released, e6 -128 h
class TwoNodeStream : public testing::Test {
 protected:
  void SetUp() override {
    profile.meta.run.device = "cpu";
    profile.nodes.resize(2);
    profile.nodes[0].id = 0;
    profile.nodes[0].kind = "aten::linear";
    profile.nodes[0].scope = "fc";
    profile.nodes[0].outputs = {"h"};
    profile.nodes[0].reads = {1};
    profile.nodes[1].id = 1;
    profile.nodes[1].kind = "aten::relu";
    profile.nodes[1].outputs = {"y"};
    profile.nodes[1].reads = {2};
    const char* names[] = {"self", "x", "h", "y"};
    for (int v = 0; v < 4; ++v) {
      GraphValue value;
      value.id = v;
      value.name = names[v];
      value.producer_node = v < 2 ? -1 : v - 2;
      value.is_tensor = v > 0;
      profile.values.push_back(value);
    }
    profile.graph_outputs = {3};

    IterationRecord& r = iteration.record;
    auto step = [&](Phase phase, int node, const char* op, int64_t sequence, int first_event) {
      StepTiming s;
      s.phase = phase;
      s.node = node;
      s.op = op;
      (phase == Phase::Backward ? s.autograd_sequence_nr : s.sequence_at_start) = sequence;
      s.first_event = first_event;
      r.steps.push_back(s);
    };
    step(Phase::Forward, 0, "", 0, 0);
    step(Phase::Forward, 1, "", 1, 1);
    step(Phase::Loss, -1, "loss", 2, 2);
    step(Phase::Backward, -1, "ReluBackward0", 1, 3);
    step(Phase::Backward, -1, "AddmmBackward0", 0, 4);
    int64_t total = 464;  // W and x
    auto event = [&](int ptr, int64_t delta, int at_step) {
      total += delta;
      r.events.push_back(AllocationEvent{storage(ptr), delta, total, 0, at_step});
    };
    event(3, 128, 0);   // h
    event(4, 128, 1);   // y
    event(5, 4, 2);     // loss
    event(6, 128, 3);   // dh
    event(7, 400, 4);   // dW
    event(6, -128, 4);  // dh
    event(3, -128, 4);  // h
    ObservedValue h;
    h.node = 0;
    h.storage_ptr = storage(3);
    h.shape = {4, 8};
    h.dtype = "float32";
    h.bytes = 128;
    h.event_index = 1;
    ObservedValue y = h;
    y.node = 1;
    y.storage_ptr = storage(4);
    y.event_index = 2;
    r.observed = {h, y};
    r.saved_tensors = {SavedTensorEvent{7, storage(3), 1, 2}, SavedTensorEvent{7, nullptr, 4, 6}};
    iteration.step_time_us = {10, 5, 1, 4, 20};
    iteration.statics = {StaticStorage{storage(1), 400, Category::Weight, "fc.weight", {10, 10}, "float32"},
                         StaticStorage{storage(2), 64, Category::Input, "input0", {4, 4}, "float32"}};
    iteration.gradient_ptrs = {storage(7)};
    iteration.output_ptrs = {storage(4), storage(5)};
    iteration.input_ptrs = {storage(2)};
    iteration.input_bytes = {64};
  }

  Profile profile;
  MeasuredIteration iteration;
};

TEST_F(TwoNodeStream, EachStorageGetsItsLifetimeCategoryAndName) {
  deriveProfile(profile, iteration);
  ASSERT_EQ(profile.tensors.size(), 7u);  // W, x, then the five allocations in event order
  const TensorRecord& h = profile.tensors[2];
  EXPECT_EQ(h.name, "h");
  EXPECT_EQ(h.shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(h.alloc_step, 0);
  EXPECT_EQ(h.free_step, 4);
  EXPECT_EQ(h.producer_node, 0);
  EXPECT_EQ(h.category, Category::Activation);  // made in forward, freed in backward
  EXPECT_EQ(profile.tensors[3].category, Category::Output);    // y, the model's output
  EXPECT_EQ(profile.tensors[3].free_event, profile.event_count);  // alive after the iteration
  EXPECT_EQ(profile.tensors[4].category, Category::Output);    // the loss
  EXPECT_EQ(profile.tensors[5].category, Category::Temporary);  // dh: made and freed in backward
  EXPECT_EQ(profile.tensors[6].category, Category::Gradient);   // dW
  EXPECT_EQ(profile.tensors[0].category, Category::Weight);
  EXPECT_EQ(profile.tensors[0].alloc_event, -1);
}

TEST_F(TwoNodeStream, ReadersFirstAndLastUseAndSavesComeFromTheGraphAndTheStream) {
  deriveProfile(profile, iteration);
  const TensorRecord& x = profile.tensors[1];
  const TensorRecord& h = profile.tensors[2];
  EXPECT_EQ(x.users, std::vector<int>{0});  // bound to graph value x through the forward argument
  EXPECT_EQ(h.users, std::vector<int>{1});
  EXPECT_EQ(h.last_forward_use_step, 1);
  EXPECT_EQ(h.first_backward_use_step, 3);  // relu's backward (its reader's) comes before linear's
  ASSERT_TRUE(h.saved_by.has_value());
  ASSERT_EQ(h.saved_by->size(), 1u);
  EXPECT_EQ((*h.saved_by)[0].node, 1);
  EXPECT_EQ((*h.saved_by)[0].release_step, 4);
  EXPECT_TRUE(profile.tensors[3].saved_by->empty());  // recorded: nothing saved y
  EXPECT_EQ(profile.values[2].bytes, 128);  // what a copy of h takes, as observed
  EXPECT_EQ(profile.values[1].bytes, 64);   // the forward argument's size
}

// Whose gradient a storage is, from autograd's reports. Linear's autograd node
// made h (its output 0), relu's made y. A report on an edge that leads to no
// observed value (an autograd node inside one graph node) names nothing. Every
// report that leads to a value names it: the storage made as y's gradient and
// then handed on unchanged as h's (an add's backward passes what it received
// to both inputs, and the engine sums into it there) holds both, so a rule
// looking for the buffer of h's gradient finds it. dW goes to the weight's
// accumulator, which no observed value reads here: recorded, none.
TEST_F(TwoNodeStream, AGradientIsNamedByEveryReportThatLeadsToAValue) {
  const int a = 0, b = 0, c = 0, inner = 0;  // addresses standing for autograd nodes
  const GradientTarget linear_output{&a, 0, 0}, relu_output{&b, 1, 0}, accumulator{&c, ~0ull, 0},
      inside_linear{&inner, 7, 0};
  IterationRecord& r = iteration.record;
  r.observed[0].gradient_target = linear_output;
  r.observed[1].gradient_target = relu_output;
  r.gradients_recorded = true;
  r.gradients = {GradientReport{storage(6), inside_linear, 4},  // an edge to no value: nothing
                 GradientReport{storage(6), relu_output, 4},    // made as y's gradient
                 GradientReport{storage(6), linear_output, 4},  // handed on unchanged as h's
                 GradientReport{storage(6), relu_output, 4},    // received again as y's: named once
                 GradientReport{storage(7), accumulator, 5}};   // dW
  deriveProfile(profile, iteration);
  ASSERT_TRUE(profile.tensors[5].gradient_of.has_value());
  EXPECT_EQ(*profile.tensors[5].gradient_of, (std::vector<int>{3, 2}));  // y's, then h's
  ASSERT_TRUE(profile.tensors[6].gradient_of.has_value());
  EXPECT_TRUE(profile.tensors[6].gradient_of->empty());  // dW: no observed value's
  EXPECT_TRUE(profile.tensors[2].gradient_of->empty());  // h itself: made by forward, no report
}

TEST_F(TwoNodeStream, WithoutGradientReportsTheProfileDoesNotSayWhoseGradientAStorageIs) {
  deriveProfile(profile, iteration);
  for (const TensorRecord& t : profile.tensors) EXPECT_FALSE(t.gradient_of.has_value()) << t.id;
}

// The graph can only say a value may need grad; the run saw whether it did,
// right after its node ran and after each later write of its storage. Where a
// later write left no result on that storage that the run saw, the graph's
// answer stands.
TEST_F(TwoNodeStream, WhetherAValueNeededGradIsWhatTheRunSawAfterItsNodeAndItsLaterWrites) {
  for (GraphValue& value : profile.values) value.requires_grad = value.is_tensor && value.producer_node >= 0;
  iteration.record.observed[0].requires_grad = false;  // h, as from a linear of inputs that need no grad
  iteration.record.observed[1].requires_grad = true;   // y
  const Profile graph_only = profile;
  deriveProfile(profile, iteration);
  EXPECT_FALSE(profile.values[2].needs_grad);
  EXPECT_TRUE(profile.values[2].requires_grad);  // the graph's answer stays beside it
  EXPECT_TRUE(profile.values[3].needs_grad);
  EXPECT_FALSE(profile.values[1].needs_grad);  // x: a forward argument, not observed: the graph's answer

  Profile written_later = graph_only;
  written_later.nodes[1].writes = {2};  // relu_ on h, after h was seen
  deriveProfile(written_later, iteration);
  EXPECT_TRUE(written_later.values[2].needs_grad);

  Profile written_by_maker = graph_only;
  written_by_maker.nodes[0].writes = {2};  // h written by the node that made it, before it was seen
  deriveProfile(written_by_maker, iteration);
  EXPECT_FALSE(written_by_maker.values[2].needs_grad);

  // A later write whose result the run saw on h's own storage (relu_ returns
  // h) says whether the write gave h grad: a mask that new_zeros made and
  // slices filled with constants stays without (swin3d's attention mask).
  for (const bool result_needs_grad : {false, true}) {
    Profile written_and_seen = graph_only;
    written_and_seen.nodes[1].writes = {2};
    MeasuredIteration in_place = iteration;
    in_place.record.observed[1].storage_ptr = storage(3);
    in_place.record.observed[1].requires_grad = result_needs_grad;
    deriveProfile(written_and_seen, in_place);
    EXPECT_EQ(written_and_seen.values[2].needs_grad, result_needs_grad);
  }
}

TEST_F(TwoNodeStream, BackwardStepsBelongToTheNodeThatCreatedTheirAutogradNode) {
  deriveProfile(profile, iteration);
  EXPECT_EQ(profile.nodes[0].forward_step, 0);
  EXPECT_EQ(profile.nodes[1].forward_step, 1);
  EXPECT_EQ(profile.nodes[0].backward_steps, std::vector<int>{4});
  EXPECT_EQ(profile.nodes[1].backward_steps, std::vector<int>{3});
  EXPECT_EQ(profile.steps[4].node, 0);
  EXPECT_EQ(profile.steps[4].scope, "fc");  // a backward step takes its forward node's scope
  EXPECT_EQ(profile.steps[0].op, "aten::linear");
  EXPECT_EQ(profile.steps[3].op, "ReluBackward0");
  EXPECT_DOUBLE_EQ(profile.nodes[0].forward_time_us, 10);
}

// The peak is at e4 (dW made while dh and h are alive): W 400 + x 64 + h 128 +
// y 128 + loss 4 + dh 128 + dW 400 = 1252 B, and its categories add up to it,
// as do the allocator's own counters.
TEST_F(TwoNodeStream, PeakAndItsBreakdownAddUpToWhatTheAllocatorSaw) {
  deriveProfile(profile, iteration);
  EXPECT_EQ(profile.summary.peak_bytes, 1252);
  EXPECT_EQ(profile.summary.peak_step, 4);
  const CategoryBytes& b = profile.summary.peak_breakdown;
  EXPECT_EQ(std::accumulate(b.begin(), b.end(), int64_t{0}), profile.summary.peak_bytes);
  EXPECT_EQ(categoryOf(b, Category::Gradient), 400);
  EXPECT_EQ(categoryOf(b, Category::Temporary), 128);
  EXPECT_EQ(categoryOf(b, Category::Activation), 128);
  EXPECT_EQ(profile.summary.allocator_peak_bytes, 1252);  // the counter started at the 464 B of W and x
  EXPECT_EQ(profile.meta.allocator_bytes_at_start, 464);
  EXPECT_DOUBLE_EQ(profile.summary.phase_time_us[static_cast<int>(Phase::Backward)], 24);
}

// On CUDA the caching allocator's counter starts with blocks nobody listed
// (cuBLAS workspaces, what an earlier iteration left cached-and-live): 3000 B
// here beside W and x. One record holds them for the whole iteration, so the
// categories still add up to the allocator's counter at the peak; and the
// reserved peak is the largest reserved total the allocator reported, which
// the CPU allocator never does.
TEST_F(TwoNodeStream, OnCudaBytesLiveBeforeTheIterationAreOneRecordAndTheReservedPeakIsKept) {
  profile.meta.run.device = "cuda:0";
  const int64_t workspace = 3000;
  const int64_t reserved[] = {8192, 8192, 8192, 10240, 12288, 12288, 12288};
  for (size_t e = 0; e < iteration.record.events.size(); ++e) {
    iteration.record.events[e].allocator_total += workspace;
    iteration.record.events[e].allocator_reserved = reserved[e];
  }
  deriveProfile(profile, iteration);
  EXPECT_EQ(profile.meta.allocator_bytes_at_start, 464 + workspace);
  const TensorRecord& before = profile.tensors.back();
  EXPECT_EQ(before.bytes, workspace);
  EXPECT_EQ(before.category, Category::Temporary);
  EXPECT_EQ(before.alloc_event, -1);
  EXPECT_EQ(before.free_event, profile.event_count);
  EXPECT_EQ(profile.summary.peak_bytes, 1252 + workspace);
  EXPECT_EQ(profile.summary.allocator_peak_bytes, profile.summary.peak_bytes);
  const CategoryBytes& b = profile.summary.peak_breakdown;
  EXPECT_EQ(std::accumulate(b.begin(), b.end(), int64_t{0}), profile.summary.peak_bytes);
  ASSERT_TRUE(profile.summary.reserved_peak_bytes.has_value());
  EXPECT_EQ(*profile.summary.reserved_peak_bytes, 12288);
}

TEST_F(TwoNodeStream, OnTheCpuNoRecordStandsForBytesBeforeTheIterationAndNoReservedPeakIsClaimed) {
  deriveProfile(profile, iteration);
  EXPECT_EQ(profile.tensors.size(), 7u);
  EXPECT_FALSE(profile.summary.reserved_peak_bytes.has_value());
}

// A free of a storage the recorder never listed (allocated before the
// iteration by something it does not enumerate) still balances the books.
TEST_F(TwoNodeStream, AFreeOfAnUnlistedStorageIsAStorageFromBeforeTheIteration) {
  iteration.record.events.push_back(AllocationEvent{storage(9), -32, 1092, 0, 4});
  deriveProfile(profile, iteration);
  const TensorRecord& unlisted = profile.tensors.back();
  EXPECT_EQ(unlisted.bytes, 32);
  EXPECT_EQ(unlisted.alloc_event, -1);
  EXPECT_EQ(unlisted.free_step, 4);
}

}  // namespace
}  // namespace acprof
