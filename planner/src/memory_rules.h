// What a checkpoint segment does to the lifetime of each tensor: the rules the
// simulator (whole decisions) and the solvers' incremental peak tracker share,
// so both measure with the same ruler. The rules are stated, by name, in
// docs/memory-model.md: [segment-output] to [recompute-block] here, the
// gradients held at the boundary in gradient_accumulation.h.
#pragma once

#include <cstdint>
#include <vector>

#include "acprof/simulator.h"
#include "gradient_accumulation.h"
#include "leaf_timeline.h"
#include "profile_index.h"
#include "segment_span.h"

namespace acprof {

// A segment whose boundary has been read: its span, what its checkpoint
// keeps, and the gradients its backward holds.
struct SegmentTiming : SegmentSpan {
  int64_t kept_state_bytes = 0;  // [kept-state]: generator state, snapshots of the inputs it writes, converted inputs
  GradientHolds gradients;
};

SegmentTiming segmentTiming(const ProfileIndex& index, NodeRange range);

// What a storage made inside a segment becomes under its checkpoint:
//   Output: [segment-output], [output-saved-only-inside].
//   Temporary: [temporary].
//   InternalActivation: [internal-activation].
//   UnreachedSave: [unreached-save].
//   HeldCopy: [held-copy].
enum class InsideRole { Output, Temporary, InternalActivation, UnreachedSave, HeldCopy };
InsideRole insideRole(const ProfileIndex& index, int tensor, const SegmentSpan& segment);
// The roles whose storage the checkpoint frees after its last forward use.
inline bool droppedByCheckpoint(InsideRole role) {
  return role == InsideRole::InternalActivation || role == InsideRole::UnreachedSave;
}

// Whether a segment's checkpoint can let a tensor it makes go before the
// original did: one it drops, or an output that autograd held for the
// segment's own nodes alone ([output-saved-only-inside]). Saves by other nodes
// are counted as if those were in segments too: the most any decision could
// shorten it. A solver that looks only at dropped tensors misses that such a
// segment lowers the peak (a linear layer and the ReLU before it, whose output
// later nodes read but do not save).
bool checkpointMayFreeEarlier(const ProfileIndex& index, int tensor, const SegmentSpan& segment);

// The recompute block's highest point above the memory live just before it ([recompute-block]).
struct RecomputeBlock {
  bool has_events = false;
  int leaf = 0;
  int64_t rise_bytes = 0;
  CategoryBytes rise_by_category{};
  LeafInterval kept_state;  // [kept-state]: what the checkpoint keeps besides its inputs (bytes 0: nothing)
};
RecomputeBlock recomputeBlock(const ProfileIndex& index, const SegmentTiming& segment);

// Answers which segment of a decision holds a node.
class DecisionView {
 public:
  virtual ~DecisionView() = default;
  virtual const SegmentTiming* segmentContaining(int node) const = 0;
};

// Writes the one or two intervals a tensor occupies under a decision; returns how many.
int tensorIntervals(const ProfileIndex& index, int tensor, const DecisionView& decision, LeafInterval out[2]);

}  // namespace acprof
