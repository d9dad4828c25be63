// How autograd accumulates gradients across a checkpoint's boundary, and what
// a checkpoint's backward therefore holds that the original did not
// (docs/memory-model.md, [received-gradients-held] to [return-sums]). The
// original adds each gradient of a tensor into its running sum as soon as it
// is made; a checkpoint's backward holds what it receives and makes until it
// returns. Whether the original summed in place or into a new tensor is read
// from the profile (which gradients outlive the step that made them), so the
// LibTorch versions that differ there (2.x steals a sum's buffer, 1.13 adds
// dense gradients out of place) need no switch here.
#pragma once

#include <vector>

#include "acprof/cut_rules.h"
#include "leaf_timeline.h"
#include "profile_index.h"
#include "segment_span.h"

namespace acprof {

struct GradientHolds {
  // Gradients the checkpoint's backward holds until it returns where the
  // original let them go earlier: [held-use-gradient], [sum-waits],
  // [shared-weight-use], [output-read-inside-and-after], [passed-on-gradient].
  std::vector<LeafInterval> held_use_gradients;
  // What the return adds above them ([return-sums]; bytes 0: nothing).
  LeafInterval return_sums;
  // Uses (a node and the outside value it reads) whose backward hands on a
  // view of the gradient the node received ([view-holding-use]): that whole
  // gradient is held instead, whichever of the segment's nodes frees it.
  struct ViewHoldingUse {
    int node = -1;
    int value = -1;
  };
  std::vector<ViewHoldingUse> view_holding_uses;
  // Sums the original made at those uses (and at a first use that hands on a
  // view while a sum waits): the checkpoint makes them when it returns, so
  // each begins there ([view-holding-use]).
  std::vector<int> sums_made_at_return;
};

// What a segment's checkpoint holds at its boundary; empty where it has no backward.
GradientHolds gradientHolds(const ProfileIndex& index, const SegmentBoundary& boundary, const SegmentSpan& span);

// The node whose step freed a tensor, or -1 (never freed, or freed by a step
// of no node: the loss, the optimizer).
int nodeThatFreed(const ProfileIndex& index, const TensorRecord& t);

// Whether one of the segment's view-holding uses hands on a view of gradient
// r ([view-holding-use], [received-gradients-held]).
bool viewHeldBySegment(const ProfileIndex& index, const GradientHolds& holds, const TensorRecord& r);

}  // namespace acprof
