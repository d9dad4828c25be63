// What a checkpoint segment does to the lifetime of each tensor: the rules the
// simulator (whole decisions) and the solvers' incremental peak tracker share,
// so both measure with the same ruler.
//
// The timeline is a row of leaves. For each event e of the profile, 0 <= e <= E:
//   4e     the return of a checkpoint whose backward ended just before event e:
//          where none returns it holds what is left once the boundary's frees
//          are done
//   4e + 1 the recompute block that runs just before event e (its highest point);
//          where no block runs it equals the gap below
//   4e + 2 the gap just before event e, after any recompute block there
//   4e + 3 just after event e (e < E)
// A tensor occupies a half-open leaf interval. Its original life [alloc, free)
// is [4a+3, 4f+3). Moving a free to "the end of step s" (or to any step
// boundary) ends it at the boundary's return leaf 4e, so the memory is gone
// before a checkpoint returns there or a recompute block starts; a copy made by
// a recompute block starts at the gap leaf 4e+2, after the block.
//
// For a segment S with backward steps Bwd(S) = [bs, be] (R = just before step
// bs, End = just after step be), a tensor t produced inside S is:
//   - an output if a node after S reads it, it is the model's output, or it
//     outlives the iteration: forward life unchanged, except that a free inside
//     [bs, be] moves to R (its downstream holders have let go by then), or
//     earlier where the profile says autograd's saves freed it (saved_by): to
//     the later of its last read after S and the release of its last save by a
//     node in no segment, since S's own nodes save nothing in forward; plus a
//     copy made by the recompute, alive until End;
//   - a temporary if it is freed among S's own forward events: unchanged, and
//     replayed inside the recompute block;
//   - an internal activation if it is freed in backward: freed at the end of its
//     last forward use (no grad: nothing saves it), recomputed at R and freed at
//     its original free (End if that came before R);
//   - otherwise (held past forward by something outside the graph) a copy alive
//     from R to End on top of an unchanged forward life.
// A tensor read inside S but made outside (not static) lives at least until End:
// the checkpoint holds its inputs until its backward returns. Reads through
// lists count: the tensors of a list that S reads are inputs too.
// Each use inside S of an outside tensor that needed grad (GraphValue::needs_grad) enters through a
// checkpoint input of its own (graph_surgery.cpp, for bit-exact sums), so the
// checkpoint's backward holds one gradient per use until End, where the
// original added each to the tensor's running sum as it was made. The first
// use's gradient (in backward order) is the sum's own buffer in both, unless a
// sum begun outside waits for the tensor and the original added the first
// use's gradient to it in place (LibTorch 2.x's InputBuffer steals the sum):
// then it is held too (an unrolled LSTMCell's slices of its embedding output;
// out of place, the waiting sum is a gradient S received, held already, and
// the new sum stands for the held one). Each held gradient is held from the
// end of the backward step in which the original let it go (a linear's bias
// gradient in AddmmBackward0, a step before its weight's) to End. Whether the
// original summed in place is read from whose gradient each tensor is, as
// autograd's hooks reported it (TensorRecord::gradient_of; sizes cannot tell:
// a linear's input x[:, t], 16 x 32 floats, and its bias, 512, are both
// 2048 B): a gradient of the tensor that the use's backward made and that
// outlives it is a new sum. A use whose backward makes no gradient of the
// tensor that it also frees in its own step hands on a view of the gradient it received (a cat's slice), which the
// checkpoint keeps as it is: that whole gradient is held instead (whichever
// node of the segment frees it: a cat's other slice may go on), for a later
// use and for a first use while a sum begun outside waits for the tensor, and
// the new sum the original made there (out of place) begins at End, where the
// checkpoint's return makes it.
// A trace reads a weight through one value per use, so the same holds across
// values on one weight storage: a use whose gradient the original added to a
// sum begun by a use backwarded earlier is held to End, unless the original
// made a new tensor for the sum there and it is the segment's first use of
// the weight (the older sum is then a gradient S received, held already, and
// the new one stands for the held gradient).
// A segment output read both inside the segment and after it receives its
// gradient from outside first. Reads count through any value on the same
// tensor: a node that passes a tensor it reads on unchanged (an unpack of a
// tuple or list built from it, found from the profile's reads, outputs and
// allocations, not the op's name: ProfileIndex::same_tensor_as) makes another
// value, not another tensor, so a traced LSTMCell's c read after the segment
// through its (h, c) unpack and read inside by tanh is one output read both
// inside and after. Where the original added the inside use's
// gradient to it in one buffer, the checkpoint's backward cannot (it holds the
// gradient it received until End), so from the end of the inside use's
// backward there are two: the received one until End and the new sum until
// the original's buffer died (until End where a use of S hands on a view of
// it: the cat that made the output from an outside value), one more than the
// original from then until the earlier of the two.
// A gradient passed on inside the segment: an output's backward inside S may
// hand the gradient S received for it on unchanged as the gradient of a tensor
// made inside S (an add hands its sum's gradient to both operands); where a
// later use of that tensor inside S added its own gradient to that one buffer
// in place, the checkpoint, which holds the received gradient until End,
// makes the sum a new tensor instead: from just before that use let its own
// gradient go until the original's buffer died (TensorRecord::gradient_of
// says which tensors a buffer is the gradient of).
// At End the checkpoint returns (the return leaf): the engine has released what
// the checkpoint saved and the gradients it received, and hands each returned
// gradient, in input order, to the buffer of the tensor it belongs to (a
// weight's accumulator, an activation's grad_fn); all of them stay alive until
// every one is handed on, so the held gradients above end just after the
// return leaf. Where the original summed a tensor's gradients into new tensors
// (LibTorch 1.13 adds dense gradients out of place), each add at the return
// makes a new sum and frees the old one: on top of the held gradients the
// return leaf counts the running sum begun before S's backward by a use
// backwarded earlier (the original freed it at S's first use, and as a
// gradient S received it lives only until End's releases) and the largest sum
// made there. Where the original summed in place, the return adds nothing.
// The checkpoint also keeps, from just before S's forward until End, the
// generator state it replays (profile meta checkpoint_rng_state_bytes) and a
// copy of each storage S writes in place (cut_rules.h replayed inputs; one copy
// per storage, its whole bytes, however many written inputs are on it); its
// recompute copies the current generator state once more while it runs.
#pragma once

#include <cstdint>
#include <vector>

#include "acprof/simulator.h"
#include "profile_index.h"

namespace acprof {

inline int returnLeaf(int event) { return 4 * event; }
inline int blockLeaf(int event) { return 4 * event + 1; }
inline int gapLeaf(int event) { return 4 * event + 2; }
inline int eventLeaf(int event) { return 4 * event + 3; }
inline int leafCount(int event_count) { return 4 * event_count + 3; }

struct LeafInterval {
  int64_t bytes = 0;
  int category = 0;
  int begin_leaf = 0;  // inclusive
  int end_leaf = 0;    // exclusive
  // Who holds it, for explaining a peak (Simulator::peakHolders): a profile
  // tensor, or else the decision's segment whose checkpoint keeps or makes it.
  int tensor = -1;
  int segment = -1;
};

struct SegmentTiming {
  NodeRange range;
  bool has_backward = false;  // false: no backward step to recompute for; it changes nothing
  int first_backward_step = -1;
  int last_backward_step = -1;
  int recompute_event = 0;  // the recompute block runs in the gap before this event
  int end_event = 0;        // the checkpoint's backward has returned by the gap before this event
  int forward_first_event = 0;  // the segment's forward steps cover [forward_first_event, forward_end_event)
  int forward_end_event = 0;
  int64_t rng_state_bytes = 0;   // generator state kept, and copied again during the recompute
  int64_t kept_state_bytes = 0;  // rng_state_bytes + snapshots of the inputs it writes
  // Gradients of uses of outside tensors inside the segment that the
  // checkpoint's backward holds until it returns and the original folded into
  // a running sum at once: every use but the first in backward order, and a
  // shared weight's first use too (see the rules above).
  std::vector<LeafInterval> held_use_gradients;
  // What the return adds above them: the sums begun before the segment's
  // backward and the largest sum the hand-over makes (bytes 0: nothing).
  LeafInterval return_sums;
  // Uses (a node and the outside value it reads) whose backward hands on a
  // view of the gradient the node received: that whole gradient is held
  // instead (tensorIntervals), whichever of the segment's nodes frees it (a
  // cat's other slice may go to a node that frees it later).
  struct ViewHoldingUse {
    int node = -1;
    int value = -1;
  };
  std::vector<ViewHoldingUse> view_holding_uses;
  // Sums the original made at those uses (and at a first use that hands on a
  // view while a sum waits): the checkpoint makes them when it returns, so
  // each begins there (tensorIntervals).
  std::vector<int> sums_made_at_return;
};

SegmentTiming segmentTiming(const ProfileIndex& index, NodeRange range);
// Its steps and events alone (range to kept_state_bytes, which counts only the
// generator state here): all that insideRole, checkpointMayFreeEarlier and
// has_backward read, without the boundary's gradients and sums, whose cost
// grows with the segment (over half of judging GPT-2's 1218-node ranges).
SegmentTiming segmentSpan(const ProfileIndex& index, NodeRange range);

// What a storage made inside a segment becomes under its checkpoint:
//   Output: read after the segment (or the model's output): it stays.
//   Temporary: freed inside the segment's forward: it lives only while it runs.
//   InternalActivation: held for backward, freed in backward: dropped after its
//     last forward use, made again by the recompute.
//   UnreachedSave: saved only by nodes of the segment whose backward never runs
//     (no gradient reaches them, e.g. an auxiliary head the loss ignores), so the
//     original kept it to the end of the iteration; the checkpoint's forward saves
//     nothing, so it is dropped too, and its recomputed copy dies when the
//     checkpoint's backward returns.
//   HeldCopy: anything else, freed after the segment's forward by what held it
//     besides the dataflow (autocast's cache of a weight's cast, cleared when
//     the autocast region ends): it keeps its life, and the recompute's copy
//     lives only while the recompute runs, as the recompute's own autocast
//     region ends with it (the checkpoint's AutocastStateScope, eager's
//     _AutocastReplay).
enum class InsideRole { Output, Temporary, InternalActivation, UnreachedSave, HeldCopy };
InsideRole insideRole(const ProfileIndex& index, int tensor, const SegmentTiming& segment);
// The roles whose storage the checkpoint frees after its last forward use.
inline bool droppedByCheckpoint(InsideRole role) {
  return role == InsideRole::InternalActivation || role == InsideRole::UnreachedSave;
}

// Whether a segment's checkpoint can let a tensor it makes go before the
// original did: one it drops, or an output that autograd held for the
// segment's own nodes alone (they save nothing in forward), which then dies
// after its last read (outputEndLeaf in memory_rules.cpp), before the
// recompute. Saves by other nodes are counted as if those were in segments
// too: the most any decision could shorten it. A solver that looks only at
// dropped tensors misses that such a segment lowers the peak (a linear layer
// and the ReLU before it, whose output later nodes read but do not save).
bool checkpointMayFreeEarlier(const ProfileIndex& index, int tensor, const SegmentTiming& segment);

// The recompute block's highest point above the memory live just before it.
struct RecomputeBlock {
  bool has_events = false;
  int leaf = 0;
  int64_t rise_bytes = 0;
  CategoryBytes rise_by_category{};
  LeafInterval kept_state;  // what the checkpoint keeps besides its inputs (bytes 0: nothing)
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
