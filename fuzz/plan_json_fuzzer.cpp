// plan.json as `acprof rewrite` and `acprof view --plan` read it: parsed, then
// checked against the profile it claims to come from (the committed seed
// profile, profile.json beside the corpus). Each must reject a damaged or
// foreign plan with one line of acprof::Error; a plan both accept is drawn on
// that profile's timeline, where every node, step and tensor it names is
// looked up: an index they let through shows up as a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/viz.h"
#include "fuzz_checks.h"

namespace {

using acprof::fuzz::checkOneLineError;
using acprof::fuzz::require;

// The profile every fuzzed plan is checked against: ACPROF_FUZZ_PROFILE, or
// the seed corpus's own (its path is compiled in by fuzz/CMakeLists.txt).
const acprof::Profile& seedProfile() {
  static const acprof::Profile profile = [] {
    const char* path = std::getenv("ACPROF_FUZZ_PROFILE");
    try {
      return acprof::readProfileFile(path ? path : ACPROF_FUZZ_PLAN_PROFILE);
    } catch (const acprof::Error& error) {
      std::fprintf(stderr, "plan fuzzer: the profile to check plans against does not load: %s\n", error.what());
      std::abort();
    }
  }();
  return profile;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const acprof::Profile& profile = seedProfile();
  const std::string text(reinterpret_cast<const char*>(data), size);
  acprof::Plan plan;
  try {
    plan = acprof::planFromJson(text, "fuzz-plan.json");
  } catch (const acprof::Error& error) {
    checkOneLineError(error);
    return 0;
  }
  const std::string written = acprof::planToJson(plan);
  try {
    require(acprof::planToJson(acprof::planFromJson(written, "rewritten-plan.json")) == written,
            "a plan read back from its own JSON differs");
  } catch (const acprof::Error& error) {
    require(false, error.what());
  }
  try {
    acprof::checkPlanMatchesProfile(plan, profile);
  } catch (const acprof::Error& error) {
    checkOneLineError(error);
    return 0;
  }
  acprof::renderTimelineHtml(profile, &plan);
  acprof::renderComparisonHtml(profile, profile, &plan);
  acprof::renderTimelineSvg(profile, &plan);
  acprof::renderPerfettoTrace(profile, &plan);
  return 0;
}
