// The recorder's measurements against numbers computed independently: by hand
// from the architecture, or from the allocator's own counters.
#include "acprof/recorder.h"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include <torch/csrc/autograd/engine.h>

#include "acprof/run_modes.h"
#include "recorder_test_support.h"
#include "saved_tensor_hooks.h"
#include "test_support.h"

namespace acprof {
namespace {

using acprof::testing::bytesIn;
using acprof::testing::profileOf;
using acprof::testing::testModel;

int64_t total(const CategoryBytes& bytes) {
  int64_t sum = 0;
  for (int64_t b : bytes) sum += b;
  return sum;
}

// models/mlp.py: input float32[2048,64]; Linear(64,256) ReLU, 3 x (Linear(256,256) ReLU), Linear(256,10).
// LibTorch starts autograd's device threads once per process, for the engine of
// the first backward; an engine switched in later has none, and on CUDA its
// first backward failed an internal assert (seen on an H100 with ResNet-50,
// after the plain step had run on LibTorch's engine). So every backward, before,
// during and after a recording, runs on one engine: acprof's, from load time.
TEST(SavedTensorHooks, EveryBackwardRunsOnOneEngineInstalledBeforeAnyBackward) {
  const void* before = acprof::defaultAutogradEngine();
  EXPECT_NE(before, &torch::autograd::Engine::get_base_engine());
  {
    acprof::SavedTensorHooksScope scope({});
    EXPECT_EQ(acprof::defaultAutogradEngine(), before);
  }
  EXPECT_EQ(acprof::defaultAutogradEngine(), before);
}

// Outside a scope the engine adds no hooks, so PyTorch's own check that a saved
// tensor was not written in place still runs (the plain step before a recording
// relies on it); inside one, each save is reported.
TEST(SavedTensorHooks, SavesAreHookedOnlyInsideAScope) {
  const at::Tensor x = at::randn({4}).requires_grad_();
  at::Tensor written = x.exp();  // exp saves its output
  written.mul_(2);
  EXPECT_THROW(written.sum().backward(), c10::Error);
  int saves = 0;
  {
    acprof::SavedTensorHooksScope scope({[&](uint64_t, const void*) { ++saves; }, nullptr});
    x.exp().sum().backward();
  }
  EXPECT_GE(saves, 1);
  const int inside = saves;
  x.exp().sum().backward();
  EXPECT_EQ(saves, inside);
}

TEST(Recorder, MlpCategoriesEqualHandComputedSizes) {
  const Profile p = profileOf("mlp_traced.pt");
  const int64_t kFloat = 4, kBatch = 2048;
  const int64_t weights = (64 * 256 + 256 + 3 * (256 * 256 + 256) + 256 * 10 + 10) * kFloat;  // 866,344
  EXPECT_EQ(bytesIn(p, Category::Weight), weights);
  EXPECT_EQ(bytesIn(p, Category::Gradient), weights);
  EXPECT_EQ(bytesIn(p, Category::Input), kBatch * 64 * kFloat);
  // Saved for backward: the four ReLU outputs (addmm saves its input, ReLU its result).
  EXPECT_EQ(bytesIn(p, Category::Activation), 4 * kBatch * 256 * kFloat);
  // The logits and the scalar loss.
  EXPECT_EQ(bytesIn(p, Category::Output), kBatch * 10 * kFloat + kFloat);
}

// The probes' cost per forward step is measured against a plain forward and
// recorded; given one (the re-profile of a rewrite takes its original's), no
// plain forward runs and that cost is the one taken out of the step times.
TEST(Recorder, ProbeCostIsMeasuredOnceAndTakenWhenGiven) {
  std::vector<std::string> lines;
  RecordOptions options;
  options.model_path = testModel("mlp_traced.pt");
  options.run.measured_iters = 1;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  const Profile measured = recordProfile(options);
  const auto timed_plain_forwards = [&] {
    return std::any_of(lines.begin(), lines.end(),
                       [](const std::string& line) { return line.find("plain forward") != std::string::npos; });
  };
  EXPECT_TRUE(timed_plain_forwards());
  EXPECT_GE(measured.meta.probe_cost_us, 0);

  lines.clear();
  // A cost longer than any op: every forward node's step is left at 0.
  options.probe_cost_us = 1e9;
  const Profile given = recordProfile(options);
  EXPECT_FALSE(timed_plain_forwards());
  EXPECT_EQ(given.meta.probe_cost_us, 1e9);
  int forward_steps = 0;
  for (const Step& step : given.steps) {
    if (step.phase != Phase::Forward || step.node < 0) continue;
    ++forward_steps;
    EXPECT_EQ(step.time_us, 0) << "step " << step.index;
  }
  EXPECT_GT(forward_steps, 0);
}

// Autograd's saves, as the recorder saw them: each ReLU output is saved twice,
// by the ReLU (its result) and by the next linear layer (its input), and each
// save is released by backward; the later release is what freed it.
TEST(Recorder, MlpReluOutputsAreSavedByTheirReluAndTheNextLinear) {
  const Profile p = profileOf("mlp_traced.pt");
  int activations = 0;
  for (const TensorRecord& t : p.tensors) {
    if (t.category != Category::Activation) continue;
    ++activations;
    ASSERT_TRUE(t.saved_by.has_value()) << t.name;
    ASSERT_EQ(t.saved_by->size(), 2u) << t.name;
    std::set<int> savers;
    int last_release = -1;
    for (const TensorRecord::SavedBy& by : *t.saved_by) {
      savers.insert(by.node);
      ASSERT_GE(by.release_step, 0) << t.name;
      EXPECT_EQ(p.steps[by.release_step].phase, Phase::Backward) << t.name;
      last_release = std::max(last_release, by.release_step);
    }
    EXPECT_TRUE(savers.count(t.producer_node)) << t.name << " not saved by its ReLU";
    ASSERT_EQ(savers.size(), 2u) << t.name;
    const int reader = *savers.begin() == t.producer_node ? *savers.rbegin() : *savers.begin();
    EXPECT_TRUE(std::count(t.users.begin(), t.users.end(), reader)) << t.name << " saved by node " << reader;
    EXPECT_EQ(last_release, t.free_step) << t.name;
  }
  EXPECT_EQ(activations, 4);
}

// Whose gradient each storage is comes from autograd's edges, not from sizes:
// each parameter's gradient (its .grad at the end) is named for the value that
// reads that parameter, and what each ReLU's backward makes is the gradient of
// the ReLU's input, the linear's output, though the ReLU's own output has the
// same size. Every storage is recorded either way (empty: no value's).
TEST(Recorder, MlpGradientsAreNamedByAutogradForTheValuesTheyBelongTo) {
  const Profile p = profileOf("mlp_traced.pt");
  int parameter_gradients = 0, relu_gradients = 0;
  for (const TensorRecord& t : p.tensors) {
    ASSERT_TRUE(t.gradient_of.has_value()) << t.id;
    if (t.category == Category::Gradient) {
      ++parameter_gradients;
      ASSERT_FALSE(t.gradient_of->empty()) << t.name;
      for (int v : *t.gradient_of) {
        const GraphValue& value = p.values[v];
        ASSERT_GE(value.producer_node, 0) << value.name;
        EXPECT_EQ(p.nodes[value.producer_node].kind, "prim::GetAttr") << value.name;
        EXPECT_EQ(value.bytes, t.bytes) << value.name;
      }
    }
    const bool made_in_backward = t.alloc_step >= 0 && p.steps[t.alloc_step].phase == Phase::Backward;
    if (made_in_backward && p.steps[t.alloc_step].op == "ReluBackward0") {
      ++relu_gradients;
      const int relu = p.steps[t.alloc_step].node;
      ASSERT_GE(relu, 0);
      EXPECT_EQ(*t.gradient_of, p.nodes[relu].reads) << "made by " << p.nodes[relu].kind;
    }
    if (!made_in_backward) {
      EXPECT_TRUE(t.gradient_of->empty()) << t.name;
    }
  }
  EXPECT_EQ(parameter_gradients, 10);  // five linears' weights and biases
  EXPECT_EQ(relu_gradients, 4);
}

// The gradient hooks read pointers and keep no tensor longer: the same step
// recorded without them says the same of every storage and step, on models
// whose backward sums gradients (residual streams, concatenations, an LSTM
// cell's state, a view written in place).
TEST(Recorder, GradientHooksChangeNothingElseTheProfileSays) {
  for (const char* model : {"gpt_scripted.pt", "densenet_like_traced.pt", "lstm_cell_lm_traced.pt",
                            "inplace_view_traced.pt"}) {
    RecordOptions options;
    options.model_path = testModel(model);
    options.run.measured_iters = 1;
    const Profile with = recordProfile(options);
    options.record_gradients = false;
    const Profile without = recordProfile(options);
    ASSERT_EQ(with.tensors.size(), without.tensors.size()) << model;
    int named = 0;
    for (size_t i = 0; i < with.tensors.size(); ++i) {
      const TensorRecord &a = with.tensors[i], &b = without.tensors[i];
      EXPECT_TRUE(a.bytes == b.bytes && a.alloc_event == b.alloc_event && a.free_event == b.free_event &&
                  a.category == b.category && a.users == b.users && a.saved_by == b.saved_by)
          << model << ": tensor " << i << " " << a.name;
      EXPECT_FALSE(b.gradient_of.has_value()) << model;
      named += a.gradient_of && !a.gradient_of->empty();
    }
    EXPECT_GT(named, 0) << model;
    ASSERT_EQ(with.steps.size(), without.steps.size()) << model;
    for (size_t s = 0; s < with.steps.size(); ++s) EXPECT_EQ(with.steps[s].node, without.steps[s].node) << model;
    EXPECT_EQ(with.summary.peak_bytes, without.summary.peak_bytes) << model;
  }
}

// What a forward returns in a tuple or a dict is the model's output, not an
// activation: recompute cannot drop it, and the planner must not count on it.
// The forward-made tensors of category Output are exactly the returned ones.
TEST(Recorder, TupleAndDictOutputsAreCategorisedAsOutputs) {
  const std::vector<std::pair<std::string, std::vector<std::vector<int64_t>>>> models = {
      {"tuple_out_scripted.pt", {{1024, 128}, {1024, 10}}},        // (logits, features)
      {"transformer_dict_scripted.pt", {{8, 64, 64}, {8, 64, 128}}},  // {"logits", "hidden"}
  };
  for (const auto& [model, returned] : models) {
    const Profile p = profileOf(model);
    std::vector<std::vector<int64_t>> outputs;
    for (const TensorRecord& t : p.tensors)
      if (t.category == Category::Output && t.producer_node >= 0) outputs.push_back(t.shape);
    std::vector<std::vector<int64_t>> expected = returned;
    std::sort(outputs.begin(), outputs.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(outputs, expected) << model;
  }
}

class EveryReferenceModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryReferenceModel, CategoriesSumToAllocatorBytesAtEveryStep) {
  const Profile p = profileOf(GetParam(), "sgd");
  int64_t static_bytes = 0;
  for (const TensorRecord& t : p.tensors)
    if (t.alloc_event < 0) static_bytes += t.bytes;
  ASSERT_GT(p.steps.size(), 10u);
  for (const Step& step : p.steps) {
    // What the categories gained since the start equals what the allocator's own
    // counter gained: no allocation is lost or counted twice.
    EXPECT_EQ(total(step.bytes_at_end) - static_bytes, step.allocator_bytes - p.meta.allocator_bytes_at_start)
        << "step " << step.index << " " << step.op;
    EXPECT_EQ(step.peak_bytes - static_bytes, step.allocator_peak_bytes - p.meta.allocator_bytes_at_start)
        << "step " << step.index << " " << step.op;
  }
  EXPECT_EQ(p.summary.peak_bytes - static_bytes, p.summary.allocator_peak_bytes - p.meta.allocator_bytes_at_start);
  // The peak's breakdown, category by category, is what the tensor records
  // say is live at the peak, counted here from their intervals (after event
  // e: allocated at or before it, not yet freed), and those categories add up
  // to what the allocator's counter saw at its peak.
  CategoryBytes at_peak{};
  int64_t most = -1;
  for (int e = -1; e < p.event_count; ++e) {
    CategoryBytes live{};
    for (const TensorRecord& t : p.tensors)
      if (t.alloc_event <= e && (t.free_event < 0 || t.free_event > e)) live[static_cast<int>(t.category)] += t.bytes;
    if (total(live) > most) {
      most = total(live);
      at_peak = live;
    }
  }
  EXPECT_EQ(p.summary.peak_breakdown, at_peak);
  EXPECT_EQ(total(at_peak) - static_bytes, p.summary.allocator_peak_bytes - p.meta.allocator_bytes_at_start);
}

TEST_P(EveryReferenceModel, NodesThatSaveTensorsAreLinkedToTheirBackwardWork) {
  const Profile p = profileOf(GetParam());
  int activations = 0;
  for (const TensorRecord& t : p.tensors) {
    if (t.category != Category::Activation) continue;
    ++activations;
    ASSERT_GE(t.producer_node, 0);
    // Whoever saved it for backward released it: the backward step that freed it
    // must be linked to a forward node that made or read it. (The maker itself
    // may have no backward, e.g. a boolean mask saved by masked_fill.)
    ASSERT_GE(t.free_step, 0) << t.name;
    const int releaser = p.steps[t.free_step].node;
    std::set<int> related(t.users.begin(), t.users.end());
    related.insert(t.producer_node);
    EXPECT_TRUE(related.count(releaser)) << t.name << " freed by " << p.steps[t.free_step].op;
    // The saves the recorder saw say the same: one was released where it was
    // freed, and each was made by its maker, a reader, or the loss.
    ASSERT_TRUE(t.saved_by.has_value()) << t.name;
    bool released_at_free = false;
    for (const TensorRecord::SavedBy& by : *t.saved_by) {
      released_at_free = released_at_free || by.release_step == t.free_step;
      EXPECT_TRUE(by.node == -1 || related.count(by.node)) << t.name << " saved by node " << by.node;
    }
    EXPECT_TRUE(released_at_free) << t.name << " freed at step " << t.free_step << " by no release of a save";
  }
  EXPECT_GT(activations, 0);
  for (const ForwardNode& n : p.nodes)
    for (int s : n.backward_steps) EXPECT_EQ(p.steps[s].phase, Phase::Backward);
}

TEST_P(EveryReferenceModel, StepsCoverTheIterationInPhaseOrder) {
  const Profile p = profileOf(GetParam(), "adam");
  int last_phase = 0;
  for (const Step& step : p.steps) {
    EXPECT_GE(static_cast<int>(step.phase), last_phase) << step.index;
    last_phase = static_cast<int>(step.phase);
  }
  EXPECT_EQ(p.steps.back().phase, Phase::Optimizer);
  // Adam keeps two moments per parameter: exactly twice the weights' bytes of
  // trainable parameters, i.e. twice the gradients.
  EXPECT_EQ(bytesIn(p, Category::OptimizerState), 2 * bytesIn(p, Category::Gradient));
}

INSTANTIATE_TEST_SUITE_P(Models, EveryReferenceModel,
                         ::testing::Values("mlp_traced.pt", "mlp_scripted.pt", "cnn_traced.pt", "cnn_scripted.pt",
                                           "resnet18_traced.pt", "resnet18_scripted.pt", "gpt_traced.pt",
                                           "gpt_scripted.pt", "bert_traced.pt", "bert_scripted.pt"),
                         [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.size() - 3);
                           return name;
                         });

// acprof-torch's host allocator: a 64 MiB tensor's memory comes from the heap
// (glibc would mmap it fresh, page faults in the op that first writes it) and
// stays there when freed (glibc would unmap it, or trim the heap's top), so the
// next step's tensors reuse it without faults.
TEST(RunModes, KeptHostMemoryIsNeitherMappedPerAllocationNorGivenBack) {
  keepFreedHostMemory();
  constexpr size_t kBytes = size_t{64} << 20;
  const struct mallinfo2 before = mallinfo2();
  void* block = std::malloc(kBytes);
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBytes);
  const struct mallinfo2 held = mallinfo2();
  EXPECT_EQ(held.hblkhd, before.hblkhd) << "the block was mmap'd";
  // In use in the heap (the arena need not grow: a test before this one may have left free space there).
  EXPECT_GE(held.uordblks, before.uordblks + kBytes) << "the block is not in the heap";
  std::free(block);
  const struct mallinfo2 freed = mallinfo2();
  EXPECT_EQ(freed.arena, held.arena) << "freed memory went back to the system";
  EXPECT_GE(freed.fordblks, held.fordblks + kBytes) << "the block is not free for reuse";
}

// A recording runs at its config's intra-op thread count (CPU workspaces are
// sized by it) and gives the caller's count back: a library caller that
// profiles at one thread and then trains at its own must not be left at one.
TEST(RunModes, TheRecorderRunsAtItsThreadCountAndRestoresTheCallers) {
  const int callers = intraOpThreads();
  const int requested = callers == 1 ? 2 : 1;
  RecordOptions options;
  options.model_path = testModel("mlp_traced.pt");
  options.run.measured_iters = 1;
  options.run.intra_op_threads = requested;
  const Profile p = recordProfile(options);
  EXPECT_EQ(p.meta.run.intra_op_threads, requested);
  EXPECT_EQ(intraOpThreads(), callers);
  options.run.intra_op_threads = -1;
  EXPECT_THROW(recordProfile(options), RecordError);
  EXPECT_EQ(intraOpThreads(), callers);
}

}  // namespace
}  // namespace acprof
