// What a simulated peak is made of: every category live at it, with the
// storages that hold the most bytes of each and the step that made them. Its
// bytes add up to the peak. The infeasible-budget error's table and the outcome
// JSON (--outcome) explain the planner's floor with it, so a user sees why the
// floor is where it is: a backward workspace, gradients accumulated so far, or
// activations no segment drops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "acprof/simulator.h"

namespace acprof {

struct PeakContributor {
  int64_t bytes = 0;
  std::string op;     // the step that made it: "ConvolutionBackward0", "aten::linear", "recompute"
  std::string scope;  // module scope, "" where there is none
  int step = -1;      // that step, -1 for what was live before the iteration
  std::string phase;  // that step's phase, "" for -1
  std::vector<int64_t> shape;  // empty where unknown or for a segment's own bytes
};

struct PeakShare {
  Category category = Category::Temporary;
  int64_t bytes = 0;                          // the category's whole share
  std::vector<PeakContributor> largest;       // its largest contributors, at most kLargestPerShare
  int more = 0;                               // how many contributors are not listed
};

struct PeakComposition {
  int64_t peak_bytes = 0;
  int peak_step = -1;
  bool peak_in_recompute = false;
  std::vector<PeakShare> shares;  // non-empty categories, largest first; bytes sum to peak_bytes
};

inline constexpr int kLargestPerShare = 3;

PeakComposition peakComposition(const Simulator& simulator, const RecomputeDecision& decision);

// A few lines, one per category live at the peak, largest first, under a
// line naming the step where it is (an infeasible budget's detail):
//   the floor, 362 MiB, at backward step 812 (ConvolutionBackward0), is made of
//     temporary        310 MiB  largest 310 MiB ConvolutionBackward0 in layer3.0.conv1 at backward step 812
//     weight            52 MiB  no recompute removes it
// Each category names its largest holder and how many more there are; every
// holder listed is in the JSON (to_json), which --outcome writes.
std::string peakCompositionTable(const PeakComposition& composition, const Profile& profile);

void to_json(nlohmann::json& j, const PeakComposition& composition);

}  // namespace acprof
