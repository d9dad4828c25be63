// Graph surgery on small TorchScript models written here with Module::define:
// the rewritten model saves, loads and trains exactly like the original, and
// plans that do not fit the model are refused before anything is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <tuple>

#include <ATen/Context.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/library.h>
#include <torch/script.h>

#include "acprof/cut_facts.h"
#include "acprof/cut_rules.h"
#include "acprof/forward_graph.h"
#include "acprof/recorder.h"
#include "acprof/rewriter.h"
#include "acprof/unreproducible_step.h"
#include "test_support.h"

namespace acprof {
namespace {

namespace fs = std::filesystem;
using acprof::testing::makeScratchDir;

class GraphSurgery : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = makeScratchDir("surgery_" +
                                std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }
  void TearDown() override { fs::remove_all(directory_); }
  std::string path(const std::string& name) const { return (directory_ / name).string(); }

  fs::path directory_;
};

// Linear -> batch norm -> relu -> dropout -> linear, as TorchScript source.
torch::jit::Module makeDropoutBatchNormModel() {
  at::manual_seed(0);
  torch::jit::Module module("acprof_test.DropoutBatchNorm");
  module.register_parameter("w1", (at::randn({32, 64}) * 0.2).requires_grad_(), false);
  module.register_parameter("b1", (at::randn({64})).requires_grad_(), false);
  module.register_parameter("bn_weight", (at::rand({64}) + 0.5).requires_grad_(), false);
  module.register_parameter("bn_bias", (at::randn({64})).requires_grad_(), false);
  module.register_buffer("running_mean", at::zeros({64}));
  module.register_buffer("running_var", at::ones({64}));
  module.register_parameter("w2", (at::randn({64, 10}) * 0.2).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w1) + self.b1
    h = torch.batch_norm(h, self.bn_weight, self.bn_bias, self.running_mean, self.running_var, True, 0.1, 1e-5, False)
    h = torch.relu(h)
    h = torch.dropout(h, 0.3, True)
    n = h.size(0)
    y = torch.matmul(h, self.w2)
    return torch.tanh(y.reshape([n, 10]))
)JIT");
  return module;
}

// Two convolutions whose bias is Optional[Tensor]: absent in the first, set in the second.
torch::jit::Module makeOptionalBiasConvModel() {
  at::manual_seed(1);
  torch::jit::Module module("acprof_test.OptionalBiasConv");
  module.register_parameter("weight1", (at::randn({8, 3, 3, 3}) * 0.3).requires_grad_(), false);
  module.register_attribute("bias1", c10::OptionalType::ofTensor(), c10::IValue(), /*is_param=*/false);
  module.register_parameter("weight2", (at::randn({4, 8, 3, 3}) * 0.3).requires_grad_(), false);
  module.register_attribute("bias2", c10::OptionalType::ofTensor(), at::randn({4}).requires_grad_(), /*is_param=*/true);
  module.define(R"JIT(
def forward(self, x):
    h = torch.conv2d(x, self.weight1, self.bias1, [1, 1], [1, 1], [1, 1], 1)
    h = torch.relu(h)
    h = torch.conv2d(h, self.weight2, self.bias2, [1, 1], [1, 1], [1, 1], 1)
    return torch.sigmoid(h).sum()
)JIT");
  return module;
}

int nodeIdOf(const torch::jit::Module& module, const std::string& kind, int occurrence = 0) {
  auto graph = inlinedForwardGraph(module);
  const auto nodes = topLevelNodes(*graph);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->kind().toQualString() == kind && occurrence-- == 0) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no node " << kind << " in " << *graph;
  return -1;
}

// A segment as the planner would write it: its boundary drawn by the cut rules
// over the model's own graph facts.
SegmentCut segmentBetween(const torch::jit::Module& module, int first, int last) {
  const auto graph = inlinedForwardGraph(module);
  const GraphCutFacts facts = describeCutFacts(module, graph);
  const CutRules rules(facts.nodes, facts.values, facts.graph_outputs);
  SegmentCut cut;
  cut.first_node = first;
  cut.last_node = last;
  if (first < 0 || last >= static_cast<int>(facts.nodes.size()) || !rules.problem(first, last).empty()) return cut;
  const SegmentBoundary boundary = rules.boundary(first, last);
  for (int v : boundary.inputs) cut.input_values.push_back(facts.values[v].name);
  for (int v : boundary.outputs) cut.output_values.push_back(facts.values[v].name);
  for (int v : boundary.replayed_inputs) cut.replayed_inputs.push_back(facts.values[v].name);
  return cut;
}

Plan planFor(const std::string& model_path, std::vector<SegmentCut> segments) {
  Plan plan;
  plan.model_path = model_path;
  plan.model_sha256 = sha256OfFile(model_path);
  plan.segments = std::move(segments);
  return plan;
}

StepConfig stepConfig(const std::vector<std::string>& specs) {
  StepConfig config;
  for (const auto& spec : specs) config.inputs.push_back(parseInputSpec(spec));
  config.run.seed = 42;
  return config;
}

// Saves `rewritten` to `rewritten_path` and verifies one training step of it against the model
// at `original_path`, on inputs of `specs`.
VerificationResult saveAndVerify(const torch::jit::Module& rewritten, const std::string& original_path,
                                 const std::string& rewritten_path, const std::vector<std::string>& specs) {
  rewritten.save(rewritten_path);
  return verifyRewrite(original_path, rewritten_path, stepConfig(specs));
}

size_t countKind(const torch::jit::Graph& graph, const std::string& kind) {
  size_t count = 0;
  for (const torch::jit::Node* node : graph.nodes()) count += node->kind().toQualString() == kind;
  return count;
}

TEST_F(GraphSurgery, DropoutBatchNormSegmentTrainsBitwiseLikeTheOriginal) {
  makeDropoutBatchNormModel().save(path("model.pt"));
  torch::jit::Module original = torch::jit::load(path("model.pt"));
  const int first = nodeIdOf(original, "aten::matmul");
  const int last = nodeIdOf(original, "aten::matmul", 1);
  const Plan plan = planFor(path("model.pt"), {segmentBetween(original, first, last)});

  torch::jit::Module rewritten = checkpointedModel(path("model.pt"), plan);
  const auto graph = rewritten.get_method("forward").graph();
  EXPECT_EQ(countKind(*graph, "acprof::checkpoint"), 1u) << *graph;
  EXPECT_EQ(countKind(*graph, "aten::dropout"), 0u) << *graph;
  EXPECT_EQ(countKind(*graph, "aten::batch_norm"), 0u) << *graph;

  const VerificationResult result =
      saveAndVerify(rewritten, path("model.pt"), path("model.ckpt.pt"), {"float32[16,32]"});
  EXPECT_TRUE(result.bitwise_equal) << "loss " << result.loss_abs_diff << " grads " << result.max_gradient_abs_diff
                                    << " buffers " << result.max_buffer_abs_diff;
  EXPECT_EQ(result.gradients_compared, 5u);
  EXPECT_EQ(result.buffers_compared, 2u);
}

// An early return leaves the rest of forward in one branch, which the graph
// splits into one branch per piece (forward_graph.cpp). A segment of pieces
// trains bit for bit, and when the early return is taken the pieces hand the
// checkpoint placeholders: the rewritten model still returns what the original does.
TEST_F(GraphSurgery, SegmentsOfAnEarlyReturnsPiecesTrainBitwiseAndStillReturnEarly) {
  at::manual_seed(2);
  torch::jit::Module module("acprof_test.EarlyReturn");
  module.register_parameter("w1", (at::randn({16, 16}) * 0.3).requires_grad_(), false);
  module.register_parameter("w2", (at::randn({16, 16}) * 0.3).requires_grad_(), false);
  module.register_parameter("w3", (at::randn({16, 8}) * 0.3).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    if bool(x.abs().sum() > 1e6):
        return x
    h = torch.relu(torch.matmul(x, self.w1))
    h = torch.tanh(torch.matmul(h, self.w2))
    return torch.sigmoid(torch.matmul(h, self.w3))
)JIT");
  module.save(path("model.pt"));
  torch::jit::Module original = torch::jit::load(path("model.pt"));
  // Pieces: matmul, relu, matmul, tanh, matmul, sigmoid; the segment takes relu .. tanh.
  const int first = nodeIdOf(original, "prim::If", 1);
  const int last = nodeIdOf(original, "prim::If", 3);
  const SegmentCut cut = segmentBetween(original, first, last);
  ASSERT_FALSE(cut.input_values.empty());
  torch::jit::Module rewritten = checkpointedModel(path("model.pt"), planFor(path("model.pt"), {cut}));
  EXPECT_EQ(countKind(*rewritten.get_method("forward").graph(), "acprof::checkpoint"), 1u);

  const VerificationResult result =
      saveAndVerify(rewritten, path("model.pt"), path("model.ckpt.pt"), {"float32[4,16]"});
  EXPECT_TRUE(result.bitwise_equal) << "loss " << result.loss_abs_diff << " grads " << result.max_gradient_abs_diff;

  torch::jit::Module loaded = torch::jit::load(path("model.ckpt.pt"));
  const at::Tensor large = at::full({4, 16}, 1e6);
  for (const bool grad : {true, false}) {
    const at::AutoGradMode mode(grad);
    const at::Tensor expected = original.forward({large}).toTensor();
    const at::Tensor actual = loaded.forward({large}).toTensor();
    EXPECT_TRUE(at::equal(expected, actual)) << "grad mode " << grad;
  }
}

TEST_F(GraphSurgery, VerificationSeesADifferentModel) {
  // Guards the test above: the comparison does fail for a model that computes something else.
  makeDropoutBatchNormModel().save(path("model.pt"));
  torch::jit::Module other = makeDropoutBatchNormModel();
  {
    const at::NoGradGuard no_grad;
    other.attr("w2").toTensor().mul_(1.001);
  }
  const VerificationResult result = saveAndVerify(other, path("model.pt"), path("other.pt"), {"float32[16,32]"});
  EXPECT_FALSE(result.bitwise_equal);
  EXPECT_GT(result.max_gradient_abs_diff, 0);
  // The original agrees with itself, so the difference is the other model's.
  EXPECT_FALSE(result.original_difference) << result.original_difference->what;
}

// Two steps that differ are told apart by the first value in the verification's
// order (loss, gradients by parameter, buffers), bit for bit or beyond a
// tolerance: what a non-reproducible original is reported by.
TEST(StepDifference, TheFirstValueThatDiffersIsNamedWithItsDifference) {
  StepOutcome first;
  first.loss = at::tensor({1.0f});
  first.gradients = {{"fc.weight", at::tensor({1.0f, 2.0f})}, {"fc.bias", at::tensor({3.0f})}};
  first.buffers = {{"bn.running_mean", at::tensor({0.5f})}};
  StepOutcome second = first;
  EXPECT_FALSE(firstDifference(first, second, std::nullopt));

  second.gradients[1].second = at::tensor({3.25f});
  second.buffers[0].second = at::tensor({0.75f});
  const std::optional<StepDifference> bits = firstDifference(first, second, std::nullopt);
  ASSERT_TRUE(bits);
  EXPECT_EQ(bits->what, "the gradient of 'fc.bias'");
  EXPECT_EQ(bits->parameter, "fc.bias");
  EXPECT_DOUBLE_EQ(bits->abs_diff, 0.25);
  // Within a tolerance of 0.3 the gradient agrees, and the buffer is next.
  const std::optional<StepDifference> tolerated = firstDifference(first, second, 0.3);
  EXPECT_FALSE(tolerated) << tolerated->what;
  const std::optional<StepDifference> buffer = firstDifference(first, second, 0.1);
  ASSERT_TRUE(buffer);
  EXPECT_EQ(buffer->what, "the gradient of 'fc.bias'");
  second.gradients[1].second = first.gradients[1].second;
  const std::optional<StepDifference> only_buffer = firstDifference(first, second, 0.1);
  ASSERT_TRUE(only_buffer);
  EXPECT_EQ(only_buffer->what, "buffer 'bn.running_mean'");
  EXPECT_EQ(only_buffer->parameter, "");
}

// A model whose loss is NaN on its inputs (random weights, too small an input)
// rewrites into one whose loss is the same NaN: the bits are compared, so that
// is "bit for bit", while a NaN on one side only is a difference.
TEST_F(GraphSurgery, VerificationComparesBitsSoEqualNaNsAreEqual) {
  const auto nan_model = [](double scale) {
    at::manual_seed(3);
    torch::jit::Module module("acprof_test.NaNLoss");
    module.register_parameter("w", (at::randn({8, 8}) * scale).requires_grad_(), false);
    module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    return torch.sqrt(h).sum()
)JIT");
    return module;
  };
  nan_model(1.0).save(path("model.pt"));
  nan_model(1.0).save(path("same.pt"));
  const VerificationResult same = verifyRewrite(path("model.pt"), path("same.pt"), stepConfig({"float32[4,8]"}));
  EXPECT_TRUE(same.bitwise_equal);
  EXPECT_EQ(same.maxAbsDiff(), 0);

  torch::jit::Module finite("acprof_test.FiniteLoss");
  finite.register_parameter("w", at::randn({8, 8}).requires_grad_(), false);
  finite.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    return torch.sqrt(h * h + 1).sum()
)JIT");
  const VerificationResult other = saveAndVerify(finite, path("model.pt"), path("finite.pt"), {"float32[4,8]"});
  EXPECT_FALSE(other.bitwise_equal);
  EXPECT_EQ(other.maxAbsDiff(), std::numeric_limits<double>::infinity());
}

// An nn.Embedding(sparse=True) gets a sparse gradient, which the comparison's
// dense ops cannot take: it is compared by its values, so a rewrite with a
// segment after the lookup verifies bit for bit, and a different table does not.
TEST_F(GraphSurgery, SparseGradientsAreComparedByTheirValues) {
  const auto sparse_model = [](double scale) {
    at::manual_seed(4);
    torch::jit::Module module("acprof_test.SparseEmbedding");
    module.register_parameter("table", (at::randn({50, 16}) * scale).requires_grad_(), false);
    module.register_parameter("w", (at::randn({16, 16}) * 0.3).requires_grad_(), false);
    module.define(R"JIT(
def forward(self, tokens):
    h = torch.embedding(self.table, tokens, -1, False, True).mean(1)
    h = torch.relu(torch.matmul(h, self.w))
    h = torch.tanh(torch.matmul(h, self.w))
    return torch.sigmoid(torch.matmul(h, self.w))
)JIT");
    return module;
  };
  sparse_model(1.0).save(path("model.pt"));
  torch::jit::Module original = torch::jit::load(path("model.pt"));
  const SegmentCut cut = segmentBetween(original, nodeIdOf(original, "aten::relu"), nodeIdOf(original, "aten::tanh"));
  ASSERT_FALSE(cut.input_values.empty());
  checkpointedModel(path("model.pt"), planFor(path("model.pt"), {cut})).save(path("model.ckpt.pt"));
  const StepConfig config = stepConfig({"int64[8,5]:0..50"});
  const VerificationResult result = verifyRewrite(path("model.pt"), path("model.ckpt.pt"), config);
  EXPECT_TRUE(result.bitwise_equal) << "grads " << result.max_gradient_abs_diff;
  EXPECT_EQ(result.maxAbsDiff(), 0);

  sparse_model(1.001).save(path("other.pt"));
  const VerificationResult other = verifyRewrite(path("model.pt"), path("other.pt"), config);
  EXPECT_FALSE(other.bitwise_equal);
  EXPECT_GT(other.max_gradient_abs_diff, 0);
}

// A segment whose output is a view of a tensor made inside it (a narrow of its
// matmul), written in place after the segment, as RAFT's scripted update block
// does: a Function's view outputs may not be written in place, so the
// checkpoint hands it out as a plain tensor on the same storage, and the
// rewritten model trains bit for bit.
TEST_F(GraphSurgery, AViewMadeInsideASegmentMayBeWrittenInPlaceAfterIt) {
  at::manual_seed(4);
  torch::jit::Module module("acprof_test.ViewWrittenLater");
  module.register_parameter("w1", (at::randn({16, 16}) * 0.3).requires_grad_(), false);
  module.register_parameter("w2", (at::randn({8, 4}) * 0.3).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w1) * 2.0
    v = torch.narrow(h, 1, 0, 8)
    v.relu_()
    return torch.sigmoid(torch.matmul(v, self.w2)).sum()
)JIT");
  module.save(path("model.pt"));
  torch::jit::Module original = torch::jit::load(path("model.pt"));
  const SegmentCut cut = segmentBetween(original, nodeIdOf(original, "aten::matmul"), nodeIdOf(original, "aten::narrow"));
  torch::jit::Module rewritten = checkpointedModel(path("model.pt"), planFor(path("model.pt"), {cut}));
  ASSERT_EQ(countKind(*rewritten.get_method("forward").graph(), "acprof::checkpoint"), 1u);
  const VerificationResult result =
      saveAndVerify(rewritten, path("model.pt"), path("model.ckpt.pt"), {"float32[4,16]"});
  EXPECT_TRUE(result.bitwise_equal) << "loss " << result.loss_abs_diff << " grads " << result.max_gradient_abs_diff;
}

// With a tolerance the verdict is the largest difference against it, whichever
// of loss, gradients and buffers it is in; the mode travels with the result.
TEST_F(GraphSurgery, ToleranceVerdictIsTheLargestDifferenceAgainstTheTolerance) {
  makeDropoutBatchNormModel().save(path("model.pt"));
  torch::jit::Module other = makeDropoutBatchNormModel();
  {
    const at::NoGradGuard no_grad;
    other.attr("w2").toTensor().mul_(1.001);
  }
  const VerificationResult bitwise = saveAndVerify(other, path("model.pt"), path("other.pt"), {"float32[16,32]"});
  EXPECT_FALSE(bitwise.tolerance.has_value());
  const double worst = std::max({bitwise.loss_abs_diff, bitwise.max_gradient_abs_diff, bitwise.max_buffer_abs_diff});
  ASSERT_GT(worst, 0);
  EXPECT_EQ(bitwise.maxAbsDiff(), worst);

  const VerificationResult loose = verifyRewrite(path("model.pt"), path("other.pt"), stepConfig({"float32[16,32]"}), worst * 2);
  EXPECT_EQ(loose.tolerance, std::optional<double>(worst * 2));
  EXPECT_TRUE(loose.passed()) << "max diff " << loose.maxAbsDiff();
  EXPECT_FALSE(loose.bitwise_equal);
  const VerificationResult tight = verifyRewrite(path("model.pt"), path("other.pt"), stepConfig({"float32[16,32]"}), worst / 2);
  EXPECT_FALSE(tight.passed()) << "max diff " << tight.maxAbsDiff();

  VerificationResult nan = loose;
  nan.max_buffer_abs_diff = std::numeric_limits<double>::infinity();  // what a NaN difference is recorded as
  EXPECT_FALSE(nan.passed());
}

// Verification turns deterministic algorithms on and cuDNN benchmarking off for
// its two steps, and gives the caller's settings back, whatever they were.
TEST_F(GraphSurgery, VerificationRestoresTheCallersDeterministicAlgorithmsSetting) {
  makeDropoutBatchNormModel().save(path("model.pt"));
  at::Context& context = at::globalContext();
  const bool deterministic = context.deterministicAlgorithms();
  const bool warn_only = context.deterministicAlgorithmsWarnOnly();
  const bool benchmark = context.benchmarkCuDNN();
  for (const auto& [enabled, warn, cudnn_benchmark] : {std::tuple{false, false, true}, std::tuple{true, true, false}}) {
    context.setDeterministicAlgorithms(enabled, warn);
    context.setBenchmarkCuDNN(cudnn_benchmark);
    const VerificationResult result = verifyRewrite(path("model.pt"), path("model.pt"), stepConfig({"float32[16,32]"}));
    EXPECT_TRUE(result.passed());
    EXPECT_EQ(context.deterministicAlgorithms(), enabled);
    EXPECT_EQ(context.deterministicAlgorithmsWarnOnly(), warn);
    EXPECT_EQ(context.benchmarkCuDNN(), cudnn_benchmark);
  }
  context.setDeterministicAlgorithms(deterministic, warn_only);
  context.setBenchmarkCuDNN(benchmark);
}

// An op without a deterministic implementation (put_ without accumulate, on the
// CPU too) cannot be verified bit for bit: a RewriteError that names the op and
// suggests --tolerance; with a tolerance the same model verifies.
TEST_F(GraphSurgery, AnOpWithoutADeterministicImplementationAsksForATolerance) {
  torch::jit::Module module("acprof_test.Put");
  module.register_parameter("w", at::randn({8, 8}).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    h = h.put_(torch.tensor([0, 1]), torch.tensor([1.0, 2.0]))
    return torch.tanh(h)
)JIT");
  module.save(path("put.pt"));
  try {
    verifyRewrite(path("put.pt"), path("put.pt"), stepConfig({"float32[4,8]"}));
    ADD_FAILURE() << "put_ ran under deterministic algorithms";
  } catch (const RewriteError& e) {
    EXPECT_NE(std::string(e.what()).find("put_ does not have a deterministic implementation"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--tolerance"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  EXPECT_FALSE(at::globalContext().deterministicAlgorithms()) << "left on after an error";
  const VerificationResult result = verifyRewrite(path("put.pt"), path("put.pt"), stepConfig({"float32[4,8]"}), 0.0);
  EXPECT_TRUE(result.passed()) << "max diff " << result.maxAbsDiff();
}

TEST_F(GraphSurgery, OptionalConvBiasIsPassedWhenSetAndNoneWhenNot) {
  makeOptionalBiasConvModel().save(path("conv.pt"));
  torch::jit::Module original = torch::jit::load(path("conv.pt"));
  const int first = nodeIdOf(original, "aten::conv2d");
  const int last = nodeIdOf(original, "aten::conv2d", 1);
  torch::jit::Module rewritten = checkpointedModel(path("conv.pt"), planFor(path("conv.pt"), {segmentBetween(original, first, last)}));
  const VerificationResult result =
      saveAndVerify(rewritten, path("conv.pt"), path("conv.ckpt.pt"), {"float32[2,3,12,12]"});
  EXPECT_TRUE(result.bitwise_equal) << "grads differ by " << result.max_gradient_abs_diff;
  EXPECT_EQ(result.gradients_compared, 3u);  // weight1, weight2, bias2
}

TEST_F(GraphSurgery, TwoSegmentsInOneModel) {
  makeOptionalBiasConvModel().save(path("conv.pt"));
  torch::jit::Module original = torch::jit::load(path("conv.pt"));
  const int relu = nodeIdOf(original, "aten::relu");
  const Plan plan = planFor(path("conv.pt"), {segmentBetween(original, nodeIdOf(original, "aten::conv2d"), relu),
                                             segmentBetween(original, relu + 1, nodeIdOf(original, "aten::sigmoid"))});
  torch::jit::Module rewritten = checkpointedModel(path("conv.pt"), plan);
  EXPECT_EQ(countKind(*rewritten.get_method("forward").graph(), "acprof::checkpoint"), 2u);
  const VerificationResult result =
      saveAndVerify(rewritten, path("conv.pt"), path("conv.ckpt.pt"), {"float32[2,3,12,12]"});
  EXPECT_TRUE(result.bitwise_equal) << "grads differ by " << result.max_gradient_abs_diff;
}

TEST_F(GraphSurgery, RefusesAPlanNamingValuesTheModelDoesNotHave) {
  makeDropoutBatchNormModel().save(path("model.pt"));
  torch::jit::Module original = torch::jit::load(path("model.pt"));
  SegmentCut cut = segmentBetween(original, nodeIdOf(original, "aten::matmul"), nodeIdOf(original, "aten::relu"));
  cut.input_values = {"no_such_value"};
  try {
    checkpointedModel(path("model.pt"), planFor(path("model.pt"), {cut}));
    FAIL() << "a plan naming an unknown value was accepted";
  } catch (const RewriteError& e) {
    EXPECT_NE(std::string(e.what()).find("%no_such_value"), std::string::npos) << e.what();
  }
}

TEST_F(GraphSurgery, RefusesNodeIdsBeyondTheGraph) {
  makeDropoutBatchNormModel().save(path("model.pt"));
  EXPECT_THROW(checkpointedModel(path("model.pt"), planFor(path("model.pt"), {segmentBetween(makeDropoutBatchNormModel(), 3, 100000)})),
               RewriteError);
}

TEST_F(GraphSurgery, RefusesInPlaceWriteToAnInputThatIsNotABuffer) {
  torch::jit::Module module("acprof_test.InPlace");
  module.register_parameter("w", (at::randn({8, 8})).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    h.mul_(2.0)
    return torch.relu(h).sum()
)JIT");
  module.save(path("inplace.pt"));
  const int mul = nodeIdOf(module, "aten::mul_");
  try {
    checkpointedModel(path("inplace.pt"), planFor(path("inplace.pt"), {segmentBetween(module, mul, mul + 1)}));
    FAIL() << "an in-place write to a segment input was accepted";
  } catch (const RewriteError& e) {
    EXPECT_NE(std::string(e.what()).find("[write-outside]"), std::string::npos) << e.what();
  }
}

// Control flow that writes nothing outside itself is an ordinary member of a
// segment: the recompute runs the branch again.
TEST_F(GraphSurgery, BranchInsideASegmentTrainsBitwiseLikeTheOriginal) {
  torch::jit::Module module("acprof_test.Branch");
  module.register_parameter("w", (at::randn({8, 8})).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    if bool(h.sum() > 0):
        h = torch.relu(h)
    return h.sum()
)JIT");
  module.save(path("branch.pt"));
  const torch::jit::Module saved = torch::jit::load(path("branch.pt"));
  const int first = nodeIdOf(saved, "aten::matmul");
  const int branch = nodeIdOf(saved, "prim::If");
  torch::jit::Module rewritten =
      checkpointedModel(path("branch.pt"), planFor(path("branch.pt"), {segmentBetween(saved, first, branch)}));
  EXPECT_EQ(countKind(*rewritten.get_method("forward").graph(), "prim::If"), 0u);
  const VerificationResult result =
      saveAndVerify(rewritten, path("branch.pt"), path("branch.ckpt.pt"), {"float32[4,8]"});
  EXPECT_TRUE(result.bitwise_equal) << "grads differ by " << result.max_gradient_abs_diff;
}

// A statement-level `for` (a prim::Loop without outputs) inside a branch of a
// segment, as torchvision's mvit_v2_s has: the segment's IR text must carry it,
// and the loop must still run (here: assert that no row is too large).
TEST_F(GraphSurgery, LoopWithoutOutputsInsideASegmentStillRunsAndTrainsBitwise) {
  at::manual_seed(3);
  torch::jit::Module module("acprof_test.CheckedRows");
  module.register_parameter("w", (at::randn({8, 8}) * 0.3).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    if bool(h.sum() > -1e30):
        for i in range(h.size(0)):
            assert bool(h[i].abs().sum() < 1e6), "row too large"
    h = torch.relu(h)
    return torch.tanh(h).sum()
)JIT");
  module.save(path("rows.pt"));
  const torch::jit::Module saved = torch::jit::load(path("rows.pt"));
  const int first = nodeIdOf(saved, "aten::matmul");
  const int last = nodeIdOf(saved, "aten::relu");
  torch::jit::Module rewritten =
      checkpointedModel(path("rows.pt"), planFor(path("rows.pt"), {segmentBetween(saved, first, last)}));
  EXPECT_EQ(countKind(*rewritten.get_method("forward").graph(), "acprof::checkpoint"), 1u);
  EXPECT_EQ(countKind(*rewritten.get_method("forward").graph(), "prim::If"), 0u);
  const VerificationResult result = saveAndVerify(rewritten, path("rows.pt"), path("rows.ckpt.pt"), {"float32[4,8]"});
  EXPECT_TRUE(result.bitwise_equal) << "grads differ by " << result.max_gradient_abs_diff;

  torch::jit::Module loaded = torch::jit::load(path("rows.ckpt.pt"));
  at::Tensor large = at::zeros({4, 8});
  large[2].fill_(1e6);
  EXPECT_THROW(loaded.forward({large}), std::exception);
}

// A segment output that the original made without autograd history although
// it is made from a tensor that needs grad (a mask new_zeros makes from x, as
// swin3d's shifted windows do): where the plan says the run saw it need no
// grad, the rewritten model passes it on without history too, so nothing after
// the segment records a backward towards it (masked_fill would save its mask).
TEST_F(GraphSurgery, AnOutputTheRunSawWithoutGradStaysWithoutGrad) {
  at::manual_seed(4);
  torch::jit::Module module("acprof_test.Mask");
  module.register_parameter("w", (at::randn({8, 8}) * 0.3).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    m = h.new_zeros([h.size(0), h.size(1)])
    h = torch.tanh(h)
    m[:, 0:2] = 1.0
    y = h.masked_fill(m != 0, 0.0)
    return y.sum(), m
)JIT");
  module.save(path("mask.pt"));
  torch::jit::Module saved = torch::jit::load(path("mask.pt"));
  const int first = nodeIdOf(saved, "aten::matmul");
  const int last = nodeIdOf(saved, "aten::tanh");
  const at::Tensor x = at::randn({4, 8});
  ASSERT_FALSE(saved.forward({x}).toTuple()->elements()[1].toTensor().requires_grad()) << "the original's mask";
  for (const bool listed : {false, true}) {
    SegmentCut cut = segmentBetween(saved, first, last);
    std::string mask;
    for (const std::string& name : cut.output_values)
      if (name.rfind("m", 0) == 0) mask = name;
    ASSERT_FALSE(mask.empty()) << "the mask is not an output of the segment";
    if (listed) cut.outputs_without_grad = {mask};
    torch::jit::Module rewritten = checkpointedModel(path("mask.pt"), planFor(path("mask.pt"), {cut}));
    EXPECT_EQ(rewritten.forward({x}).toTuple()->elements()[1].toTensor().requires_grad(), !listed)
        << (listed ? "listed" : "not listed");
    const VerificationResult result = saveAndVerify(rewritten, path("mask.pt"), path("mask.ckpt.pt"), {"float32[4,8]"});
    EXPECT_TRUE(result.bitwise_equal) << "grads differ by " << result.max_gradient_abs_diff;
  }
}

// Setting a module attribute is state a recompute must not touch twice.
TEST_F(GraphSurgery, RefusesASegmentThatSetsAModuleAttribute) {
  torch::jit::Module module("acprof_test.Counter");
  module.register_parameter("w", (at::randn({8, 8})).requires_grad_(), false);
  module.register_attribute("calls", c10::IntType::get(), int64_t{0});
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    self.calls = self.calls + 1
    return torch.relu(h).sum()
)JIT");
  module.save(path("counter.pt"));
  const int first = nodeIdOf(module, "aten::matmul");
  const int last = nodeIdOf(module, "aten::relu");
  SegmentCut cut = segmentBetween(module, first, last);
  try {
    checkpointedModel(path("counter.pt"), planFor(path("counter.pt"), {cut}));
    FAIL() << "a segment setting a module attribute was accepted";
  } catch (const RewriteError& e) {
    EXPECT_NE(std::string(e.what()).find("[barrier]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("prim::SetAttr"), std::string::npos) << e.what();
  }
}

class RewriteModelFile : public GraphSurgery {
 protected:
  Plan savedModelAndPlan() {
    return savedModelAndPlan(makeDropoutBatchNormModel(), "aten::dropout", "float32[16,32]");
  }
  // `module` saved as model.pt, with a plan of one segment from its first
  // matmul to its first `last_kind` and a profile of the training step to
  // verify on `input_spec` with the mean loss.
  Plan savedModelAndPlan(const torch::jit::Module& module, const std::string& last_kind,
                         const std::string& input_spec) {
    module.save(path("model.pt"));
    torch::jit::Module original = torch::jit::load(path("model.pt"));
    Plan plan = planFor(path("model.pt"), {segmentBetween(original, nodeIdOf(original, "aten::matmul"),
                                                          nodeIdOf(original, last_kind))});
    Profile profile;
    profile.meta.model_path = path("model.pt");
    profile.meta.run.input_specs = {input_spec};
    profile.meta.run.loss = "mean";
    writeProfileFile(profile, path("profile.json"));
    plan.profile_path = path("profile.json");
    return plan;
  }
};

TEST_F(RewriteModelFile, WritesAVerifiedModelBesideTheOriginal) {
  const Plan plan = savedModelAndPlan();
  const RewriteResult result = rewriteModelFile(plan, RewriteOptions{});
  EXPECT_EQ(result.output_path, path("model.ckpt.pt"));
  ASSERT_TRUE(result.verification.has_value());
  EXPECT_TRUE(result.verification->bitwise_equal);
  EXPECT_TRUE(fs::exists(path("model.ckpt.pt")));
  // Nothing but the two models and the profile: the temp file is gone.
  EXPECT_EQ(std::distance(fs::directory_iterator(directory_), fs::directory_iterator()), 3);
}

TEST_F(RewriteModelFile, RefusesAPlanMadeForAnotherModel) {
  Plan plan = savedModelAndPlan();
  plan.model_sha256 = std::string(64, 'a');
  try {
    rewriteModelFile(plan, RewriteOptions{});
    FAIL() << "a plan for another model was accepted";
  } catch (const RewriteError& e) {
    EXPECT_NE(std::string(e.what()).find("sha256"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("model.ckpt.pt")));
}

TEST_F(RewriteModelFile, RefusesToOverwriteTheInputModel) {
  const Plan plan = savedModelAndPlan();
  RewriteOptions options;
  options.output_path = path("model.pt");
  try {
    rewriteModelFile(plan, options);
    FAIL() << "the rewrite was allowed to write over its input model";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::BadInput);
    EXPECT_NE(std::string(e.what()).find("would overwrite an input"), std::string::npos) << e.what();
  }
}

TEST_F(RewriteModelFile, RefusesToVerifyWithoutTheProfile) {
  Plan plan = savedModelAndPlan();
  plan.profile_path = path("missing.json");
  try {
    rewriteModelFile(plan, RewriteOptions{});
    FAIL() << "verification without a profile was accepted";
  } catch (const RewriteError& e) {
    EXPECT_NE(std::string(e.what()).find("--no-verify"), std::string::npos) << e.what();
  }
  RewriteOptions unverified;
  unverified.verify = false;
  EXPECT_FALSE(rewriteModelFile(plan, unverified).verification.has_value());
  EXPECT_TRUE(fs::exists(path("model.ckpt.pt")));
}

// An op whose forward is the identity and whose backward scales the gradient
// by 1 + calls / 1024, calls counting how often it has run: the loss of a
// training step through it agrees with the one before and its gradients never
// do, as with a nondeterministic backward kernel (torch 1.13's CPU
// gelu_backward on a non-contiguous gradient). Composite, so autograd
// differentiates what it calls: (x - x.detach()) is zero, with gradient one.
std::atomic<int64_t> drifting_scale_calls{0};
at::Tensor driftingScale(const at::Tensor& x) {
  return x + (x - x.detach()) * (static_cast<double>(drifting_scale_calls++) / 1024.0);
}
TORCH_LIBRARY(acprof_test, m) { m.def("drifting_scale(Tensor x) -> Tensor", &driftingScale); }

// Source compiled in C++ resolves only `torch.*` (NativeResolver, for aten);
// this one also resolves `acprof_test.*` to the ops registered above. A saved
// model calls them as `ops.acprof_test.*`, which loading resolves.
struct TestOpsResolver : torch::jit::NativeResolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction& m,
                                                         const torch::jit::SourceRange& loc) override {
    if (name == "acprof_test") return std::make_shared<torch::jit::BuiltinModule>("acprof_test");
    return torch::jit::NativeResolver::resolveValue(name, m, loc);
  }
};

// An original that is not reproducible is refused as such: the error is the
// model's (ModelFails, not a verification failure of acprof's), names the
// first gradient that differs and the op whose backward makes it, and its
// fix, the tolerance it carries, makes the same rewrite pass.
TEST_F(RewriteModelFile, AnOriginalThatDoesNotAgreeWithItselfIsBlamedNotTheRewrite) {
  at::manual_seed(0);
  torch::jit::Module module("acprof_test.Drifting");
  module.register_parameter("w1", (at::randn({16, 32}) * 0.2).requires_grad_(), false);
  module.register_parameter("w2", (at::randn({32, 4}) * 0.2).requires_grad_(), false);
  module.define(R"JIT(
def forward(self, x):
    h = torch.relu(torch.matmul(x, self.w1))
    return torch.matmul(acprof_test.drifting_scale(h), self.w2)
)JIT",
                std::make_shared<TestOpsResolver>());
  const Plan plan = savedModelAndPlan(module, "aten::relu", "float32[8,16]");

  double accepting_tolerance = 0;
  try {
    rewriteModelFile(plan, RewriteOptions{});
    FAIL() << "a rewrite of an original that differs from itself was verified";
  } catch (const UnreproducibleStep& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::ModelFails);
    EXPECT_NE(message.find("original model's own training step is not reproducible"), std::string::npos) << message;
    EXPECT_NE(message.find("the gradient of 'w1' (made by the backward of aten::matmul)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("not in acprof"), std::string::npos) << message;
    EXPECT_NE(message.find("--tolerance"), std::string::npos) << message;
    EXPECT_EQ(message.find("report"), std::string::npos) << message;
    accepting_tolerance = e.accepting_tolerance;
  }
  EXPECT_GT(accepting_tolerance, 0);
  EXPECT_FALSE(fs::exists(path("model.ckpt.pt")));

  RewriteOptions tolerant;
  tolerant.tolerance = accepting_tolerance;
  const RewriteResult result = rewriteModelFile(plan, tolerant);
  ASSERT_TRUE(result.verification.has_value());
  EXPECT_TRUE(result.verification->passed());
  EXPECT_FALSE(result.verification->bitwise_equal);
  EXPECT_TRUE(fs::exists(path("model.ckpt.pt")));
}

}  // namespace
}  // namespace acprof
