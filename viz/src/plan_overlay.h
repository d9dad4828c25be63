// Where a plan's segments and prediction sit on the timeline of the profile
// it was made from: forward steps of each segment, the step before which the
// segment is recomputed, and the predicted peak per step.
#pragma once

#include <vector>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"

namespace acprof::viz {

struct SegmentPlacement {
  int first_forward_step = -1;  // -1 when none of the segment's nodes ran as a step
  int last_forward_step = -1;
  // The first backward step that needs the segment's tensors: the recompute
  // runs just before it. -1 when backward never reaches the segment.
  int recompute_step = -1;
};
std::vector<SegmentPlacement> placeSegments(const Profile& profile, const Plan& plan);

// Predicted peak bytes per step of the profile (the larger of the step and the
// recompute the plan runs before it); -1 for steps the prediction omits.
std::vector<int64_t> predictedPeakPerStep(const Profile& profile, const Plan& plan);

}  // namespace acprof::viz
