// `acprof profile` from the command line, as a user runs it.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "acprof/profile_format.h"
#include "test_support.h"

namespace acprof {
namespace {

using acprof::testing::lineCount;
using acprof::testing::makeScratchDir;
using acprof::testing::runAcprof;
using acprof::testing::testModel;
namespace fs = std::filesystem;

TEST(ProfileCli, ResNet18ProfilesEndToEndWithTheStoredInputs) {
  const std::string dir = makeScratchDir("profile-resnet");
  const auto result = runAcprof("profile '" + testModel("resnet18_traced.pt") + "'", dir);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Profile p = readProfileFile(dir + "/profile.json");  // the default output path
  EXPECT_EQ(p.meta.model_path, testModel("resnet18_traced.pt"));
  EXPECT_EQ(p.meta.input_specs.size(), 1u);
  EXPECT_GT(p.summary.peak_bytes, 0);
  EXPECT_NE(result.out.find("largest activations"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("layer1.0.conv1"), std::string::npos) << result.out;
}

TEST(ProfileCli, GptDecoderProfilesEndToEndWithExplicitSpecs) {
  const std::string dir = makeScratchDir("profile-gpt");
  const auto result = runAcprof("profile '" + testModel("gpt_traced.pt") +
                                    "' --input 'int64[4,32]:0..128' --target 'int64[4,32]:0..128' "
                                    "--loss cross_entropy --optimizer adam --iters 2 -o gpt.json",
                                dir);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Profile p = readProfileFile(dir + "/gpt.json");
  EXPECT_EQ(p.meta.loss, "cross_entropy");
  EXPECT_EQ(p.meta.optimizer, "adam");
  EXPECT_EQ(p.meta.measured_iters, 2);
  int64_t optimizer_state = 0;
  for (const TensorRecord& t : p.tensors)
    if (t.category == Category::OptimizerState) optimizer_state += t.bytes;
  EXPECT_GT(optimizer_state, 0);
}

// Every bad input: exit non-zero, one line on stderr naming the problem, no output file.
struct BadInput {
  const char* name;
  std::string arguments;
  const char* expected_words;
};

void PrintTo(const BadInput& input, std::ostream* out) { *out << input.name; }

class ProfileCliBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(ProfileCliBadInput, FailsWithOneLineAndWritesNothing) {
  const std::string dir = makeScratchDir("profile-bad");
  std::ofstream(dir + "/not_a_model.pt") << "this is not a zip archive";
  // Test names are listed before the models exist, so the model path is filled in here.
  std::string arguments = GetParam().arguments;
  if (const auto at = arguments.find("MLP"); at != std::string::npos)
    arguments.replace(at, 3, "'" + testModel("mlp_traced.pt") + "'");
  const auto result = runAcprof(arguments, dir);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(lineCount(result.err), 1) << result.err;
  EXPECT_NE(result.err.find(GetParam().expected_words), std::string::npos) << result.err;
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename(), "not_a_model.pt") << "left behind: " << entry.path();
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
        BadInput{"UnwritableOutput", "profile MLP -o /proc/acprof/out.json",
                 "does not exist"},
        BadInput{"CrossEntropyWithoutTarget",
                 "profile MLP --loss cross_entropy -o out.json", "--target"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace acprof
