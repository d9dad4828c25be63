// A checkpoint segment's steps and events: where its forward ran, where its
// recompute runs (R) and where its backward returns (End), in the terms of
// docs/memory-model.md. It is all that insideRole, checkpointMayFreeEarlier and
// has_backward read, without the boundary's gradients and sums
// (gradient_accumulation.h), whose cost grows with the segment: over half of
// judging GPT-2's 1218-node ranges.
#pragma once

#include <cstdint>

#include "acprof/simulator.h"
#include "profile_index.h"

namespace acprof {

struct SegmentSpan {
  NodeRange range;
  bool has_backward = false;  // false: no backward step to recompute for; it changes nothing
  int first_backward_step = -1;
  int last_backward_step = -1;
  int recompute_event = 0;  // the recompute block runs in the gap before this event (R)
  int end_event = 0;        // the checkpoint's backward has returned by the gap before this event (End)
  int forward_first_event = 0;  // the segment's forward steps cover [forward_first_event, forward_end_event)
  int forward_end_event = 0;
  int64_t rng_state_bytes = 0;  // generator state kept, and copied again during the recompute ([kept-state])
};

SegmentSpan segmentSpan(const ProfileIndex& index, NodeRange range);

}  // namespace acprof
