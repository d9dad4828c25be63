#include "plan_overlay.h"
#include "acprof/error.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace acprof::viz {

void checkPlanMatchesProfile(const Profile& profile, const Plan& plan) {
  if (!plan.model_sha256.empty() && !profile.meta.model_sha256.empty() &&
      plan.model_sha256 != profile.meta.model_sha256)
    throw Error(ErrorKind::BadInput, fmt::format("the plan was made for another model ({}) than the profile ({}); pass the "
                                         "plan made from this profile",
                                         plan.model_path, profile.meta.model_path));
  const int node_count = static_cast<int>(profile.nodes.size());
  for (const SegmentCut& segment : plan.segments)
    if (segment.first_node < 0 || segment.last_node >= node_count || segment.first_node > segment.last_node)
      throw Error(ErrorKind::BadInput, fmt::format("the plan's segment of nodes {}..{} is outside the profile's {} nodes; "
                                           "re-run 'acprof plan' on this profile",
                                           segment.first_node, segment.last_node, node_count));
  for (const TimelinePoint& point : plan.predicted_timeline)
    if (point.step < 0 || point.step >= static_cast<int>(profile.steps.size()))
      throw Error(ErrorKind::BadInput, fmt::format("the plan predicts step {} but the profile has {} steps; re-run "
                                           "'acprof plan' on this profile",
                                           point.step, profile.steps.size()));
}

std::vector<SegmentPlacement> placeSegments(const Profile& profile, const Plan& plan) {
  std::vector<SegmentPlacement> placements;
  for (const SegmentCut& segment : plan.segments) {
    SegmentPlacement placement;
    auto earliest = [](int current, int candidate) {
      return candidate < 0 ? current : current < 0 ? candidate : std::min(current, candidate);
    };
    for (int id = segment.first_node; id <= segment.last_node; ++id) {
      const ForwardNode* node = profile.findNode(id);
      if (!node) continue;
      if (node->forward_step >= 0) {
        placement.first_forward_step = earliest(placement.first_forward_step, node->forward_step);
        placement.last_forward_step = std::max(placement.last_forward_step, node->forward_step);
      }
    }
    // Where the recompute runs is the simulator's fact, carried by the plan.
    placement.recompute_step = segment.recompute_step;
    placements.push_back(placement);
  }
  return placements;
}

std::vector<int64_t> predictedPeakPerStep(const Profile& profile, const Plan& plan) {
  std::vector<int64_t> peaks(profile.steps.size(), -1);
  for (const TimelinePoint& point : plan.predicted_timeline)
    if (point.step >= 0 && point.step < static_cast<int>(peaks.size()))
      peaks[point.step] = std::max(peaks[point.step], point.peak_bytes);
  return peaks;
}

}  // namespace acprof::viz
