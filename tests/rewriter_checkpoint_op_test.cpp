// The checkpoint operator recomputes a segment in backward and must give the
// same loss, gradients and buffers as running the segment's ops directly.
#include <gtest/gtest.h>

#include <sstream>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/runtime/operator.h>
#include <torch/script.h>

#include <c10/util/ThreadLocalDebugInfo.h>
#include <c10/core/Allocator.h>

#include "acprof/torch_compat.h"
#include "ops/checkpoint_op.h"
#include "ops/segment.h"

namespace acprof {
namespace {

const char* kDropoutSegment = R"IR(
graph(%x : Tensor, %w : Tensor):
  %p : float = prim::Constant[value=0.5]()
  %train : bool = prim::Constant[value=1]()
  %h : Tensor = aten::matmul(%x, %w)
  %r : Tensor = aten::relu(%h)
  %d : Tensor = aten::dropout(%r, %p, %train)
  return (%d, %h)
)IR";

// Inputs 3 and 4 are the running statistics, written in place.
const char* kBatchNormSegment = R"IR(
graph(%x : Tensor, %weight : Tensor, %bias : Tensor, %mean : Tensor, %var : Tensor):
  %train : bool = prim::Constant[value=1]()
  %momentum : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::batch_norm(%x, %weight, %bias, %mean, %var, %train, %momentum, %eps, %cudnn)
  %z : Tensor = aten::tanh(%y)
  return (%z)
)IR";

// Branches on whether its two arguments are one tensor object, as
// nn.MultiheadAttention does on `query is key`: x*x when they are, x+x if not.
const char* kIdentityBranchSegment = R"IR(
graph(%a : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %same : bool = aten::__is__(%a, %b)
  %y : Tensor = prim::If(%same)
    block0():
      %p : Tensor = aten::mul(%a, %b)
      -> (%p)
    block1():
      %q : Tensor = aten::add(%a, %b, %one)
      -> (%q)
  return (%y)
)IR";

// Calls acprof::checkpoint the way a rewritten model's interpreter does: through the operator registry.
std::vector<at::Tensor> callCheckpointOp(const c10::intrusive_ptr<Segment>& segment,
                                         const std::vector<at::Tensor>& inputs) {
  const auto operators = torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(kCheckpointOpName));
  EXPECT_EQ(operators.size(), 1u);
  torch::jit::Stack stack{c10::IValue(segment), c10::IValue(inputs)};
  operators.at(0)->getOperation()(stack);
  return stack.at(0).toTensorVector();
}

at::Tensor lossOf(const std::vector<at::Tensor>& outputs) {
  at::Tensor loss = outputs[0].pow(2).sum();
  for (size_t i = 1; i < outputs.size(); ++i) loss = loss + outputs[i].sum() * 0.25;
  return loss;
}

void expectBitwiseEqual(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what;
  ASSERT_TRUE(expected.defined()) << what;
  EXPECT_TRUE(actual.equal(expected)) << what << ": max abs diff "
                                      << (actual - expected).abs().max().item<double>();
}

struct Leaves {
  at::Tensor x;
  at::Tensor w;
};
Leaves makeLeaves() {
  at::manual_seed(7);
  return {at::randn({16, 32}).requires_grad_(), at::randn({32, 24}).requires_grad_()};
}

TEST(CheckpointOp, OutputsCarryTheCheckpointGradFn) {
  const auto segment = c10::make_intrusive<Segment>(kDropoutSegment, std::vector<int64_t>{});
  const Leaves leaves = makeLeaves();
  const auto outputs = callCheckpointOp(segment, {leaves.x, leaves.w});
  ASSERT_EQ(outputs.size(), 2u);
  ASSERT_NE(outputs[0].grad_fn(), nullptr);
  EXPECT_NE(outputs[0].grad_fn()->name().find("CheckpointFunction"), std::string::npos)
      << outputs[0].grad_fn()->name();
}

TEST(CheckpointOp, DropoutGradientsEqualUncheckpointedBitwise) {
  const auto segment = c10::make_intrusive<Segment>(kDropoutSegment, std::vector<int64_t>{});

  // Reference: the same ops run with autograd recording everything.
  const Leaves reference = makeLeaves();
  at::manual_seed(123);
  const at::Tensor reference_loss = lossOf(segment->run({reference.x, reference.w}));
  // Draws between forward and backward move the generator; the recompute must not see that.
  const at::Tensor reference_noise = at::rand({1000});
  reference_loss.backward();
  const at::Tensor reference_after = at::rand({8});

  const Leaves checkpointed = makeLeaves();
  at::manual_seed(123);
  const at::Tensor loss = lossOf(callCheckpointOp(segment, {checkpointed.x, checkpointed.w}));
  const at::Tensor noise = at::rand({1000});
  loss.backward();
  const at::Tensor after = at::rand({8});

  expectBitwiseEqual(loss, reference_loss, "loss");
  expectBitwiseEqual(checkpointed.x.grad(), reference.x.grad(), "grad of x");
  expectBitwiseEqual(checkpointed.w.grad(), reference.w.grad(), "grad of w");
  // The recompute replays the saved RNG state and then puts the current one back.
  expectBitwiseEqual(noise, reference_noise, "draw between forward and backward");
  expectBitwiseEqual(after, reference_after, "draw after backward");
}

TEST(CheckpointOp, OneTensorPassedTwiceStaysOneObjectInForwardAndRecompute) {
  const auto segment = c10::make_intrusive<Segment>(kIdentityBranchSegment, std::vector<int64_t>{});
  at::manual_seed(5);
  const at::Tensor reference_x = at::randn({8}).requires_grad_();
  const at::Tensor reference_loss = segment->run({reference_x, reference_x}).at(0).sum();
  reference_loss.backward();
  // The branch taken on one object: d(x*x)/dx = 2x. Distinct objects would give x+x, gradient 2.
  expectBitwiseEqual(reference_x.grad(), reference_x.detach() * 2, "reference takes the x*x branch");

  const at::Tensor x = reference_x.detach().clone().requires_grad_();
  const at::Tensor loss = callCheckpointOp(segment, {x, x}).at(0).sum();
  loss.backward();
  expectBitwiseEqual(loss, reference_loss, "loss (the forward's branch)");
  // Once, not per argument: the recompute already summed both uses.
  expectBitwiseEqual(x.grad(), reference_x.grad(), "gradient (the recompute's branch)");
}

// Only a segment that asks `is` shares one detached tensor between inputs that
// are one object; the others keep one per input, so the engine adds the uses'
// gradients in the original order. The question is found inside blocks too.
TEST(Segment, KnowsWhetherItComparesIdentity) {
  EXPECT_TRUE(c10::make_intrusive<Segment>(kIdentityBranchSegment, std::vector<int64_t>{})->comparesIdentity());
  EXPECT_FALSE(c10::make_intrusive<Segment>(kDropoutSegment, std::vector<int64_t>{})->comparesIdentity());
  const char* nested = R"IR(
graph(%a : Tensor, %b : Tensor):
  %c : bool = prim::Constant[value=1]()
  %y : Tensor = prim::If(%c)
    block0():
      %same : bool = aten::__isnot__(%a, %b)
      %z : Tensor = prim::If(%same)
        block0():
          -> (%a)
        block1():
          -> (%b)
      -> (%z)
    block1():
      -> (%b)
  return (%y)
)IR";
  EXPECT_TRUE(c10::make_intrusive<Segment>(nested, std::vector<int64_t>{})->comparesIdentity());
}

TEST(CheckpointOp, DropoutMaskIsActuallyRandom) {
  // Guards the test above: with a different seed the loss differs, so equal
  // gradients there come from replaying the RNG state, not from a constant mask.
  const auto segment = c10::make_intrusive<Segment>(kDropoutSegment, std::vector<int64_t>{});
  const Leaves leaves = makeLeaves();
  at::manual_seed(1);
  const at::Tensor first = lossOf(segment->run({leaves.x, leaves.w}));
  at::manual_seed(2);
  const at::Tensor second = lossOf(segment->run({leaves.x, leaves.w}));
  EXPECT_FALSE(first.equal(second));
}

TEST(CheckpointOp, BatchNormRunningStatisticsUpdateExactlyOnce) {
  const auto segment = c10::make_intrusive<Segment>(kBatchNormSegment, std::vector<int64_t>{3, 4});
  auto make_inputs = [] {
    at::manual_seed(3);
    std::vector<at::Tensor> inputs{at::randn({64, 8}).mul(3).add(2).requires_grad_(),
                                   at::rand({8}).add(0.5).requires_grad_(), at::randn({8}).requires_grad_(),
                                   at::zeros({8}), at::ones({8})};
    return inputs;
  };

  const auto reference = make_inputs();
  const at::Tensor reference_loss = lossOf(segment->run(reference));
  reference_loss.backward();

  const auto checkpointed = make_inputs();
  const at::Tensor loss = lossOf(callCheckpointOp(segment, checkpointed));
  loss.backward();

  expectBitwiseEqual(loss, reference_loss, "loss");
  for (size_t i = 0; i < 3; ++i) {
    expectBitwiseEqual(checkpointed[i].grad(), reference[i].grad(), "grad of input " + std::to_string(i));
  }
  expectBitwiseEqual(checkpointed[3], reference[3], "running mean");
  expectBitwiseEqual(checkpointed[4], reference[4], "running var");
  // Independently of both runs: one update with momentum 0.1 from zero is a tenth of the batch mean.
  const at::Tensor batch_mean = checkpointed[0].detach().mean(0);
  EXPECT_TRUE(checkpointed[3].allclose(batch_mean * 0.1, 1e-5, 1e-6))
      << "running mean " << checkpointed[3] << " expected " << batch_mean * 0.1;
}

// Live bytes of the CPU allocator, as the allocator reports them to a profiler.
class LiveBytesCounter : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void* ptr, int64_t alloc_size, compat::AllocatorTotal, compat::AllocatorTotal,
                         c10::Device) override {
    live_bytes_ += alloc_size;
    if (alloc_size > 0) allocated_bytes_ += alloc_size;
  }
  bool memoryProfilingEnabled() const override { return true; }
  int64_t liveBytes() const { return live_bytes_; }
  int64_t allocatedBytes() const { return allocated_bytes_; }

 private:
  int64_t live_bytes_ = 0;
  int64_t allocated_bytes_ = 0;
};

// Bytes allocated by `run` and still alive after it returns.
template <typename Run>
int64_t bytesKeptBy(Run run) {
  auto counter = std::make_shared<LiveBytesCounter>();
  c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, counter);
  run();
  return counter->liveBytes();
}

TEST(CheckpointOp, ForwardKeepsOnlyItsOutputs) {
  const auto segment = c10::make_intrusive<Segment>(kDropoutSegment, std::vector<int64_t>{});
  at::manual_seed(11);
  const at::Tensor x = at::randn({512, 512}).requires_grad_();
  const at::Tensor w = at::randn({512, 512}).requires_grad_();
  const int64_t output_bytes = 2 * 512 * 512 * static_cast<int64_t>(sizeof(float));  // %d and %h

  std::vector<at::Tensor> reference_outputs;
  const int64_t reference_kept = bytesKeptBy([&] { reference_outputs = segment->run({x, w}); });
  std::vector<at::Tensor> outputs;
  const int64_t checkpoint_kept = bytesKeptBy([&] { outputs = callCheckpointOp(segment, {x, w}); });

  // Without checkpoint autograd keeps the relu output and the dropout mask too.
  EXPECT_GE(reference_kept, output_bytes + 2 * 512 * 512);
  // With it: the outputs, plus the saved RNG state (a few KiB), nothing of the segment's insides.
  EXPECT_GE(checkpoint_kept, output_bytes);
  EXPECT_LE(checkpoint_kept, output_bytes + 16 * 1024) << "checkpoint kept " << checkpoint_kept << " bytes";
}

// %key is made from %memory alone (a transpose of a batch input, as
// nn.TransformerDecoder's cross-attention does), %y from both; %z reads %m
// after an in-place write of %x into it, through a view taken before the write;
// %n is carried through a loop that adds %x to it on every turn.
const char* kMixedGradSegment = R"IR(
graph(%x : Tensor, %memory : Tensor):
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %three : int = prim::Constant[value=3]()
  %true : bool = prim::Constant[value=1]()
  %key : Tensor = aten::transpose(%memory, %zero, %one)
  %y : Tensor = aten::mm(%x, %key)
  %m : Tensor = aten::clone(%memory, %zero)
  %view : Tensor = aten::select(%m, %zero, %zero)
  %written : Tensor = aten::add_(%m, %x, %one)
  %z : Tensor = aten::mul(%view, %three)
  %start : Tensor = aten::clone(%memory, %zero)
  %n : Tensor = prim::Loop(%three, %true, %start)
    block0(%i : int, %carried : Tensor):
      %next : Tensor = aten::add(%carried, %x, %one)
      -> (%true, %next)
  %size : int = aten::size(%x, %zero)
  %count : Tensor = prim::NumToTensor(%size)
  return (%key, %y, %z, %n, %count)
)IR";

TEST(Segment, KnowsWhichOutputsMayNeedGrad) {
  const Segment segment(kMixedGradSegment, {});
  EXPECT_EQ(segment.outputsThatMayNeedGrad({true, false}), (std::vector<bool>{false, true, true, true, false}));
  EXPECT_EQ(segment.outputsThatMayNeedGrad({false, true}), (std::vector<bool>{true, true, true, true, false}));
  EXPECT_EQ(segment.outputsThatMayNeedGrad({false, false}), (std::vector<bool>(5, false)));
}

// An output computed only from tensors without grad has no history after the
// checkpoint either, so a later segment does not differentiate towards it.
TEST(CheckpointOp, OutputMadeWithoutGradCarriesNoHistory) {
  const auto segment = c10::make_intrusive<Segment>(kMixedGradSegment, std::vector<int64_t>{});
  const at::Tensor x = at::randn({4, 4}).requires_grad_();
  const at::Tensor memory = at::randn({4, 4});
  const std::vector<at::Tensor> outputs = callCheckpointOp(segment, {x, memory});
  const std::vector<at::Tensor> reference = segment->run({x, memory});
  ASSERT_EQ(outputs.size(), reference.size());
  for (size_t o = 0; o < outputs.size(); ++o)
    EXPECT_EQ(outputs[o].requires_grad(), reference[o].requires_grad()) << "output " << o;
}

// Backward gets no gradient for an output the loss does not use; it must not
// allocate a zero tensor of that output's shape in its place.
TEST(CheckpointOp, BackwardAllocatesNothingForOutputsWithoutGradient) {
  const char* ir = R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %y : Tensor = aten::mul(%x, %two)
  %unused : Tensor = aten::mul(%x, %three)
  return (%y, %unused)
)IR";
  const auto segment = c10::make_intrusive<Segment>(ir, std::vector<int64_t>{});
  const at::Tensor x = at::randn({512, 512}).requires_grad_();
  const int64_t tensor_bytes = 512 * 512 * static_cast<int64_t>(sizeof(float));
  const std::vector<at::Tensor> outputs = callCheckpointOp(segment, {x});
  const at::Tensor loss = outputs[0].sum();
  auto counter = std::make_shared<LiveBytesCounter>();
  {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, counter);
    loss.backward();
  }
  // The recompute's two outputs and the gradient of x; a zero-filled gradient
  // for %unused would be a fourth.
  EXPECT_LT(counter->allocatedBytes(), 3 * tensor_bytes + tensor_bytes / 2)
      << "backward allocated " << counter->allocatedBytes() << " bytes";
}

TEST(Segment, PicklesInsideAModuleAndLoadsBack) {
  const auto segment = c10::make_intrusive<Segment>(kBatchNormSegment, std::vector<int64_t>{3, 4});
  torch::jit::Module module("acprof_test.Holder");
  module.register_attribute("segment", c10::getCustomClassType<c10::intrusive_ptr<Segment>>(),
                            c10::IValue(segment));
  std::stringstream archive;
  module.save(archive);
  torch::jit::Module loaded = torch::jit::load(archive);
  const auto restored = loaded.attr("segment").toCustomClass<Segment>();
  EXPECT_EQ(restored->graphIr(), segment->graphIr());
  EXPECT_EQ(restored->writtenInputs(), segment->writtenInputs());
  EXPECT_EQ(restored->inputCount(), 5u);
  EXPECT_EQ(restored->outputCount(), 1u);
}

TEST(Segment, RefusesNonTensorInputs) {
  const char* ir = R"IR(
graph(%x : Tensor, %n : int):
  %y : Tensor = aten::mul(%x, %n)
  return (%y)
)IR";
  EXPECT_THROW(Segment(ir, {}), c10::Error);
}

TEST(Segment, RefusesOutOfRangeWrittenInput) {
  EXPECT_THROW(Segment(kDropoutSegment, {2}), c10::Error);
}

}  // namespace
}  // namespace acprof
