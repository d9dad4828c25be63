// The simulator against timelines computed by hand from the rules of
// docs/memory-model.md; each test's name begins with the rule it holds. Byte counts are small round numbers so that each
// expected value can be checked in the comment above it.
#include "acprof/simulator.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acprof/error.h"
#include "planner_test_profiles.h"

namespace acprof {
namespace {

using testing::chainProfile;
using testing::ProfileBuilder;

const std::vector<double> kUnitTimes = {1, 1, 1, 1};

// `with` stands `gap` bytes above `without` after events first..last and level with it elsewhere.
void expectGapOnly(const std::vector<int64_t>& with, const std::vector<int64_t>& without, size_t first, size_t last,
                   int64_t gap) {
  ASSERT_EQ(with.size(), without.size());
  for (size_t e = 0; e < with.size(); ++e)
    EXPECT_EQ(with[e] - without[e], e >= first && e <= last ? gap : 0) << "after event " << e;
}

TEST(PlannerSimulator, LeafTimelineOfTheEmptyDecisionReproducesLiveBytesAndStepPeaksExactly) {
  const Profile p = chainProfile(4, 100, kUnitTimes);
  const Simulator simulator(p);
  EXPECT_EQ(simulator.liveBytesPerEvent({}), liveBytesPerEvent(p));
  // Weights 1000; forward adds 100 per event; backward: +g, -a, +g, -g, -a, ...
  EXPECT_EQ(liveBytesPerEvent(p),
            (std::vector<int64_t>{1100, 1200, 1300, 1400, 1500, 1400, 1500, 1400, 1300, 1400, 1300, 1200, 1100, 1000}));
  const SimulationResult none = simulator.simulate({});
  EXPECT_EQ(none.peak_bytes, p.summary.peak_bytes);
  EXPECT_EQ(none.peak_bytes, 1500);
  EXPECT_EQ(none.peak_step, p.summary.peak_step);
  EXPECT_EQ(none.peak_breakdown, p.summary.peak_breakdown);
  ASSERT_EQ(none.timeline.size(), p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    EXPECT_EQ(none.timeline[s].step, static_cast<int>(s));
    EXPECT_FALSE(none.timeline[s].recompute);
    EXPECT_EQ(none.timeline[s].peak_bytes, p.steps[s].peak_bytes) << "step " << s;
  }
  EXPECT_EQ(none.extra_time_us, 0);
}

// Chain of 4, segment [0, 1]: backward steps of nodes 0 and 1 are 8 and 7, so
// the recompute runs before step 7 (event 9) and the segment ends after step 8.
// a0 (read only by node 1) is internal: freed at the end of step 1 (before
// event 2), recomputed before event 9, freed at its original event 13.
// a1 is read by node 2: an output; its original free (event 11, step 7) is
// inside [7, 8], so it goes at the recompute, and its copy lives to the end.
//   events 0..8: 1100 1200 | a0 gone: 1200 1300 1400 1300 1400 1300 1200
//   before event 9: -a1 = 1100; recompute +a0 +a1 = 1300 (its peak)
// g1, the gradient the segment received, is held by its backward until it
// returns (after step 8) instead of going at event 10:
//   events 9..13: +g0 1400, (g1 held) 1400, (a1's old free) 1400, -g0 1300, -a0 1200
TEST(PlannerSimulator, InternalActivationChainSegmentOverFirstTwoNodesLowersPeakByOneActivation) {
  const Profile p = chainProfile(4, 100, {3, 5, 7, 11});
  const Simulator simulator(p);
  EXPECT_EQ(simulator.liveBytesPerEvent({{0, 1}}),
            (std::vector<int64_t>{1100, 1200, 1200, 1300, 1400, 1300, 1400, 1300, 1200, 1400, 1400, 1400, 1300, 1200}));
  const SimulationResult r = simulator.simulate({{0, 1}});
  EXPECT_EQ(r.peak_bytes, 1400);
  EXPECT_EQ(r.peak_step, 5);  // event 4, first to reach 1400, is in node 3's backward step
  EXPECT_FALSE(r.peak_in_recompute);
  EXPECT_DOUBLE_EQ(r.extra_time_us, 3 + 5);
  // Timeline: 9 steps plus the recompute point before step 7, placed before it.
  ASSERT_EQ(r.timeline.size(), p.steps.size() + 1);
  EXPECT_EQ(r.timeline[7].step, 7);
  EXPECT_TRUE(r.timeline[7].recompute);
  EXPECT_EQ(r.timeline[7].peak_bytes, 1300);
  EXPECT_EQ(r.timeline[8].step, 7);
  EXPECT_EQ(r.timeline[8].peak_bytes, 1400);  // start of step 7 is 1300, +g0 = 1400
  // At the peak (event 4): weights 1000, a1 and a2 (activations), a3 (output), g2 (made
  // and freed in backward: temporary); a0 is dropped.
  EXPECT_EQ(r.peak_breakdown[static_cast<int>(Category::Weight)], 1000);
  EXPECT_EQ(r.peak_breakdown[static_cast<int>(Category::Activation)], 200);  // a1, a2 (a0 dropped)
  EXPECT_EQ(r.peak_breakdown[static_cast<int>(Category::Output)], 100);      // a3
  EXPECT_EQ(r.peak_breakdown[static_cast<int>(Category::Temporary)], 100);   // g2
}

// A number or bool that a segment reads from outside enters its checkpoint as
// a 0-dim tensor (InputForm): the checkpoint keeps 8 or 1 bytes more, over
// the same events, than for no such input.
TEST(PlannerSimulator, KeptStateANumberOrBoolThatEntersASegmentIsKeptAsTheTensorItBecomes) {
  const auto withInput = [](std::optional<InputForm> form) {
    Profile p = chainProfile(4, 100, kUnitTimes);
    if (!form) return p;
    GraphValue k;
    k.id = static_cast<int>(p.values.size());
    k.name = "k";
    k.type = *form == InputForm::Bool ? "bool" : "int";
    k.input_form = *form;
    p.values.push_back(k);
    p.nodes[1].inputs.push_back("k");
    p.nodes[1].reads.push_back(k.id);
    return p;
  };
  const std::vector<int64_t> none = Simulator(withInput(std::nullopt)).liveBytesPerEvent({{0, 1}});
  const std::vector<int64_t> number = Simulator(withInput(InputForm::Number)).liveBytesPerEvent({{0, 1}});
  const std::vector<int64_t> flag = Simulator(withInput(InputForm::Bool)).liveBytesPerEvent({{0, 1}});
  ASSERT_EQ(number.size(), none.size());
  ASSERT_EQ(flag.size(), none.size());
  int kept = 0;
  for (size_t e = 0; e < none.size(); ++e) {
    const bool held = number[e] != none[e];
    kept += held;
    EXPECT_EQ(number[e] - none[e], held ? 8 : 0) << "after event " << e;
    EXPECT_EQ(flag[e] - none[e], held ? 1 : 0) << "after event " << e;
  }
  EXPECT_GT(kept, 0);
}

// Segment [0, 2] recomputes a0, a1 and the output a2 before step 6 (event 6)
// while g2, the gradient of a2, is alive - and held until the segment's
// backward returns (after step 8), where the original freed it at event 7:
//   events 0..5: 1100 1200 | -a0 1200 | -a1 1200 1300 1200
//   before event 6: -a2 = 1100; recompute +300 = 1400
//   event 6: +g1 = 1500; e7 (g2 held) 1500; e8 (a2's old free, moved) 1500;
//   e9 +g0 = 1600 -- above the no-recompute peak of 1500.
TEST(PlannerSimulator, LongerChainSegmentGivesBackMoreThanItsSaving) {
  const Profile p = chainProfile(4, 100, kUnitTimes);
  const Simulator simulator(p);
  EXPECT_EQ(simulator.liveBytesPerEvent({{0, 2}}),
            (std::vector<int64_t>{1100, 1200, 1200, 1200, 1300, 1200, 1500, 1500, 1500, 1600, 1500, 1400, 1300, 1200}));
  const SimulationResult r = simulator.simulate({{0, 2}});
  EXPECT_EQ(r.peak_bytes, 1600);
  EXPECT_EQ(r.peak_step, 7);
}

// The whole chain as one segment (the 3-layer measurement): a2 dies at the end
// of step 3, a3 (the output) at the recompute before step 5 (event 4), which
// brings back all four, a3 as a copy alive until the end:
//   events 0..3: 1100 1200 | -a0 1200 | -a1 1200 ; before event 4: -a2 -a3 = 1000,
//   recompute +400 = 1400; event 4 +g2 1500, event 5 (a3's old free) 1500,
//   event 6 +g1 = 1600 > 1500: the segment RAISES the peak by 100 B (6.7 %).
TEST(PlannerSimulator, SegmentOverTheWholeChainRaisesThePeak) {
  const Profile p = chainProfile(4, 100, kUnitTimes);
  const Simulator simulator(p);
  const SimulationResult r = simulator.simulate({{0, 3}});
  EXPECT_EQ(r.peak_bytes, 1600);
  EXPECT_EQ(r.peak_step, 6);
  EXPECT_GT(r.peak_bytes, simulator.simulate({}).peak_bytes);
  // The recompute point before step 5: 1000 + a0..a3.
  bool found = false;
  for (const TimelinePoint& point : r.timeline)
    if (point.recompute) {
      EXPECT_EQ(point.step, 5);
      EXPECT_EQ(point.peak_bytes, 1400);
      found = true;
    }
  EXPECT_TRUE(found);
}

// Attention-like: q, scores = q k^T, softmax with a 300 B workspace freed in its
// own step, out = p v. Segment [1, 2] recomputes scores and p; the workspace is
// replayed inside the recompute: 200 (scores) + 300 = 500 above what is live.
//   weights 1000, q 100 (alloc e0), scores 200 (e1), work 300 (e2, freed e3),
//   p 200 (e4), out 100 (e5, output); the loss step (4) has no events.
//   backward node 3 (step 5): +g_p 200 (e6), -out (e7)
//   backward node 2 (step 6): +g_s 200 (e8), -g_p (e9), -p (e10)
//   backward node 1 (step 7): +g_q 100 (e11), -g_s (e12), -scores (e13)
//   backward node 0 (step 8): -g_q (e14), -q (e15)
// No recompute, peak after e8: 1000 + q 100 + scores 200 + p 200 + g_p 200 + g_s 200 = 1900 (step 6).
// With [1, 2]: bs = 6, be = 7. scores is internal (read by node 2 only): freed at
// the end of step 2 (before e5). p is read by node 3: an output freed (e10, step 6)
// inside [6, 7], so at the recompute. Before e8: 1000 + q 100 + g_p 200 = 1300;
// recompute: +scores 200, +work 300 = 1800 (its peak), -work, +p 200 = 1700;
// e8 +g_s 200 = 1900. The segment's backward holds g_p (e9) and p's copy (e10)
// until it returns, so e11 +g_q = 2000 in step 7: the segment raises the peak.
TEST(PlannerSimulator, RecomputeBlockReplaysEachTemporaryOfTheSegment) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  b.node("aten::linear", {"x"}, {"q"});
  const int q = b.alloc(100);
  b.node("aten::matmul", {"q"}, {"scores"});
  const int scores = b.alloc(200);
  b.readBy(q, 1);
  b.node("aten::softmax", {"scores"}, {"p"});
  const int work = b.alloc(300);
  b.free(work);
  const int prob = b.alloc(200);
  b.readBy(scores, 2);
  b.node("aten::matmul", {"p"}, {"out"});
  const int out = b.alloc(100);
  b.readBy(prob, 3);
  b.setCategory(out, Category::Output);
  b.loss();
  b.backward(3);
  const int g_p = b.alloc(200);
  b.free(out);
  b.backward(2);
  const int g_s = b.alloc(200);
  b.free(g_p);
  b.free(prob);
  b.backward(1);
  const int g_q = b.alloc(100);
  b.free(g_s);
  b.free(scores);
  b.backward(0);
  b.free(g_q);
  b.free(q);
  const Profile p = b.finish();
  const Simulator simulator(p);
  EXPECT_EQ(simulator.simulate({}).peak_bytes, 1900);
  const SimulationResult r = simulator.simulate({{1, 2}});
  EXPECT_EQ(r.peak_bytes, 2000);
  EXPECT_EQ(r.peak_step, 7);
  int recompute_points = 0;
  for (const TimelinePoint& point : r.timeline)
    if (point.recompute) {
      ++recompute_points;
      EXPECT_EQ(point.step, 6);
      EXPECT_EQ(point.peak_bytes, 1800);
    }
  EXPECT_EQ(recompute_points, 1);
  const SegmentCut cut = simulator.describeSegment({1, 2});
  EXPECT_EQ(cut.dropped_tensors, std::vector<int>{scores});
  EXPECT_EQ(cut.dropped_bytes, 200);
  EXPECT_EQ(cut.input_values, std::vector<std::string>{"q"});
  EXPECT_EQ(cut.output_values, std::vector<std::string>{"p"});
  EXPECT_DOUBLE_EQ(cut.recompute_time_us, 2);
}

// Residual: x0 = f(in); h = g(x0); y = h + x0; z = k(y). Segment [1, 2] reads x0
// twice (one input) and holds it until its backward has returned (after step 7,
// i.e. before event 11); x0's own free (event 13) is later, so it is unchanged.
// A diamond read: both h and the add read x0, so it is listed once.
//   events: x0 e0, h e1, y e2, z e3 (output) | loss | bwd 3: +gy e4, -z e5 |
//   bwd 2: +gh e6, -y e7 | bwd 1: +gx e8, -gh e9, -h e10 | bwd 0: -gx e11, -gy e12, -x0 e13
// No recompute: 1100 1200 1300 1400 1500 1400 1500 1400 1500 1400 1300 1200 1100 1000.
// [1, 2]: h internal, freed at the end of step 2 (before e3); y an output whose
// free (e7, step 6) is inside [6, 7]: freed at the recompute before e6 and copied.
//   e0..e5: 1100 1200 1300 | -h 1300 1400 1300 | before e6: -y 1200, +h +y 1400 |
//   e6 +gh 1500, e7 (y's old free) 1500, e8 +gx 1600, e9 -gh 1500, e10 -h 1400,
//   before e11: y's copy goes (end of the segment) -> e11 -gx 1200, e12 -gy 1100, e13 -x0 1000.
TEST(PlannerSimulator, SegmentOutputOfAResidualSegmentIsCopiedWhileInputsHeldToEndKeepItsSkipInput) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  b.node("aten::relu", {"in"}, {"x0"});
  const int x0 = b.alloc(100);
  b.node("aten::conv2d", {"x0", "w"}, {"h"});
  const int h = b.alloc(100);
  b.readBy(x0, 1);
  b.node("aten::add", {"h", "x0"}, {"y"});
  const int y = b.alloc(100);
  b.readBy(h, 2);
  b.readBy(x0, 2);
  b.node("aten::linear", {"y"}, {"z"});
  const int z = b.alloc(100);
  b.readBy(y, 3);
  b.setCategory(z, Category::Output);
  b.loss();
  b.backward(3);
  const int gy = b.alloc(100);
  b.free(z);
  b.backward(2);
  const int gh = b.alloc(100);
  b.free(y);
  b.backward(1);
  const int gx = b.alloc(100);
  b.free(gh);
  b.free(h);
  b.backward(0);
  b.free(gx);
  b.free(gy);
  b.free(x0);
  const Profile p = b.finish();
  const Simulator simulator(p);
  EXPECT_EQ(simulator.liveBytesPerEvent({}), liveBytesPerEvent(p));
  EXPECT_EQ(simulator.liveBytesPerEvent({{1, 2}}),
            (std::vector<int64_t>{1100, 1200, 1300, 1300, 1400, 1300, 1500, 1500, 1600, 1500, 1400, 1200, 1100, 1000}));
  EXPECT_EQ(simulator.simulate({{1, 2}}).peak_bytes, 1600);  // above the 1500 of no recompute
  const SegmentCut cut = simulator.describeSegment({1, 2});
  EXPECT_EQ(cut.input_values, (std::vector<std::string>{"x0", "w"}));
  EXPECT_EQ(cut.output_values, std::vector<std::string>{"y"});
  EXPECT_EQ(cut.dropped_tensors, std::vector<int>{h});
}

// relu -> relu -> cat -> linear, the second relu checkpointed alone. Its
// output `a` is saved by that relu (for its backward) and read by the cat; the
// original freed it when ReluBackward released the save. Under the checkpoint
// nothing saves it in forward, so it dies after the cat's step, unless the
// profile names another saver (or names none: then the older rule holds it to
// the recompute).
Profile reluCatProfile(bool record_saves, bool cat_saves_too) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  b.node("aten::relu", {"in"}, {"x0"});
  const int x0 = b.alloc(100);  // event 0
  b.node("aten::relu", {"x0"}, {"a"});
  const int a = b.alloc(100);  // event 1
  b.readBy(x0, 1);
  b.node("aten::cat", {"a"}, {"c"});
  const int c = b.alloc(100);  // event 2
  b.readBy(a, 2);
  b.node("aten::linear", {"c"}, {"z"});
  const int z = b.alloc(100);  // event 3
  b.readBy(c, 3);
  b.setCategory(z, Category::Output);
  b.loss();
  b.backward(3);
  const int gc = b.alloc(100);  // event 4
  b.free(z);                    // event 5
  b.free(c);                    // event 6
  b.backward(2);
  const int ga = b.alloc(100);  // event 7
  b.free(gc);                   // event 8
  if (record_saves && cat_saves_too) b.releaseSave(a, 2);
  b.backward(1);
  const int gx = b.alloc(100);  // event 9
  b.free(ga);                   // event 10
  b.free(a);                    // event 11
  if (record_saves) b.releaseSave(a, 1);
  b.backward(0);
  b.free(gx);  // event 12
  b.free(x0);  // event 13
  return b.finish();
}

TEST(PlannerSimulator, OutputSavedOnlyInsideDiesAfterItsLastReadOutside) {
  const std::vector<int64_t> held = Simulator(reluCatProfile(false, false)).liveBytesPerEvent({{1, 1}});
  // Held to the recompute (before event 9) by the older rule; gone after the
  // cat's step (event 2) once the saves say only the relu held it.
  expectGapOnly(held, Simulator(reluCatProfile(true, false)).liveBytesPerEvent({{1, 1}}), 3, 8, 100);
  // A second saver outside the segment keeps it until that one lets go.
  EXPECT_EQ(Simulator(reluCatProfile(true, true)).liveBytesPerEvent({{1, 1}}), held);
}

// linear -> addmm -> relu under autocast: the addmm casts its weight, and
// autocast's cache holds the cast, read by nothing, until its region ends with
// the loss. Events: +h e0, +cast e1, +y e2, +z e3 (output) | loss: -cast e4 |
// bwd 2: +gy e5, -z e6, -y e7 | bwd 1: +gh e8, -gy e9, -h e10 | bwd 0: -gh e11.
Profile cachedCastProfile(int64_t cast_bytes) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  b.node("aten::linear", {"x"}, {"h"});
  const int h = b.alloc(100);
  b.node("aten::addmm", {"h"}, {"y"});
  const int cast = b.alloc(cast_bytes);
  const int y = b.alloc(100);
  b.readBy(h, 1);
  b.node("aten::relu", {"y"}, {"z"});
  const int z = b.alloc(100);
  b.readBy(y, 2);
  b.setCategory(z, Category::Output);
  b.loss();
  b.free(cast);
  b.backward(2);
  const int gy = b.alloc(100);
  b.free(z);
  b.free(y);
  b.backward(1);
  const int gh = b.alloc(100);
  b.free(gy);
  b.free(h);
  b.backward(0);
  b.free(gh);
  return b.finish();
}

// The recompute of [1, 1] casts again, under an autocast region of its own that
// ends with it (the checkpoint's AutocastStateScope, eager's _AutocastReplay):
// the copy is in the recompute's rise and gone before the segment's backward.
// Held until the checkpoint's backward returned, as the simulator once assumed,
// a cast that addmm also saved outlived its release by 32 KiB in a GPT-2 floor plan.
TEST(PlannerSimulator, HeldCopyACastAutocastsCacheHeldToTheLossLivesOnlyInTheRecompute) {
  const Profile larger_cast = cachedCastProfile(50);
  const Profile smaller_cast = cachedCastProfile(10);
  const Simulator larger(larger_cast);
  const Simulator smaller(smaller_cast);
  expectGapOnly(larger.liveBytesPerEvent({{1, 1}}), smaller.liveBytesPerEvent({{1, 1}}), 1, 3, 40);
  const SimulationResult with_larger = larger.simulate({{1, 1}});
  const SimulationResult with_smaller = smaller.simulate({{1, 1}});
  ASSERT_EQ(with_larger.timeline.size(), with_smaller.timeline.size());
  int recompute_points = 0;
  for (size_t i = 0; i < with_larger.timeline.size(); ++i) {
    const TimelinePoint& point = with_larger.timeline[i];
    const int64_t gap = point.peak_bytes - with_smaller.timeline[i].peak_bytes;
    if (point.recompute) {
      ++recompute_points;
      EXPECT_EQ(gap, 40) << "the recompute casts again";
    } else if (point.step > 4) {
      EXPECT_EQ(gap, 0) << "backward step " << point.step;
    }
  }
  EXPECT_EQ(recompute_points, 1);
}

// linear -> relu -> linear (an auxiliary head no loss reads) and, from the
// first linear, the main linear. The head's relu output is saved by its linear,
// whose backward never runs, so the original keeps it past the iteration
// (with the head's output). Checkpointed as [0, 2], nothing saves it in
// forward: it dies after the head's step, and its recomputed copy goes when
// the checkpoint's backward returns. With `head_saves_x0`, the relu saves the
// first linear's output too: the segment's output then outlives the iteration
// in the original, and under the checkpoint only the main linear's read holds it.
Profile auxiliaryHeadProfile(bool record_saves, bool head_saves_x0 = false) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  b.node("aten::linear", {"in"}, {"x0"});
  const int x0 = b.alloc(100);  // event 0
  b.node("aten::relu", {"x0"}, {"h"});
  const int h = b.alloc(100);  // event 1
  b.readBy(x0, 1);
  if (record_saves && head_saves_x0) b.savedToTheEnd(x0, 1);
  b.node("aten::linear", {"h"}, {"aux"});
  b.setCategory(b.alloc(100), Category::Output);  // event 2, never freed
  b.readBy(h, 2);
  if (record_saves) b.savedToTheEnd(h, 2);
  b.node("aten::linear", {"x0"}, {"z"});
  const int z = b.alloc(100);  // event 3
  b.readBy(x0, 3);
  b.setCategory(z, Category::Output);
  b.loss();
  b.backward(3);
  const int gx = b.alloc(100);  // event 4
  b.free(z);                    // event 5
  b.backward(0);
  b.free(gx);                     // event 6
  if (!head_saves_x0) b.free(x0);  // event 7
  return b.finish();
}

TEST(PlannerSimulator, UnreachedSaveIsDroppedByItsCheckpoint) {
  const Profile unknown = auxiliaryHeadProfile(false);
  const Profile known = auxiliaryHeadProfile(true);
  const std::vector<int64_t> held = Simulator(unknown).liveBytesPerEvent({{0, 2}});
  const std::vector<int64_t> dropped = Simulator(known).liveBytesPerEvent({{0, 2}});
  ASSERT_EQ(held.size(), dropped.size());
  for (size_t e = 0; e < held.size(); ++e)
    EXPECT_EQ(held[e] - dropped[e], e >= 3 ? 100 : 0) << "after event " << e;
  const int h = 2;  // the relu's output (tensors 0 and 1: the weights, x0)
  EXPECT_EQ(Simulator(known).describeSegment({0, 2}).dropped_tensors, std::vector<int>{h});
  EXPECT_TRUE(Simulator(unknown).describeSegment({0, 2}).dropped_tensors.empty());
}

TEST(PlannerSimulator, OutputSavedOnlyInsideByASaveNoGradientReachesDiesAfterItsLastRead) {
  const std::vector<int64_t> held = Simulator(auxiliaryHeadProfile(false, true)).liveBytesPerEvent({{0, 2}});
  const std::vector<int64_t> released = Simulator(auxiliaryHeadProfile(true, true)).liveBytesPerEvent({{0, 2}});
  ASSERT_EQ(held.size(), released.size());
  // h goes after the head's step (event 2), x0 after the main linear's (event 3).
  for (size_t e = 0; e < held.size(); ++e)
    EXPECT_EQ(held[e] - released[e], e >= 4 ? 200 : e == 3 ? 100 : 0) << "after event " << e;
}

// in -> x, v; a = f(v); b = g(x, a); c = h(x, b). Checkpointed as [1, 3], x
// enters through one input per use (graph_surgery.cpp), so the gradient of
// its use by node 2 is held until the checkpoint's backward returns (after
// node 1's backward), where the original added it at once to the gradient of
// node 3's use. With `second_use` false node 2 reads only a, and every event
// is the same otherwise. With `view_gradient`, node 2's backward makes no
// tensor for x's gradient (a cat hands on a slice of the gradient it received):
// the gradient it received, gb, is what the checkpoint then holds.
Profile twoUsesProfile(bool second_use, bool view_gradient = false) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  b.node("aten::split", {"in"}, {"x", "v"});
  const int x = b.alloc(100);  // event 0
  const int v = b.alloc(10);   // event 1
  b.valueBytes("x", 100);
  b.node("aten::relu", {"v"}, {"a"});
  const int a = b.alloc(10);  // event 2
  b.readBy(v, 1);
  b.node("aten::mul", second_use ? std::vector<std::string>{"x", "a"} : std::vector<std::string>{"a"}, {"b"});
  const int bb = b.alloc(10);  // event 3
  b.readBy(a, 2);
  if (second_use) b.readBy(x, 2);
  b.node("aten::mul", {"x", "b"}, {"c"});
  b.setCategory(b.alloc(10), Category::Output);  // event 4
  b.readBy(x, 3);
  b.readBy(bb, 3);
  b.loss();
  b.backward(3);
  const int gx = b.alloc(100);  // event 5: the first use's gradient, the running sum
  const int gb = b.alloc(10);   // event 6
  b.gradientOf(gx, {"x"});
  b.gradientOf(gb, {"b"});
  b.backward(2);
  if (!view_gradient) {
    const int gx2 = b.alloc(100);  // event 7: added to gx at once
    b.gradientOf(gx2, {"x"});
    b.free(gx2);                   // event 8
  }
  const int ga = b.alloc(10);  // event 9 (7 with view_gradient)
  b.gradientOf(ga, {"a"});
  b.free(gb);                  // event 10 (8)
  b.free(bb);                  // event 11 (9)
  b.backward(1);
  const int gv = b.alloc(10);  // event 12 (10)
  b.gradientOf(gv, {"v"});
  b.free(ga);                  // event 13 (11)
  b.free(a);                   // event 14 (12)
  b.backward(0);
  b.free(gx);  // event 15 (13)
  b.free(gv);  // event 16 (14)
  b.free(x);   // event 17 (15)
  b.free(v);   // event 18 (16)
  return b.finish();
}

TEST(PlannerSimulator, HeldUseGradientOfEachLaterUseOfAnOutsideTensorLastsUntilTheReturnHandOver) {
  // Node 2's gradient of x, made and added at once in events 7-8 of both, is
  // held from the end of node 2's backward through node 1's (events 12-14).
  expectGapOnly(Simulator(twoUsesProfile(true)).liveBytesPerEvent({{1, 3}}),
                Simulator(twoUsesProfile(false)).liveBytesPerEvent({{1, 3}}), 12, 14, 100);
  // Without the segment the two profiles are the same memory.
  EXPECT_EQ(Simulator(twoUsesProfile(true)).liveBytesPerEvent({}), Simulator(twoUsesProfile(false)).liveBytesPerEvent({}));
}

TEST(PlannerSimulator, ViewHoldingUseOfALaterUseKeepsTheReceivedGradientsHeld) {
  // gb (10 B), freed by node 2's backward at event 8, is held through node 1's backward (events 8-12).
  expectGapOnly(Simulator(twoUsesProfile(true, true)).liveBytesPerEvent({{1, 3}}),
                Simulator(twoUsesProfile(false, true)).liveBytesPerEvent({{1, 3}}), 8, 12, 10);
}

// The forward both profiles below begin with: c = relu(in); h = relu(in);
// m = relu(h); y = cat(c, m) (nodes 0-3, events 0-4), c and y each needing grad.
struct CatOfOutsideAndInside {
  int c, h, m, y;
};
CatOfOutsideAndInside catOfOutsideAndInsideForward(ProfileBuilder& b) {
  b.addStatic(1000, Category::Weight);
  CatOfOutsideAndInside t{};
  b.node("aten::relu", {"in"}, {"c"});
  t.c = b.alloc(10);  // event 0
  b.valueBytes("c", 10);
  b.node("aten::relu", {"in"}, {"h"});
  t.h = b.alloc(10);  // event 1
  b.node("aten::relu", {"h"}, {"m"});
  t.m = b.alloc(10);  // event 2
  b.readBy(t.h, 2);
  b.free(t.h);        // event 3
  b.node("aten::cat", {"c", "m"}, {"y"});
  t.y = b.alloc(20);  // event 4
  b.valueBytes("y", 20);
  b.readBy(t.c, 3);
  b.readBy(t.m, 3);
  return t;
}

// Their backward from the cat on: the cat makes nothing (it hands on slices
// of gy); node 2 makes h's gradient, then frees gy and m; node 1 frees that;
// node 0 frees c's gradient sum gc and c. Six events.
void catOfOutsideAndInsideBackward(ProfileBuilder& b, const CatOfOutsideAndInside& t, int gy, int gc) {
  b.backward(3);
  b.backward(2);
  const int gh = b.alloc(10);
  b.gradientOf(gh, {"h"});
  b.free(gy);
  b.free(t.m);
  b.backward(1);
  b.free(gh);
  b.backward(0);
  b.free(gc);
  b.free(t.c);
}

// ... o = tanh(y); out = c * o, checkpointed as [1, 4]: c is read inside (by
// the cat) and after (by node 5, whose backward begins c's gradient sum). The
// cat's backward hands on two slices of y's gradient gy: c's, which the
// original added to the waiting sum at once, and m's, which node 2's backward
// uses and then frees gy. The checkpoint keeps c's slice, and so all of gy,
// until it returns (after node 1's backward), although node 2 freed it, not
// the cat (RAFT's GRU input cat of its context and its motion features). With
// `c_slice_reported` false, autograd's hooks did not report gy as c's
// gradient, and every event is the same.
Profile catOfAnOutsideAndAnInsideValueProfile(bool c_slice_reported) {
  ProfileBuilder b;
  const CatOfOutsideAndInside t = catOfOutsideAndInsideForward(b);
  b.node("aten::tanh", {"y"}, {"o"});
  const int o = b.alloc(20);  // event 5
  b.readBy(t.y, 4);
  b.free(t.y);                // event 6
  b.node("aten::mul", {"c", "o"}, {"out"});
  b.setCategory(b.alloc(10), Category::Output);  // event 7
  b.readBy(t.c, 5);
  b.readBy(o, 5);
  b.loss();
  b.backward(5);
  const int gc = b.alloc(10);  // event 8: c's gradient sum
  const int go = b.alloc(20);  // event 9
  b.gradientOf(gc, {"c"});
  b.gradientOf(go, {"o"});
  b.backward(4);
  const int gy = b.alloc(20);  // event 10
  b.gradientOf(gy, c_slice_reported ? std::vector<std::string>{"y", "c", "m"} : std::vector<std::string>{"y", "m"});
  b.free(go);  // event 11
  b.free(o);   // event 12
  catOfOutsideAndInsideBackward(b, t, gy, gc);  // events 13-18: gy freed at 14, node 1's backward at 16
  return b.finish();
}

TEST(PlannerSimulator, ViewHoldingUseAViewOfAGradientThatAnotherNodeOfTheSegmentFreesIsHeldUntilTheCheckpointReturns) {
  // gy (20 B), freed by node 2's backward at event 14, is held through node 1's backward (events 14-16).
  expectGapOnly(Simulator(catOfAnOutsideAndAnInsideValueProfile(true)).liveBytesPerEvent({{1, 4}}),
                Simulator(catOfAnOutsideAndAnInsideValueProfile(false)).liveBytesPerEvent({{1, 4}}), 14, 16, 20);
  // Without the segment the two profiles are the same memory.
  EXPECT_EQ(Simulator(catOfAnOutsideAndAnInsideValueProfile(true)).liveBytesPerEvent({}),
            Simulator(catOfAnOutsideAndAnInsideValueProfile(false)).liveBytesPerEvent({}));
}

// ... o = tanh(y); p = c * o; out = y * p: the cat's output y is also read
// after the segment, checkpointed as [1, 4]. y's gradient buffer gy begins at
// node 6's backward and the original adds tanh's gradient of y to it in
// place; the checkpoint hands gy to its recompute as a gradient it received,
// so the sum with tanh's is a new tensor, and it is that sum whose slice the
// cat hands on as c's gradient: it is held until the checkpoint returns, where
// the original's buffer went with node 2's backward (RAFT's GRU input x, read
// by both of its separable GRUs, when a segment ends between them). With
// `c_slice_reported` false, every event is the same.
Profile catReadInsideAndAfterProfile(bool c_slice_reported) {
  ProfileBuilder b;
  const CatOfOutsideAndInside t = catOfOutsideAndInsideForward(b);
  b.node("aten::tanh", {"y"}, {"o"});
  const int o = b.alloc(20);  // event 5
  b.readBy(t.y, 4);
  b.node("aten::mul", {"c", "o"}, {"p"});
  const int p = b.alloc(20);  // event 6
  b.readBy(t.c, 5);
  b.readBy(o, 5);
  b.node("aten::mul", {"y", "p"}, {"out"});
  b.setCategory(b.alloc(20), Category::Output);  // event 7
  b.readBy(t.y, 6);
  b.readBy(p, 6);
  b.loss();
  b.backward(6);
  const int gy = b.alloc(20);  // event 8: y's gradient buffer
  const int gp = b.alloc(20);  // event 9
  b.gradientOf(gy, c_slice_reported ? std::vector<std::string>{"y", "c", "m"} : std::vector<std::string>{"y", "m"});
  b.gradientOf(gp, {"p"});
  b.free(p);  // event 10
  b.backward(5);
  const int gc = b.alloc(10);  // event 11: c's gradient sum
  const int go = b.alloc(20);  // event 12
  b.gradientOf(gc, {"c"});
  b.gradientOf(go, {"o"});
  b.free(gp);  // event 13
  b.backward(4);
  const int gy_tanh = b.alloc(20);  // event 14: added to gy in place
  b.gradientOf(gy_tanh, {"y"});
  b.free(gy_tanh);  // event 15
  b.free(go);       // event 16
  b.free(o);        // event 17
  b.free(t.y);      // event 18
  catOfOutsideAndInsideBackward(b, t, gy, gc);  // events 19-24: gy freed at 20, node 1's backward at 22
  return b.finish();
}

TEST(PlannerSimulator, OutputReadInsideAndAfterTheSumThatStandsForAViewHeldOutputGradientIsHeldUntilTheCheckpointReturns) {
  // The new y-sized sum lives from tanh's backward to gy's free (event 20) in
  // both; with c's slice of it held, on through node 1's backward (events 20-22).
  expectGapOnly(Simulator(catReadInsideAndAfterProfile(true)).liveBytesPerEvent({{1, 4}}),
                Simulator(catReadInsideAndAfterProfile(false)).liveBytesPerEvent({{1, 4}}), 20, 22, 20);
  EXPECT_EQ(Simulator(catReadInsideAndAfterProfile(true)).liveBytesPerEvent({}),
            Simulator(catReadInsideAndAfterProfile(false)).liveBytesPerEvent({}));
}

// x = relu(in); y = linear(x, w1); z = relu(y); o = linear(z, w2), w1 and w2
// the values of two reads of weights (as a trace reads each use). With
// `shared`, both read the weight W, whose gradient sum node 3's backward
// begins; node 1's gradient of it is added in place at once (made and freed in
// its step). Checkpointed as [0, 2], that gradient is held until the
// checkpoint's backward returns (after node 0's). Without `shared`, node 3
// reads another weight of the same size, and every event is the same. With
// `frozen_of_same_size`, node 1 also reads a frozen weight of W's size (a
// buffer), so only the value's recorded storage says which weight w1 is.
Profile sharedWeightProfile(bool shared, bool frozen_of_same_size = false) {
  ProfileBuilder b;
  const int w = b.addStatic(100, Category::Weight);
  const int other = b.addStatic(100, Category::Weight);
  const int frozen = b.addStatic(100, Category::Weight);
  b.valueBytes("w1", 100);
  b.valueBytes("w2", 100);
  b.valueOn("w1", w);
  b.valueOn("w2", shared ? w : other);
  if (frozen_of_same_size) {
    b.valueBytes("f", 100);
    b.valueOn("f", frozen);
  }
  b.requiresGrad("w1");
  b.requiresGrad("w2");
  b.node("aten::relu", {"in"}, {"x"});
  const int x = b.alloc(10);  // event 0
  b.node("aten::linear", frozen_of_same_size ? std::vector<std::string>{"x", "w1", "f"} : std::vector<std::string>{"x", "w1"},
         {"y"});
  const int y = b.alloc(10);  // event 1
  b.readBy(x, 1);
  b.readBy(w, 1);
  if (frozen_of_same_size) b.readBy(frozen, 1);
  b.node("aten::relu", {"y"}, {"z"});
  const int z = b.alloc(10);  // event 2
  b.readBy(y, 2);
  b.node("aten::linear", {"z", "w2"}, {"o"});
  b.setCategory(b.alloc(10), Category::Output);  // event 3
  b.readBy(z, 3);
  b.readBy(shared ? w : other, 3);
  b.loss();
  b.backward(3);
  // A trace's reads of one weight share its gradient: autograd names both values.
  const std::vector<std::string> weight_values = shared ? std::vector<std::string>{"w1", "w2"} : std::vector<std::string>{"w2"};
  const int sum = b.alloc(100);  // event 4: the sum node 3 begins
  b.setCategory(sum, Category::Gradient);
  b.gradientOf(sum, weight_values);
  const int gz = b.alloc(10);  // event 5
  b.gradientOf(gz, {"z"});
  b.backward(2);
  const int gy = b.alloc(10);  // event 6
  b.gradientOf(gy, {"y"});
  b.free(gz);                  // event 7
  b.free(z);                   // event 8
  b.backward(1);
  const int gw1 = b.alloc(100);  // event 9
  b.gradientOf(gw1, shared ? weight_values : std::vector<std::string>{"w1"});
  b.free(gw1);                   // event 10: added in place
  const int gx = b.alloc(10);    // event 11
  b.gradientOf(gx, {"x"});
  b.free(gy);                    // event 12
  b.free(y);                     // event 13
  b.backward(0);
  b.free(gx);  // event 14
  b.free(x);   // event 15
  return b.finish();
}

TEST(PlannerSimulator, SharedWeightUseAddedToItsRunningSumIsHeldByTheCheckpoint) {
  // From the end of node 1's backward (event 13) through node 0's (events 14-15).
  const std::vector<int64_t> shared = Simulator(sharedWeightProfile(true)).liveBytesPerEvent({{0, 2}});
  expectGapOnly(shared, Simulator(sharedWeightProfile(false)).liveBytesPerEvent({{0, 2}}), 14, shared.size() - 1, 100);
}

// Which weight a value is comes from the storage the run saw it on, not from
// sizes: beside a frozen weight of the same size, w1 is still W.
TEST(PlannerSimulator, SharedWeightUseIsKnownByItsStorageBesideAnotherWeightOfItsSize) {
  const std::vector<int64_t> shared = Simulator(sharedWeightProfile(true, true)).liveBytesPerEvent({{0, 2}});
  expectGapOnly(shared, Simulator(sharedWeightProfile(false, true)).liveBytesPerEvent({{0, 2}}), 14, shared.size() - 1,
                100);
}

// x, y = split(in); a = relu(x); c = mul(a, y); o = addcmul(x, y, c). Node 3's
// backward begins the gradient sums of x and y (sx, sy), nodes 2 and 1 add
// theirs. With `new_sums` they add as LibTorch 1.13 adds dense gradients, out
// of place (gy + sy into ny, then sy and gy go), else in place (gy made and
// freed; sy is the sum). Checkpointed as [1, 2], the gradients gx and gy are
// returned together after node 1's backward and the engine adds each to its
// waiting sum there: for a moment x, y and o (3010), sx and sy (3000), gx
// and gy (3000) and the larger new sum (2000) are alive, 11010 B, above
// anything the original had at once (its sums came one by one). The simulator
// counts sx and sy (gradients the segment received, they live only until its
// releases) and that sum at the return (5000) on top of x, y, o, nx and ny.
Profile waitingSumsProfile(bool new_sums) {
  ProfileBuilder b;
  b.node("aten::split", {"in"}, {"x", "y"});
  const int x = b.alloc(1000);  // event 0
  const int y = b.alloc(2000);  // event 1
  b.valueBytes("x", 1000);
  b.valueBytes("y", 2000);
  b.node("aten::relu", {"x"}, {"a"});
  const int a = b.alloc(10);  // event 2
  b.readBy(x, 1);
  b.node("aten::mul", {"a", "y"}, {"c"});
  const int c = b.alloc(10);  // event 3
  b.readBy(a, 2);
  b.readBy(y, 2);
  b.node("aten::addcmul", {"x", "y", "c"}, {"o"});
  b.setCategory(b.alloc(10), Category::Output);  // event 4
  b.readBy(x, 3);
  b.readBy(y, 3);
  b.readBy(c, 3);
  b.loss();
  b.backward(3);
  const int sx = b.alloc(1000);  // event 5
  const int sy = b.alloc(2000);  // event 6
  const int gc = b.alloc(10);    // event 7
  b.gradientOf(sx, {"x"});
  b.gradientOf(sy, {"y"});
  b.gradientOf(gc, {"c"});
  b.free(c);                     // event 8
  // The current node's gradient of a tensor, added to its waiting sum.
  const auto add_gradient = [&](int waiting, const std::string& value, int64_t bytes) {
    const int gradient = b.alloc(bytes);
    b.gradientOf(gradient, {value});
    const int sum = new_sums ? b.alloc(bytes) : waiting;
    if (new_sums) b.gradientOf(sum, {value});
    if (new_sums) b.free(waiting);
    b.free(gradient);
    return sum;
  };
  b.backward(2);
  const int final_y = add_gradient(sy, "y", 2000);
  const int ga = b.alloc(10);
  b.gradientOf(ga, {"a"});
  b.free(gc);
  b.backward(1);
  const int final_x = add_gradient(sx, "x", 1000);
  b.free(ga);
  b.free(a);
  b.backward(0);
  for (const int t : {final_x, final_y, x, y}) b.free(t);
  return b.finish();
}

TEST(PlannerSimulator, ReturnSumsAddingToWaitingSumsHoldThemWithTheReturnedGradientsAndOneNewSum) {
  constexpr int kNodeOneBackwardStep = 7;  // forward 0-3, loss 4, node 3's backward 5, node 2's 6
  const SimulationResult out_of_place = Simulator(waitingSumsProfile(true)).simulate({{1, 2}});
  EXPECT_EQ(out_of_place.peak_bytes, 11010);
  EXPECT_EQ(out_of_place.peak_step, kNodeOneBackwardStep);
  EXPECT_FALSE(out_of_place.peak_in_recompute);
  // Summed in place, the return makes nothing: node 1's step peaks while gx
  // is made beside x, y, o, sx, sy (held), the recomputed a and c, gc (held),
  // ga and gy, node 2's gradient of y, which the original added to sy at
  // once and the checkpoint holds until it returns (LibTorch 2.14 measures
  // it so on a traced LSTMCell's slices of its embedding): 9050.
  const SimulationResult in_place = Simulator(waitingSumsProfile(false)).simulate({{1, 2}});
  EXPECT_EQ(in_place.timeline.at(kNodeOneBackwardStep + 1).peak_bytes, 9050);
}

// f, b = split(in); c = cat(f, b); r = relu(c); o = addcmul(f, b, r). Node 3's
// backward begins the gradient sums of f and b (sf, sb). Node 1's backward,
// the concatenation's, hands each a slice of the gradient it received (gc),
// and the original adds each slice to its waiting sum at once (nf, nb; LibTorch
// 1.13 adds out of place) and lets gc go. Checkpointed as [1, 2], the slices
// are captured as they are until the checkpoint returns: through node 1's
// backward f, b and o (2010), sf and sb (2000), gr (the gradient the
// checkpoint received, 2000), gc (2000) and the recomputed r (2000) are
// alive, 10010 B, and no sum is made there; the return makes nf and nb. The
// original's way would add 1000 B at nf and again at nb.
Profile concatenatedOutsideTensorsProfile() {
  ProfileBuilder b;
  b.node("aten::split", {"in"}, {"f", "b"});
  const int f = b.alloc(1000);  // event 0
  const int g = b.alloc(1000);  // event 1
  b.valueBytes("f", 1000);
  b.valueBytes("b", 1000);
  b.node("aten::cat", {"f", "b"}, {"c"});
  const int c = b.alloc(2000);  // event 2
  b.readBy(f, 1);
  b.readBy(g, 1);
  b.node("aten::relu", {"c"}, {"r"});
  const int r = b.alloc(2000);  // event 3
  b.readBy(c, 2);
  b.node("aten::addcmul", {"f", "b", "r"}, {"o"});
  b.setCategory(b.alloc(10), Category::Output);  // event 4
  b.readBy(f, 3);
  b.readBy(g, 3);
  b.readBy(r, 3);
  b.loss();
  b.backward(3);
  const int sf = b.alloc(1000);  // event 5
  const int sb = b.alloc(1000);  // event 6
  const int gr = b.alloc(2000);  // event 7
  b.gradientOf(sf, {"f"});
  b.gradientOf(sb, {"b"});
  b.gradientOf(gr, {"r"});
  b.free(r);                     // event 8
  b.backward(2);
  const int gc = b.alloc(2000);  // event 9
  b.gradientOf(gc, {"c"});
  b.free(gr);                    // event 10
  b.free(c);                     // event 11
  b.backward(1);
  const int nf = b.alloc(1000);  // event 12
  b.gradientOf(nf, {"f"});
  b.free(sf);                    // event 13
  const int nb = b.alloc(1000);  // event 14
  b.gradientOf(nb, {"b"});
  b.free(sb);                    // event 15
  b.free(gc);                    // event 16
  b.backward(0);
  for (const int t : {nf, nb, f, g}) b.free(t);  // events 17-20
  return b.finish();
}

TEST(PlannerSimulator, SumWaitsSlicesOfAGradientHandedToOutsideTensorsHoldItAndTheirSumsWaitForTheReturn) {
  const Profile profile = concatenatedOutsideTensorsProfile();
  const Simulator simulator(profile);
  const std::vector<int64_t> live = simulator.liveBytesPerEvent({{1, 2}});
  for (int e = 12; e <= 16; ++e) EXPECT_EQ(live.at(e), 10010) << "after event " << e;
  // After the return: f, b, o, nf and nb; node 0's backward frees nf first.
  EXPECT_EQ(live.at(17), 3010);
  constexpr int kCatBackwardStep = 7;  // forward 0-3, loss 4, node 3's backward 5, node 2's 6
  int64_t cat_step_peak = 0;
  for (const TimelinePoint& point : simulator.simulate({{1, 2}}).timeline)
    if (point.step == kCatBackwardStep && !point.recompute) cat_step_peak = point.peak_bytes;
  EXPECT_EQ(cat_step_peak, 10010);
}

// a = relu(x); c = mul(a); t = tanh(c); (h2, c2) = unpack((t, c)); o = mul(h2, c2):
// a traced LSTMCell's end, which returns (h, c) as a tuple and unpacks it. The
// recorder makes the tuple construct Duplicable and lets the unpack read the
// tuple's elements (ForwardNode::reads), so c2, read after a segment [1, 4],
// is another value on c, which tanh reads inside. Node 5's backward makes gh
// and gc, c's gradient buffer; tanh's gradient of c (g2) is added to gc in
// place; node 1's backward consumes gc. Checkpointed, gc is a gradient the
// segment received and held until it returns, so the sum with tanh's is a
// second c-sized tensor, alive from the end of tanh's backward to gc's free,
// as for an output read inside through its own value (`through_unpack` false:
// node 5 reads c itself).
//   events 0..5: 1100 1300 1700 1710 (o) 2110 (gh) 2310 (gc)
//   before event 6: c, t go (outputs freed in the segment's backward), the
//   recompute brings them back: 2310; e6 +g2 2510, e7 -g2 2310, e8 and e9
//   (gh and t held) 2310, e10 +ga +the sum 2610, e11 (gc's free) 2410, e12
//   2410; the return drops gh, gc and the copies of c and t: e13 -ga 1110, e14 -a 1010.
Profile unpackedCellStateProfile(bool through_unpack) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Input);
  b.node("aten::relu", {"x"}, {"a"});
  const int a = b.alloc(100);  // event 0
  b.node("aten::mul", {"a"}, {"c"});
  const int c = b.alloc(200);  // event 1
  b.readBy(a, 1);
  b.node("aten::tanh", {"c"}, {"t"});
  const int t = b.alloc(400);  // event 2
  b.readBy(c, 2);
  b.node("prim::TupleConstruct", through_unpack ? std::vector<std::string>{"t", "c"} : std::vector<std::string>{"t"},
         {"tuple"});
  b.node("prim::TupleUnpack", {"tuple"},
         through_unpack ? std::vector<std::string>{"h2", "c2"} : std::vector<std::string>{"h2"});
  for (const int node : {3, 4}) {
    b.readBy(t, node);
    if (through_unpack) b.readBy(c, node);
  }
  b.node("aten::mul", {"h2", through_unpack ? "c2" : "c"}, {"o"});
  b.setCategory(b.alloc(10), Category::Output);  // event 3
  b.readBy(t, 5);
  b.readBy(c, 5);
  b.valueBytes("a", 100);
  b.valueBytes("c", 200);
  if (through_unpack) b.valueBytes("c2", 200);
  b.valueBytes("t", 400);
  b.valueBytes("h2", 400);
  // The unpack's outputs are the tuple's elements: the same storages.
  b.valueOn("c", c);
  b.valueOn("t", t);
  b.valueOn("h2", t);
  if (through_unpack) b.valueOn("c2", c);
  b.loss();
  b.backward(5);
  const int gh = b.alloc(400);  // event 4
  const int gc = b.alloc(200);  // event 5
  // Autograd names every value on one tensor: the unpack's outputs are the tuple's elements.
  b.gradientOf(gh, {"t", "h2"});
  b.gradientOf(gc, through_unpack ? std::vector<std::string>{"c", "c2"} : std::vector<std::string>{"c"});
  b.backward(2);
  const int tanh_gradient = b.alloc(200);  // event 6: tanh's gradient of c, added to gc in place
  b.gradientOf(tanh_gradient, through_unpack ? std::vector<std::string>{"c", "c2"} : std::vector<std::string>{"c"});
  b.free(tanh_gradient);  // event 7
  b.free(gh);            // event 8
  b.free(t);             // event 9
  b.backward(1);
  const int ga = b.alloc(100);  // event 10
  b.gradientOf(ga, {"a"});
  b.free(gc);                   // event 11
  b.free(c);                    // event 12
  b.backward(0);
  b.free(ga);  // event 13
  b.free(a);   // event 14
  Profile p = b.finish();
  // What the recorder writes for the tuple: its construct is Duplicable and
  // makes no tensor, and the unpack reads the elements in its place.
  p.nodes[3].role = CutRole::Duplicable;
  for (GraphValue& v : p.values)
    if (v.producer_node == 3) {
      v.type = through_unpack ? "Tuple[Tensor, Tensor]" : "Tuple[Tensor]";
      v.entry = ValueEntry::Clone;
      v.is_tensor = v.can_leave = v.requires_grad = v.needs_grad = false;
    }
  p.nodes[4].reads = p.nodes[3].reads;
  return p;
}

TEST(PlannerSimulator, OutputReadInsideAndAfterThroughTheValueATupleUnpackMadeOfItHoldsTheSecondGradient) {
  const std::vector<int64_t> expected = {1100, 1300, 1700, 1710, 2110, 2310, 2510, 2310,
                                         2310, 2310, 2610, 2410, 2410, 1110, 1010};
  const Profile direct_profile = unpackedCellStateProfile(false);
  EXPECT_EQ(Simulator(direct_profile).liveBytesPerEvent({{1, 4}}), expected);
  const Profile profile = unpackedCellStateProfile(true);
  const Simulator unpacked(profile);
  EXPECT_EQ(unpacked.liveBytesPerEvent({{1, 4}}), expected);
  const SimulationResult r = unpacked.simulate({{1, 4}});
  constexpr int kNodeOneBackwardStep = 9;  // forward 0-5, loss 6, node 5's backward 7, node 2's 8
  EXPECT_EQ(r.peak_bytes, 2610);
  EXPECT_EQ(r.peak_step, kNodeOneBackwardStep);
}

// The memory rules tell whose gradient a tensor is only by what autograd
// reported; a profile from before that was recorded is refused with the fix.
TEST(PlannerSimulator, AProfileThatDoesNotSayWhoseGradientEachTensorIsIsRefusedWithTheFix) {
  Profile profile = twoUsesProfile(true);
  EXPECT_NO_THROW(Simulator{profile});
  profile.tensors[3].gradient_of.reset();
  try {
    Simulator simulator(profile);
    ADD_FAILURE() << "planned a profile that does not say whose gradient tensor 3 is";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("run acprof profile again"), std::string::npos) << e.what();
  }
}

TEST(PlannerSimulator, SegmentProblemsNameTheReason) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  b.node("prim::GetAttr", {"self"}, {"running_mean"});
  b.node("prim::Constant", {}, {"c"});
  b.node("aten::relu", {"x"}, {"r"});
  b.alloc(100);
  b.node("aten::batch_norm", {"r", "running_mean"}, {"bn"});
  b.mutates(3, "running_mean");  // a module buffer: allowed
  b.alloc(100);
  b.node("aten::add_", {"r", "c"}, {"r2"});
  b.mutates(4, "r");  // writes r, made by node 2
  b.node("prim::If", {"r2"}, {"o"});
  b.uncuttable(5);
  b.loss();
  const Profile p = b.finish();
  const Simulator simulator(p);
  EXPECT_EQ(simulator.segmentProblem({2, 3}), "");
  EXPECT_EQ(simulator.segmentProblem({2, 4}), "");  // r is made inside
  EXPECT_EQ(simulator.segmentProblem({0, 3}), "");  // the attribute read stays outside
  EXPECT_EQ(simulator.describeSegment({2, 3}).replayed_inputs, std::vector<std::string>{"running_mean"});
  EXPECT_NE(simulator.segmentProblem({3, 4}).find("[write-outside] node 4"), std::string::npos);
  EXPECT_NE(simulator.segmentProblem({3, 3}).find("[input-written-later]"), std::string::npos)
      << "r is read by node 3 and written by node 4, after the range";
  EXPECT_NE(simulator.segmentProblem({4, 5}).find("[barrier] node 5"), std::string::npos);
  EXPECT_NE(simulator.segmentProblem({1, 1}).find("[no-computation]"), std::string::npos);
  EXPECT_NE(simulator.segmentProblem({3, 9}).find("[range]"), std::string::npos);
}

TEST(PlannerSimulator, RejectsOverlappingDecisions) {
  const Profile p = chainProfile(4, 100, kUnitTimes);
  const Simulator simulator(p);
  EXPECT_THROW(simulator.simulate({{0, 2}, {2, 3}}), std::invalid_argument);
  EXPECT_THROW(simulator.simulate({{2, 3}, {0, 1}}), std::invalid_argument);
  EXPECT_THROW(simulator.simulate({{0, 4}}), std::invalid_argument);
}

}  // namespace
}  // namespace acprof
