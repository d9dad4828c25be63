// profile.json as `acprof plan` and `acprof view` read it. The reader must
// reject a damaged file with one line of acprof::Error, or accept a profile
// whose every index points somewhere and whose numbers the later stages can
// add up: profile_format.h promises that, so that they index without checking.
// An accepted profile is therefore put through those stages (timeline replay,
// the simulator and solvers, the renderers) under ASan and UBSan: an index or
// a sum that the reader let through shows up as a sanitizer report there.
#include <cstddef>
#include <cstdint>
#include <string>

#include "acprof/planner.h"
#include "acprof/profile_format.h"
#include "acprof/viz.h"
#include "fuzz_checks.h"

namespace {

using acprof::fuzz::checkOneLineError;
using acprof::fuzz::require;

void planAndRender(const acprof::Profile& profile) {
  for (const char* solver : {"mu-two", "chen"}) {
    acprof::PlanRequest request;
    request.profile_path = "fuzz.json";
    request.budget_text = "50%";
    request.solver = solver;
    try {
      const acprof::Plan plan = acprof::planRecompute(profile, request);
      // The plan a profile yields must be one the plan reader accepts.
      acprof::planFromJson(acprof::planToJson(plan), "fuzz-plan.json");
      acprof::renderTimelineHtml(profile, &plan);
      acprof::renderPerfettoTrace(profile, &plan);
    } catch (const acprof::Error& error) {
      checkOneLineError(error);  // an infeasible budget is an answer, not a bug
    }
  }
  acprof::renderTimelineSvg(profile);
  acprof::renderComparisonHtml(profile, profile);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  acprof::Profile profile;
  try {
    profile = acprof::profileFromJson(text, "fuzz.json");
  } catch (const acprof::Error& error) {
    checkOneLineError(error);
    return 0;
  }
  // What acprof writes it reads back, unchanged.
  const std::string written = acprof::profileToJson(profile);
  try {
    require(acprof::profileToJson(acprof::profileFromJson(written, "rewritten.json")) == written,
            "a profile read back from its own JSON differs");
  } catch (const acprof::Error& error) {
    require(false, error.what());
  }
  acprof::Profile replayed = profile;
  acprof::timelineFromTensors(replayed);
  acprof::liveBytesPerEvent(profile);
  for (int event = 0; event < profile.event_count; ++event) acprof::stepOfEvent(profile, event);
  planAndRender(profile);
  return 0;
}
