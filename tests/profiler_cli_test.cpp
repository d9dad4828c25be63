// `acprof profile` from the command line, as a user runs it.
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/version.h>

#include "acprof/profile_format.h"
#include "test_support.h"

namespace acprof {
namespace {

using acprof::testing::lineCount;
using acprof::testing::makeScratchDir;
using acprof::testing::runAcprof;
using acprof::testing::runCommand;
using acprof::testing::testModel;
namespace fs = std::filesystem;

TEST(ProfileCli, ResNet18ProfilesEndToEndWithTheStoredInputs) {
  const std::string dir = makeScratchDir("profile-resnet");
  const auto result = runAcprof("profile '" + testModel("resnet18_traced.pt") + "'", dir);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Profile p = readProfileFile(dir + "/profile.json");  // the default output path
  EXPECT_EQ(p.meta.model_path, testModel("resnet18_traced.pt"));
  EXPECT_EQ(p.meta.run.input_specs.size(), 1u);
  EXPECT_GT(p.summary.peak_bytes, 0);
  EXPECT_NE(result.out.find("largest activations"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("layer1.0.conv1"), std::string::npos) << result.out;
  EXPECT_EQ(p.meta.other_executor_mode_peak_bytes, -1) << "the other executor mode is compared only when asked";
  EXPECT_EQ(p.meta.forward_without_grad_ratio, -1) << "the forward without grad is timed only when asked";
}

TEST(ProfileCli, GptDecoderProfilesEndToEndWithExplicitSpecs) {
  const std::string dir = makeScratchDir("profile-gpt");
  const auto result = runAcprof("profile '" + testModel("gpt_traced.pt") +
                                    "' --input 'int64[4,32]:0..128' --target 'int64[4,32]:0..128' "
                                    "--loss cross_entropy --optimizer adam --iters 2 --compare-jit-optimize "
                                    "--measure-no-grad-forward -o gpt.json",
                                dir);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Profile p = readProfileFile(dir + "/gpt.json");
  EXPECT_EQ(p.meta.run.loss, "cross_entropy");
  EXPECT_EQ(p.meta.run.optimizer, "adam");
  EXPECT_EQ(p.meta.run.measured_iters, 2);
  int64_t optimizer_state = 0;
  for (const TensorRecord& t : p.tensors)
    if (t.category == Category::OptimizerState) optimizer_state += t.bytes;
  EXPECT_GT(optimizer_state, 0);
  // --compare-jit-optimize: one iteration with optimization on, its peak recorded and said.
  EXPECT_GT(p.meta.other_executor_mode_peak_bytes, 0);
  // --measure-no-grad-forward: a ratio of two measured forwards, capped at 1.
  EXPECT_GT(p.meta.forward_without_grad_ratio, 0);
  EXPECT_LE(p.meta.forward_without_grad_ratio, 1);
  EXPECT_TRUE(result.out.find("executor optimization on would peak at") != std::string::npos ||
              result.out.find("note: with --jit-optimize on this model peaks at") != std::string::npos)
      << result.out;
}

// --version names the LibTorch acprof was built on and whether CUDA is compiled in,
// as CMake found them (the test is built in the same configuration).
TEST(ProfileCli, VersionNamesTheLibTorchAndWhetherCudaIsCompiledIn) {
  const auto result = runAcprof("--version");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, std::string(ACPROF_EXPECTED_VERSION_TEXT) + "\n");
  EXPECT_NE(result.out.find(std::string("LibTorch ") + TORCH_VERSION), std::string::npos) << result.out;
}

// A model that writes in place to a tensor autograd saved (issue 41's repro):
// PyTorch's own backward refuses it, so acprof refuses to profile it, as the
// model's error (exit 6), quoting PyTorch and naming the in-place write, with
// no profile written. Scripted and traced alike.
void expectRefusedAsTheModelsError(const std::string& dir, const std::string& model) {
  const auto result = runAcprof("profile " + model + " --input 'float32[4,16]'", dir);
  EXPECT_EQ(result.exit_code, 6) << "exit code 6: the model's training step fails in PyTorch\n" << result.err;
  EXPECT_EQ(lineCount(result.err), 1) << result.err;
  EXPECT_NE(result.err.find("the model's own training step fails in PyTorch"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("modified by an inplace operation"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("aten::mul_ writes in place to a tensor that aten::matmul read before it"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(fs::exists(dir + "/profile.json"));
}

TEST(ProfileCli, AScriptedModelWhoseTrainingStepFailsInPyTorchIsRefusedAsTheModelsError) {
  const std::string dir = makeScratchDir("profile-inplace-saved");
  torch::jit::Module inplace("acprof_test.WritesWhatAutogradSaved");
  inplace.register_parameter("a", at::randn({16, 16}).requires_grad_(), false);
  inplace.register_parameter("b", at::randn({16, 8}).requires_grad_(), false);
  inplace.define(R"JIT(
def forward(self, x):
    t = torch.tanh(torch.matmul(x, self.a))
    y = torch.matmul(t, self.b)
    t.mul_(2.0)
    return y + t[:, :8]
)JIT");
  inplace.save(dir + "/inplace.pt");
  expectRefusedAsTheModelsError(dir, "inplace.pt");
}

TEST(ProfileCli, ATracedModelWhoseTrainingStepFailsInPyTorchIsRefusedAsTheModelsError) {
  const std::string dir = makeScratchDir("profile-inplace-saved-traced");
  std::ofstream(dir + "/export.py") << R"PY(
import torch
class WritesWhatAutogradSaved(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(16, 16))
        self.b = torch.nn.Parameter(torch.randn(16, 8))
    def forward(self, x):
        t = torch.tanh(torch.matmul(x, self.a))
        y = torch.matmul(t, self.b)
        t.mul_(2.0)
        return y + t[:, :8]
torch.jit.trace(WritesWhatAutogradSaved(), torch.randn(4, 16)).save("inplace.pt")
)PY";
  const auto exported = runCommand(std::string(ACPROF_PYTHON) + " -W ignore export.py", dir);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  expectRefusedAsTheModelsError(dir, "inplace.pt");
}

// Every bad input: exit non-zero, one line on stderr naming the problem, no output file.
struct BadInput {
  const char* name;
  std::string arguments;
  const char* expected_words;
};

void PrintTo(const BadInput& input, std::ostream* out) { *out << input.name; }

class ProfileCliBadInput : public ::testing::TestWithParam<BadInput> {};

// The broken models of the matrix, made here: a real archive cut in half, a
// module without forward, one whose output holds no floating-point tensor,
// one with nothing to train, and one whose graph makes a tensor on another
// device (as a model traced on the CPU does, run on CUDA; here the other
// device is meta, which a CPU-only machine has).
void writeBrokenModels(const std::string& dir) {
  std::ofstream(dir + "/not_a_model.pt") << "this is not a zip archive";
  const std::string whole = readWholeFile(testModel("mlp_traced.pt"));
  std::ofstream(dir + "/truncated.pt", std::ios::binary) << whole.substr(0, whole.size() / 2);
  torch::jit::Module("acprof_test.NoForward").save(dir + "/no_forward.pt");
  torch::jit::Module integer_output("acprof_test.IntegerOutput");
  integer_output.register_parameter("w", at::randn({4, 4}).requires_grad_(), false);
  integer_output.define(R"JIT(
def forward(self, x):
    return torch.argmax(torch.matmul(x, self.w), 1)
)JIT");
  integer_output.save(dir + "/integer_output.pt");
  torch::jit::Module untrainable("acprof_test.Untrainable");
  untrainable.define(R"JIT(
def forward(self, x):
    return torch.relu(x).sum()
)JIT");
  untrainable.save(dir + "/untrainable.pt");
  torch::jit::Module other_device("acprof_test.OtherDevice");
  other_device.register_parameter("w", at::ones({4}).requires_grad_(), false);
  other_device.define(R"JIT(
def forward(self, x):
    return x * self.w + torch.zeros([4], device="meta")
)JIT");
  other_device.save(dir + "/other_device.pt");
}

TEST_P(ProfileCliBadInput, FailsWithOneLineAndWritesNothing) {
  const std::string dir = makeScratchDir("profile-bad");
  writeBrokenModels(dir);
  std::set<std::string> before;
  for (const auto& entry : fs::directory_iterator(dir)) before.insert(entry.path().filename().string());
  // Test names are listed before the models exist, so the model path is filled in here.
  std::string arguments = GetParam().arguments;
  if (const auto at = arguments.find("MLP"); at != std::string::npos)
    arguments.replace(at, 3, "'" + testModel("mlp_traced.pt") + "'");
  if (const auto at = arguments.find("ENCODER"); at != std::string::npos)
    arguments.replace(at, 7, "'" + testModel("encoder_masks_scripted.pt") + "'");
  if (const auto at = arguments.find("GPT"); at != std::string::npos)
    arguments.replace(at, 3, "'" + testModel("gpt_scripted.pt") + "'");
  const auto result = runAcprof(arguments, dir);
  EXPECT_EQ(result.exit_code, 1) << "exit code 1: bad input\n" << result.err;
  EXPECT_EQ(lineCount(result.err), 1) << result.err;
  EXPECT_NE(result.err.find(GetParam().expected_words), std::string::npos) << result.err;
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_TRUE(before.count(entry.path().filename().string())) << "left behind: " << entry.path();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ProfileCliBadInput,
    ::testing::Values(
        BadInput{"MissingFile", "profile missing.pt -o out.json", "no such file"},
        BadInput{"NotTorchScript", "profile not_a_model.pt -o out.json", "not a loadable TorchScript model"},
        BadInput{"UnparsableSpec", "profile MLP --input 'float32[64,x]' -o out.json",
                 "is not an integer"},
        BadInput{"SpecDoesNotFit", "profile MLP --input 'float32[64,100]' -o out.json",
                 "do not fit the model"},
        BadInput{"WrongInputCount",
                 "profile MLP --input 'float32[64,256]' --input 'float32[2]' -o out.json",
                 "forward takes 1"},
        // forward(src, mask=None, src_key_padding_mask=None): one to three inputs.
        BadInput{"MoreInputsThanForwardHasArguments",
                 "profile ENCODER --input 'float32[2,8,64]' --input 'float32[8,8]' --input 'bool[2,8]' "
                 "--input 'float32[2]' -o out.json",
                 "forward takes 1 to 3 (src (float32[...]), mask (optional, float32[...]), src_key_padding_mask "
                 "(optional, float32[...]))"},
        // Token ids are suggested as int64 in the embedding's range, by the names the user wrote.
        BadInput{"TokenIdsAreSuggestedAsInt64InTheEmbeddingsRange",
                 "profile GPT --input 'float32[2,8]' --input 'float32[2,8]' -o out.json",
                 "forward takes 1 (tokens (int64[...]:0..128))"},
        BadInput{"UnwritableOutput", "profile MLP -o /proc/acprof/out.json",
                 "does not exist"},
        // A directory that is a file: unwritable for root too.
        BadInput{"OutputUnderARegularFile", "profile MLP -o not_a_model.pt/out.json",
                 "'not_a_model.pt' is a file, not a directory"},
        BadInput{"CrossEntropyWithoutTarget",
                 "profile MLP --loss cross_entropy -o out.json", "--target"},
        // Only cross-entropy reads a target: another loss would train without it, unsaid.
        BadInput{"TargetWithoutCrossEntropy", "profile MLP --target 'int64[64]:0..10' -o out.json",
                 "--target is read only by --loss cross_entropy"},
        BadInput{"TruncatedArchive", "profile truncated.pt -o out.json", "not a loadable TorchScript model"},
        BadInput{"NoForward", "profile no_forward.pt --input 'float32[2,4]' -o out.json", "no forward method"},
        BadInput{"NoFloatingOutput", "profile integer_output.pt --input 'float32[2,4]' -o out.json",
                 "no floating-point tensor"},
        BadInput{"NothingToTrain", "profile untrainable.pt --input 'float32[2,4]' -o out.json",
                 "does not require grad"},
        BadInput{"GraphFixesAnotherDevice", "profile other_device.pt --input 'float32[2,4]' -o out.json",
                 "the model's graph fixes the device meta in 1 op(s) (first: aten::zeros"},
        // CI and the developers' machines have no GPU; the CUDA build still loads there.
        BadInput{"CudaWithoutAGpu", "profile MLP --device cuda -o out.json",
                 "no CUDA GPU is visible to this process"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace acprof
