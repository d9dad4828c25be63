#include "plan_overlay.h"

#include <algorithm>

namespace acprof::viz {

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
