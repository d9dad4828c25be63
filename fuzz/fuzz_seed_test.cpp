// The committed seed corpus is where the fuzzers start. Seeds named valid*
// must stay accepted as the formats evolve: if a schema bump made them stale,
// every fuzzed input would be a rejection of the first field and the fuzzers
// would pass while exercising nothing behind it.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/simulator.h"

namespace acprof {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> validSeeds(const std::string& target) {
  std::vector<fs::path> seeds;
  for (const auto& entry : fs::directory_iterator(fs::path(ACPROF_FUZZ_CORPUS) / target))
    if (entry.path().filename().string().rfind("valid", 0) == 0) seeds.push_back(entry.path());
  return seeds;
}

// Accepted by the reader and by the simulator, which refuses a profile that
// does not say whose gradient each tensor holds: otherwise the fuzzer would
// never reach the planner behind the reader.
TEST(FuzzSeeds, ValidProfileSeedsAreAcceptedAndReachThePlanner) {
  const std::vector<fs::path> seeds = validSeeds("profile_json");
  ASSERT_FALSE(seeds.empty());
  for (const fs::path& seed : seeds) {
    EXPECT_NO_THROW(Simulator{readProfileFile(seed.string())}) << seed;
  }
}

TEST(FuzzSeeds, ValidPlanSeedsAreAcceptedAndMatchTheirProfile) {
  const Profile profile = readProfileFile(ACPROF_FUZZ_PLAN_PROFILE);
  const std::vector<fs::path> seeds = validSeeds("plan_json");
  ASSERT_FALSE(seeds.empty());
  for (const fs::path& seed : seeds) {
    EXPECT_NO_THROW(checkPlanMatchesProfile(readPlanFile(seed.string()), profile)) << seed;
  }
}

}  // namespace
}  // namespace acprof
