#include "segment_span.h"

#include <algorithm>

namespace acprof {

SegmentSpan segmentSpan(const ProfileIndex& index, NodeRange range) {
  SegmentSpan span;
  span.range = range;
  int first_forward_step = -1, last_forward_step = -1;
  for (int n = range.first_node; n <= range.last_node; ++n) {
    const int bs = index.first_backward_step[n];
    if (bs >= 0) {
      if (span.first_backward_step < 0 || bs < span.first_backward_step) span.first_backward_step = bs;
      span.last_backward_step = std::max(span.last_backward_step, index.last_backward_step[n]);
    }
    const int fs = index.profile.nodes[n].forward_step;
    if (fs >= 0) {
      if (first_forward_step < 0) first_forward_step = fs;
      last_forward_step = fs;
    }
  }
  span.has_backward = span.first_backward_step >= 0 && first_forward_step >= 0;
  if (!span.has_backward) return span;
  span.recompute_event = index.step_first_event[span.first_backward_step];
  span.end_event = index.stepEndEvent(span.last_backward_step);
  span.forward_first_event = index.step_first_event[first_forward_step];
  span.forward_end_event = index.stepEndEvent(last_forward_step);
  span.rng_state_bytes = index.profile.meta.checkpoint_rng_state_bytes;
  return span;
}

}  // namespace acprof
