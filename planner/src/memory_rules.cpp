#include "memory_rules.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace acprof {

namespace {

// What a checkpoint keeps for the inputs that enter it as something other
// than a recorded tensor: a number or bool as a 0-dim tensor, an optional's
// flag (InputForm, profile_format.h).
int64_t convertedInputBytes(const Profile& profile, const SegmentBoundary& boundary) {
  int64_t bytes = 0;
  for (int v : boundary.inputs) {
    const GraphValue& value = profile.values[v];
    if (value.entry == ValueEntry::Input) bytes += inputFormExtraBytes(value.input_form);
  }
  return bytes;
}

// Where the forward life of a segment output ends when what freed it in the
// original was autograd letting go of it (its last save released at its free
// step), or when what kept it past the iteration was only saves by nodes of its
// own segment that no gradient reached (an auxiliary head's input): the
// checkpoint's forward saves nothing, so only the saves by nodes outside any
// segment and the reads after the segment still hold it. A save by a node of
// another segment is that checkpoint's input, which the reads rule keeps.
// Without saved-tensor facts, or with a holder the profile does not name, it
// lives to the recompute as before (kNoEarlierEnd).
constexpr int kNoEarlierEnd = std::numeric_limits<int>::max();

int outputEndLeaf(const ProfileIndex& index, const TensorRecord& t, const SegmentTiming& own,
                  const DecisionView& decision) {
  if (!t.saved_by) return kNoEarlierEnd;
  const auto inside_own = [&](int node) { return node >= own.range.first_node && node <= own.range.last_node; };
  const bool outlives = index.outlivesIteration(t.id);
  bool released_at_free = false;
  for (const TensorRecord::SavedBy& by : *t.saved_by) {
    if (by.release_step < 0) {
      if (outlives && inside_own(by.node)) continue;
      return kNoEarlierEnd;
    }
    released_at_free = released_at_free || by.release_step == t.free_step;
  }
  if (!released_at_free && !outlives) return kNoEarlierEnd;
  int end_event = t.alloc_event + 1;
  for (int user : t.users) {
    const int step = index.profile.nodes[user].forward_step;
    if (user > own.range.last_node && step >= 0) end_event = std::max(end_event, index.stepEndEvent(step));
  }
  for (const TensorRecord::SavedBy& by : *t.saved_by) {
    const SegmentTiming* holder = by.node >= 0 ? decision.segmentContaining(by.node) : nullptr;
    if (inside_own(by.node) || (holder && holder->has_backward)) continue;
    end_event = std::max(end_event, index.stepEndEvent(by.release_step));
  }
  return returnLeaf(end_event);
}

// Where a segment output's forward life ends under its own checkpoint, or
// kNoEarlierEnd where it keeps its own end: one freed inside the segment's
// backward goes by the recompute (its downstream holders let go by then), or
// earlier where only the segment's saves held it; one kept past the iteration
// only by saves no gradient reached, inside its own segment, goes likewise.
int outputForwardEnd(const ProfileIndex& index, const TensorRecord& t, const SegmentTiming& own,
                     const DecisionView& decision) {
  const bool freed_in_own_backward = t.free_step >= own.first_backward_step && t.free_step <= own.last_backward_step;
  const int earlier_end = outputEndLeaf(index, t, own, decision);
  const bool kept_only_by_own_saves =
      index.outlivesIteration(t.id) && t.category != Category::Output && earlier_end != kNoEarlierEnd;
  if (!freed_in_own_backward && !kept_only_by_own_saves) return kNoEarlierEnd;
  return std::min(returnLeaf(own.recompute_event), earlier_end);
}

// Calls visit(record) for each tensor a node's backward steps made (not a
// view or a forward output: producer_node < 0), until visit returns true;
// returns whether it did.
template <typename Visit>
bool anyBackwardAllocation(const ProfileIndex& index, int node, Visit visit) {
  for (int step : index.profile.nodes[node].backward_steps)
    for (int e = index.step_first_event[step]; e < index.stepEndEvent(step); ++e)
      for (const int* t = index.tensors_allocated_at_event.begin(e); t != index.tensors_allocated_at_event.end(e); ++t)
        if (index.profile.tensors[*t].producer_node < 0 && visit(index.profile.tensors[*t])) return true;
  return false;
}

// Whether tensor r holds a gradient of graph value v, as autograd's hooks
// reported it (TensorRecord::gradient_of; the Simulator accepts only profiles
// that record it). Sizes cannot tell: an LSTM cell's input x[:, t], 16 x 32
// floats, and its bias, 512, are both 2048 B, and so are its h and c.
bool isGradientOf(const TensorRecord& r, int v) {
  return r.gradient_of && std::find(r.gradient_of->begin(), r.gradient_of->end(), v) != r.gradient_of->end();
}

// Whether a use's backward hands on a view of the gradient it received (a
// concatenation's slices) or that gradient itself, rather than a gradient of
// its own for `value`: it makes no gradient of the value that it also frees
// within its own steps. A gradient of its own that the original added to a
// running sum, out of place or in place, is made and freed there.
bool handsOnView(const ProfileIndex& index, int node, int value) {
  const int last = index.last_backward_step[node];
  return !anyBackwardAllocation(index, node, [&](const TensorRecord& r) {
    return isGradientOf(r, value) && r.free_step >= 0 && r.free_step <= last;
  });
}

// Whether one of a tensor's readers outside the segment ran its backward
// before the segment's backward began: a gradient it handed on waits in the
// tensor's buffer, a running sum.
bool sumWaits(const ProfileIndex& index, const SegmentTiming& timing, const int* readers_begin,
              const int* readers_end) {
  return std::any_of(readers_begin, readers_end, [&](int node) {
    const int step = index.first_backward_step[node];
    return (node < timing.range.first_node || node > timing.range.last_node) && step >= 0 &&
           step < timing.first_backward_step;
  });
}

// The weight storage a value that needs grad is: the static weight it was on
// in the recorded run, whole (a view of a piece of it, a slice, has a gradient
// of its own, summed apart), or -1.
int weightReadAs(const ProfileIndex& index, const GraphValue& value) {
  if (value.tensor < 0 || !index.isStatic(value.tensor)) return -1;
  const TensorRecord& r = index.profile.tensors[value.tensor];
  return r.category == Category::Weight && r.bytes == value.bytes ? r.id : -1;
}

// Whether the original added node's gradient of `value` (or of the weight it
// lives on) to a running sum in place: no gradient of the value made by its
// backward outlives it (a sum into a new tensor would).
bool summedInPlace(const ProfileIndex& index, int node, int value) {
  const int last = index.last_backward_step[node];
  return !anyBackwardAllocation(index, node, [&](const TensorRecord& r) {
    return isGradientOf(r, value) && (r.free_step < 0 || r.free_step > last);
  });
}

// A use that hands on a view is captured as it is by the checkpoint, which
// makes no sum until it returns; where the original made a new sum of
// `value` at that use (a gradient of it that its backward made and that
// outlives it), one such sum begins at the return instead (memory_rules.h).
// Sums of one value are interchangeable; each use takes one not yet taken.
void sumMadeAtReturn(const ProfileIndex& index, int node, int value, SegmentTiming& timing) {
  const int last = index.last_backward_step[node];
  std::vector<int>& moved = timing.sums_made_at_return;
  for (const int* t = index.backward_allocations_by_node.begin(node); t != index.backward_allocations_by_node.end(node);
       ++t) {
    const TensorRecord& r = index.profile.tensors[*t];
    if (!isGradientOf(r, value) || (r.free_step >= 0 && r.free_step <= last)) continue;
    if (std::find(moved.begin(), moved.end(), *t) != moved.end()) continue;
    moved.push_back(*t);
    return;
  }
}

// The backward step of node at whose end the original had let its gradient
// of `value` go (added to a running sum in place): the step that freed a
// gradient of the value its backward made, or else its last. A linear's
// backward is two steps, AddmmBackward0 and TBackward0: the bias's gradient
// goes in the first, the weight's (through the transpose) in the second, and
// the checkpoint holds the bias's through the second as well.
int gradientLetGoStep(const ProfileIndex& index, int node, int value) {
  const int first = index.first_backward_step[node], last = index.last_backward_step[node];
  int step = last;
  anyBackwardAllocation(index, node, [&](const TensorRecord& r) {
    if (isGradientOf(r, value) && r.free_step >= first && r.free_step < step) step = r.free_step;
    return false;
  });
  return step;
}

// A gradient of `bytes` made by backward step `step`, held by the checkpoint
// from that step's end until its return has handed every gradient on.
void holdGradientToReturn(const ProfileIndex& index, const SegmentTiming& timing, int64_t bytes, int step,
                          std::vector<LeafInterval>& held) {
  const LeafInterval interval{bytes, static_cast<int>(Category::Gradient), returnLeaf(index.stepEndEvent(step)),
                              blockLeaf(timing.end_event)};
  if (interval.begin_leaf < interval.end_leaf) held.push_back(interval);
}

// Whether a node reads the weight storage as the weight itself (a value with no
// producer, or one an attribute read makes), rather than only through a view
// another node made of it. An eager forward's op stream reads a linear's weight
// as t(weight) and then mm: the mm's gradient reaches the weight through the
// transpose's backward, one use, not a second one summed with it.
bool readsWeightItself(const ProfileIndex& index, int node, int weight) {
  const Profile& p = index.profile;
  if (node < 0 || node >= index.node_count) return false;
  return std::any_of(p.nodes[node].reads.begin(), p.nodes[node].reads.end(), [&](int v) {
    if (v < 0 || v >= static_cast<int>(p.values.size()) || weightReadAs(index, p.values[v]) != weight) return false;
    const int producer = p.values[v].producer_node;
    return producer < 0 || producer >= index.node_count || p.nodes[producer].role == CutRole::Duplicable;
  });
}

// A traced model reads a weight through one value per use (a GetAttr each),
// so uses of one weight are separate checkpoint inputs even across values.
// A use whose gradient the original added to a running sum begun by a use
// backwarded earlier is held by the checkpoint until it returns, where the
// original folded it in at once. Where the original summed into a new tensor
// and this is the segment's first use of the weight, the older sum it freed
// was a gradient the segment received, already held (tensorIntervals), and
// the new sum stands for the held gradient: nothing to add.
void heldWeightGradients(const ProfileIndex& index, const SegmentTiming& timing, int node, const GraphValue& value,
                         std::vector<LeafInterval>& held) {
  const int weight = weightReadAs(index, value);
  if (weight < 0) return;
  const int step = index.first_backward_step[node];
  bool sum_begun = false, first_in_segment = true;
  for (int user : index.profile.tensors[weight].users) {
    const int user_step = index.first_backward_step[user];
    if (user == node || user_step < 0 || user_step >= step || !readsWeightItself(index, user, weight)) continue;
    sum_begun = true;
    if (user >= timing.range.first_node && user <= timing.range.last_node) first_in_segment = false;
  }
  if (!sum_begun || (first_in_segment && !summedInPlace(index, node, value.id))) return;
  holdGradientToReturn(index, timing, value.bytes, gradientLetGoStep(index, node, value.id), held);
}

// Fills timing.held_use_gradients and timing.view_holding_uses
// (memory_rules.h): per outside tensor that may need grad, the uses inside the
// range whose node has a backward, in backward order, all but the first; the
// first too where it is a use of a shared weight (heldWeightGradients).
void addHeldUseGradients(const ProfileIndex& index, const SegmentBoundary& boundary, SegmentTiming& timing) {
  std::vector<LeafInterval>& held = timing.held_use_gradients;
  const Profile& p = index.profile;
  // Each use's node by the last step of its backward, taken from the reader
  // itself rather than from steps[step].node, which a damaged profile may set
  // to a node that does not exist (the fuzzer's find).
  std::vector<std::pair<int, int>> use_steps;
  for (int v : boundary.inputs) {
    const GraphValue& value = p.values[v];
    if (!value.is_tensor || !value.needs_grad || value.entry != ValueEntry::Input || value.bytes <= 0) continue;
    if (std::find(boundary.replayed_inputs.begin(), boundary.replayed_inputs.end(), v) != boundary.replayed_inputs.end())
      continue;  // one snapshot input, not one per use
    use_steps.clear();
    const int* readers_end = index.readers_of_value.end(v);
    for (const int* n = std::lower_bound(index.readers_of_value.begin(v), readers_end, timing.range.first_node);
         n != readers_end && *n <= timing.range.last_node; ++n)
      if (index.first_backward_step[*n] >= 0) use_steps.emplace_back(index.last_backward_step[*n], *n);
    if (use_steps.empty()) continue;
    std::sort(use_steps.begin(), use_steps.end());
    const int first = use_steps[0].second;
    heldWeightGradients(index, timing, first, value, held);
    // A first use that hands on a view while a sum waits for the value: the
    // original added the view to that sum at once and let the gradient go;
    // the checkpoint keeps the view, and so the whole gradient, until it returns.
    const bool sum_waiting = sumWaits(index, timing, index.readers_of_value.begin(v), readers_end);
    if (sum_waiting && weightReadAs(index, value) < 0) {
      if (handsOnView(index, first, v)) {
        timing.view_holding_uses.push_back({first, v});
        if (!summedInPlace(index, first, v)) sumMadeAtReturn(index, first, v, timing);
      } else if (summedInPlace(index, first, v)) {
        // A gradient of its own that the original added in place to the sum
        // waiting for the value (LibTorch 2.x's InputBuffer steals the sum's
        // buffer) and let go at once: the checkpoint holds it until it
        // returns, as it does a shared weight's (heldWeightGradients). Out of
        // place, the waiting sum it freed is a gradient the segment received,
        // already held, and the new sum stands for the held gradient.
        holdGradientToReturn(index, timing, value.bytes, gradientLetGoStep(index, first, v), held);
      }
    }
    for (size_t u = 1; u < use_steps.size(); ++u) {
      const int node = use_steps[u].second;
      // A later use that hands on a view of the gradient it received (a
      // cat's slice): that whole gradient is then what the checkpoint holds
      // (tensorIntervals), not a copy, and the sum the original made there
      // is made at the return.
      if (handsOnView(index, node, v)) {
        timing.view_holding_uses.push_back({node, v});
        if (!summedInPlace(index, node, v)) sumMadeAtReturn(index, node, v, timing);
        continue;
      }
      holdGradientToReturn(index, timing, value.bytes, gradientLetGoStep(index, node, v), held);
    }
  }
}

// The node whose step freed a tensor, or -1 (never freed, or freed by a step
// of no node: the loss, the optimizer).
int nodeThatFreed(const ProfileIndex& index, const TensorRecord& t) {
  return t.free_step >= 0 && t.free_step < index.step_count ? index.profile.steps[t.free_step].node : -1;
}

// Whether one of the segment's view-holding uses hands on a view of gradient
// r: the use frees r itself, or r is what autograd's hooks reported as the
// use's value's gradient while the use's backward ran (a cat's slice, when
// another node of the segment frees the rest of r later).
bool viewHeldBySegment(const ProfileIndex& index, const SegmentTiming& timing, const TensorRecord& r) {
  const int freeing_node = nodeThatFreed(index, r);
  return std::any_of(timing.view_holding_uses.begin(), timing.view_holding_uses.end(),
                     [&](const SegmentTiming::ViewHoldingUse& use) {
                       return use.node == freeing_node ||
                              (isGradientOf(r, use.value) && r.alloc_step <= index.first_backward_step[use.node] &&
                               index.last_backward_step[use.node] <= r.free_step);
                     });
}

// `v`'s value as its tensor's first value has it, and every other value on
// that tensor (ProfileIndex::same_tensor_as, aliases_of_value), into `out`.
void valuesOnTheTensorOf(const ProfileIndex& index, int v, std::vector<int>& out) {
  const int root = index.same_tensor_as[v];
  out.assign(1, root);
  out.insert(out.end(), index.aliases_of_value.begin(root), index.aliases_of_value.end(root));
}

// Fills more of timing.held_use_gradients (memory_rules.h): a segment output
// that nodes after the segment read and that is also read inside it gets two
// gradients. The one from outside comes first and waits in the output's
// buffer; where the original's inside use added its own to that buffer in
// place, the sum went on in the one buffer. The checkpoint's backward hands
// the outside gradient to its recompute as a gradient it received, so the
// engine cannot add to it in place: the sum is a new tensor, which lives as
// long as the original's buffer did, while the received gradient stays until
// the checkpoint returns. Where the original's buffer died inside the
// segment's backward, tensorIntervals already holds it to the return, so the
// second tensor is the sum, from the inside use to the buffer's free; where it
// outlived the segment (a residual stream's gradient, passed on through the
// adds), the second is the received gradient, from the inside use to the
// return. Measured on a decoder whose segment ends with the residual add and
// the layer norm reading it (one residual more from that layer norm's backward
// to the return), and on a head whose segment's output h feeds a linear inside
// and a sigmoid after (one h-sized sum from the linear's backward to relu's).
// The output may be read inside through another value on its tensor
// (ProfileIndex::same_tensor_as): a traced LSTMCell's segment ends with the
// unpack of (h, c), so the c read after it is the unpack's output while the
// cell's tanh read the c the add made; both are the one tensor, with one
// gradient buffer in the original (one c-sized sum more from tanh's backward
// to the muls' that consume c's gradient).
void addHeldOutputGradients(const ProfileIndex& index, const SegmentBoundary& boundary, SegmentTiming& timing) {
  const Profile& p = index.profile;
  const int segment_return = blockLeaf(timing.end_event);
  std::vector<int> same_tensor;  // the output's value and every other value on its tensor
  for (int v : boundary.outputs) {
    const GraphValue& value = p.values[v];
    if (!value.is_tensor || !value.needs_grad || value.bytes <= 0) continue;
    valuesOnTheTensorOf(index, v, same_tensor);
    if (std::none_of(same_tensor.begin(), same_tensor.end(), [&](int alias) {
          return sumWaits(index, timing, index.readers_of_value.begin(alias), index.readers_of_value.end(alias));
        }))
      continue;
    // The inside use backwarded first, its last backward step, and the value it reads the tensor through.
    int inside_step = -1, inside_node = -1, inside_value = -1;
    for (int alias : same_tensor) {
      const int* readers_end = index.readers_of_value.end(alias);
      for (const int* n = std::lower_bound(index.readers_of_value.begin(alias), readers_end, timing.range.first_node);
           n != readers_end && *n <= timing.range.last_node; ++n)
        if (index.first_backward_step[*n] >= 0 && (inside_step < 0 || index.last_backward_step[*n] < inside_step)) {
          inside_step = index.last_backward_step[*n];
          inside_node = *n;
          inside_value = alias;
        }
    }
    if (inside_step < 0 || !summedInPlace(index, inside_node, inside_value)) continue;
    // The buffer, if a node of the segment freed it after the inside use: the
    // latest gradient of the output (through any value on its tensor) that
    // was waiting before the segment's backward began. A traced LSTMCell's h
    // and c are both 16 x 128 floats: h's buffer dies at the mul that made h,
    // c's later, at the muls that read the c the cell received.
    int buffer_end = -1;
    bool buffer_view_held = false;
    for (int n = timing.range.first_node; n <= timing.range.last_node; ++n)
      for (const int* t = index.gradients_received_by_node.begin(n); t != index.gradients_received_by_node.end(n);
           ++t) {
        const TensorRecord& r = p.tensors[*t];
        const bool of_this_output =
            std::any_of(same_tensor.begin(), same_tensor.end(), [&](int alias) { return isGradientOf(r, alias); });
        if (!of_this_output || r.alloc_step >= timing.first_backward_step || r.free_step <= inside_step)
          continue;
        buffer_end = std::max(buffer_end, eventLeaf(r.free_event));
        buffer_view_held = buffer_view_held || viewHeldBySegment(index, timing, r);
      }
    // Where a use of the segment hands on a view of the buffer (a cat that
    // made the output from an outside value), the sum that stands for it in
    // the recompute is held with that view until the return.
    const int end_leaf =
        buffer_end < 0 || buffer_view_held ? segment_return : std::min(buffer_end, segment_return);
    const LeafInterval interval{value.bytes, static_cast<int>(Category::Gradient),
                                returnLeaf(index.stepEndEvent(inside_step)), end_leaf};
    if (interval.begin_leaf < interval.end_leaf) timing.held_use_gradients.push_back(interval);
  }
}

// The gradient of `value` that `node`'s backward made and let go within its
// own steps, having added it in place to the buffer that held the value's
// gradient, or -1: a node that hands on a view or the gradient it received
// makes none, and one whose gradient outlives its steps began a new sum.
int gradientAddedInPlace(const ProfileIndex& index, int node, int value) {
  const int last = index.last_backward_step[node];
  int summand = -1;
  const bool new_sum = anyBackwardAllocation(index, node, [&](const TensorRecord& r) {
    if (!isGradientOf(r, value)) return false;
    if (r.free_step < 0 || r.free_step > last) return true;
    if (summand < 0) summand = r.id;
    return false;
  });
  return new_sum ? -1 : summand;
}

// Fills more of timing.held_use_gradients (memory_rules.h, "a gradient passed
// on inside the segment"): a segment output's backward inside the segment may
// hand the gradient it received on unchanged as the gradient of a tensor made
// inside (an add hands the gradient of its sum to both of its operands), so in
// the original the one buffer, the received gradient, became that tensor's
// gradient too, and a later use of the tensor inside the segment added its own
// gradient to it in place (the engine steals a buffer nothing else holds). The
// checkpoint holds every gradient it received until it returns, so the engine
// cannot add to that buffer in place: the sum is a new tensor, made where the
// original added (just before the use let its own gradient go) and alive as
// long as the original's buffer, while the received gradient stays until the
// return (tensorIntervals). Which tensors a buffer is the gradient of is
// read from autograd's hooks (TensorRecord::gradient_of), not from op names.
// Measured on x = relu(fc(h)); y = x + fc2(x.gather(-1, index)) with the
// segment from fc to the add (batch 8 x 32 x 64 floats): the gather's
// backward made a second 64 KiB gradient of x, alive until relu's backward,
// 32 KiB above the plan at the floor (issue 61). Outputs that the segment
// also reads are addHeldOutputGradients' case, and a buffer that outlives the
// segment (passed on again to a tensor made outside it) is not looked for.
void addPassedOnOutputGradients(const ProfileIndex& index, const SegmentBoundary& boundary, SegmentTiming& timing) {
  const Profile& p = index.profile;
  const int value_count = static_cast<int>(p.values.size());
  const int segment_return = blockLeaf(timing.end_event);
  const auto inside = [&](int node) { return node >= timing.range.first_node && node <= timing.range.last_node; };
  std::vector<int> same_tensor;  // the output's value and every other value on its tensor
  for (int v : boundary.outputs) {
    const GraphValue& value = p.values[v];
    if (!value.is_tensor || !value.needs_grad || value.bytes <= 0) continue;
    valuesOnTheTensorOf(index, v, same_tensor);
    // A use inside with a backward is addHeldOutputGradients' case (an argmax has none).
    const auto used_inside = [&](int alias) {
      return std::any_of(index.readers_of_value.begin(alias), index.readers_of_value.end(alias),
                         [&](int node) { return inside(node) && index.first_backward_step[node] >= 0; });
    };
    if (std::any_of(same_tensor.begin(), same_tensor.end(), used_inside)) continue;
    if (std::none_of(same_tensor.begin(), same_tensor.end(), [&](int alias) {
          return sumWaits(index, timing, index.readers_of_value.begin(alias), index.readers_of_value.end(alias));
        }))
      continue;
    for (int n = timing.range.first_node; n <= timing.range.last_node; ++n)
      for (const int* t = index.gradients_received_by_node.begin(n); t != index.gradients_received_by_node.end(n);
           ++t) {
        const TensorRecord& buffer = p.tensors[*t];
        if (!buffer.gradient_of || buffer.alloc_step >= timing.first_backward_step) continue;
        const std::vector<int>& holds = *buffer.gradient_of;
        if (std::none_of(same_tensor.begin(), same_tensor.end(),
                         [&](int alias) { return isGradientOf(buffer, alias); }))
          continue;
        // The first use (in backward order), while the buffer lived, of a tensor made inside that it
        // is also the gradient of, which added its own gradient to it in place.
        int first_step = -1, summand = -1;
        for (int w : holds) {
          if (w < 0 || w >= value_count || !inside(p.values[w].producer_node) ||
              std::find(same_tensor.begin(), same_tensor.end(), w) != same_tensor.end())
            continue;
          for (const int* r = index.readers_of_value.begin(w); r != index.readers_of_value.end(w); ++r) {
            const int step = index.last_backward_step[*r];
            if (!inside(*r) || step < 0 || index.first_backward_step[*r] <= buffer.alloc_step ||
                step >= buffer.free_step || (first_step >= 0 && step >= first_step))
              continue;
            const int added = gradientAddedInPlace(index, *r, w);
            if (added < 0) continue;
            first_step = step;
            summand = added;
          }
        }
        if (summand < 0) continue;
        const LeafInterval interval{buffer.bytes, static_cast<int>(Category::Gradient),
                                    eventLeaf(p.tensors[summand].free_event - 1),
                                    std::min(eventLeaf(buffer.free_event), segment_return)};
        if (interval.begin_leaf < interval.end_leaf) timing.held_use_gradients.push_back(interval);
      }
  }
}

// What the checkpoint's return adds above the gradients it holds
// (memory_rules.h). The returned gradients belong to one buffer per outside
// tensor: a weight's storage (a trace reads it through one value per use) or
// the value itself. Per buffer: whether a use outside the segment handed it a
// gradient before the segment's backward began (a running sum is waiting),
// and whether the original made a new tensor for the sum at the segment's
// uses that add to the buffer (all of them when a sum was waiting; all but
// the first in backward order otherwise, whose gradient became the buffer).
void addReturnSums(const ProfileIndex& index, const SegmentBoundary& boundary, SegmentTiming& timing) {
  const Profile& p = index.profile;
  struct Use {
    int buffer;  // a weight storage s as s, a value v as -1 - v
    int step;    // the last backward step of the use's node
    int node;
    int value;
  };
  std::vector<Use> uses;
  for (int v : boundary.inputs) {
    const GraphValue& value = p.values[v];
    if (!value.is_tensor || !value.needs_grad || value.entry != ValueEntry::Input || value.bytes <= 0) continue;
    const int* readers_end = index.readers_of_value.end(v);
    for (const int* n = std::lower_bound(index.readers_of_value.begin(v), readers_end, timing.range.first_node);
         n != readers_end && *n <= timing.range.last_node; ++n) {
      if (index.first_backward_step[*n] < 0) continue;
      const int weight = weightReadAs(index, value);
      uses.push_back(Use{weight >= 0 ? weight : -1 - v, index.last_backward_step[*n], *n, v});
    }
  }
  std::sort(uses.begin(), uses.end(),
            [](const Use& a, const Use& b) { return a.buffer != b.buffer ? a.buffer < b.buffer : a.step < b.step; });
  int64_t waiting_sums = 0, largest_sum = 0;
  for (size_t first = 0, end = 0; first < uses.size(); first = end) {
    end = first;
    while (end < uses.size() && uses[end].buffer == uses[first].buffer) ++end;
    const int buffer = uses[first].buffer;
    const int64_t bytes = p.values[uses[first].value].bytes;
    bool sum_waiting = false;
    if (buffer >= 0) {
      const std::vector<int>& users = p.tensors[buffer].users;
      sum_waiting = sumWaits(index, timing, users.data(), users.data() + users.size());
    } else {
      sum_waiting = sumWaits(index, timing, index.readers_of_value.begin(-1 - buffer),
                             index.readers_of_value.end(-1 - buffer));
    }
    bool new_sums = false;
    for (size_t u = sum_waiting ? first : first + 1; u < end; ++u)
      new_sums = new_sums || !summedInPlace(index, uses[u].node, uses[u].value);
    if (!new_sums) continue;
    if (sum_waiting) waiting_sums += bytes;
    largest_sum = std::max(largest_sum, bytes);
  }
  const int leaf = returnLeaf(timing.end_event);
  timing.return_sums = LeafInterval{waiting_sums + largest_sum, static_cast<int>(Category::Gradient), leaf, leaf + 1};
}

}  // namespace

SegmentTiming segmentSpan(const ProfileIndex& index, NodeRange range) {
  SegmentTiming timing;
  timing.range = range;
  int first_forward_step = -1, last_forward_step = -1;
  for (int n = range.first_node; n <= range.last_node; ++n) {
    const int bs = index.first_backward_step[n];
    if (bs >= 0) {
      if (timing.first_backward_step < 0 || bs < timing.first_backward_step) timing.first_backward_step = bs;
      timing.last_backward_step = std::max(timing.last_backward_step, index.last_backward_step[n]);
    }
    const int fs = index.profile.nodes[n].forward_step;
    if (fs >= 0) {
      if (first_forward_step < 0) first_forward_step = fs;
      last_forward_step = fs;
    }
  }
  timing.has_backward = timing.first_backward_step >= 0 && first_forward_step >= 0;
  if (!timing.has_backward) return timing;
  timing.recompute_event = index.step_first_event[timing.first_backward_step];
  timing.end_event = index.stepEndEvent(timing.last_backward_step);
  timing.forward_first_event = index.step_first_event[first_forward_step];
  timing.forward_end_event = index.stepEndEvent(last_forward_step);
  timing.rng_state_bytes = index.profile.meta.checkpoint_rng_state_bytes;
  timing.kept_state_bytes = timing.rng_state_bytes;
  return timing;
}

SegmentTiming segmentTiming(const ProfileIndex& index, NodeRange range) {
  SegmentTiming timing = segmentSpan(index, range);
  if (!timing.has_backward) return timing;
  const SegmentBoundary boundary = index.rules.boundary(range.first_node, range.last_node);
  // A copy of each written storage (acprof::checkpoint's snapshotOnStorageCopy): one per storage
  // however many written inputs are on it, its whole bytes; a value whose storage the profile
  // does not know is its own copy.
  std::vector<int> copied_storages;
  for (int v : boundary.replayed_inputs) {
    const int t = index.profile.values[v].tensor;
    if (t < 0 || t >= static_cast<int>(index.profile.tensors.size())) {
      timing.kept_state_bytes += index.profile.values[v].bytes;
    } else if (std::find(copied_storages.begin(), copied_storages.end(), t) == copied_storages.end()) {
      copied_storages.push_back(t);
      timing.kept_state_bytes += index.profile.tensors[t].bytes;
    }
  }
  timing.kept_state_bytes += convertedInputBytes(index.profile, boundary);
  addHeldUseGradients(index, boundary, timing);
  addHeldOutputGradients(index, boundary, timing);
  addPassedOnOutputGradients(index, boundary, timing);
  addReturnSums(index, boundary, timing);
  return timing;
}

InsideRole insideRole(const ProfileIndex& index, int tensor, const SegmentTiming& segment) {
  const TensorRecord& t = index.profile.tensors[tensor];
  if (index.last_user_node[tensor] > segment.range.last_node || t.category == Category::Output)
    return InsideRole::Output;
  // Before the iteration's end: what only unreached saves hold outlives it in
  // the original (the graph of an output no loss reads stays with the output).
  if (t.saved_by && !t.saved_by->empty() &&
      std::all_of(t.saved_by->begin(), t.saved_by->end(), [&](const TensorRecord::SavedBy& by) {
        return by.release_step < 0 && by.node >= segment.range.first_node && by.node <= segment.range.last_node;
      }))
    return InsideRole::UnreachedSave;
  if (index.outlivesIteration(tensor)) return InsideRole::Output;
  if (t.free_event >= segment.forward_first_event && t.free_event < segment.forward_end_event)
    return InsideRole::Temporary;
  if (t.free_step >= 0 && index.phaseOfStep(t.free_step) == Phase::Backward) return InsideRole::InternalActivation;
  return InsideRole::HeldCopy;
}

namespace {
// A decision in which every node is in a checkpoint with a backward: the one
// under which the fewest saves hold a segment's output.
class EveryNodeCheckpointed : public DecisionView {
 public:
  explicit EveryNodeCheckpointed(const SegmentTiming& segment) : segment_(segment) {}
  const SegmentTiming* segmentContaining(int) const override { return &segment_; }

 private:
  const SegmentTiming& segment_;
};
}  // namespace

bool checkpointMayFreeEarlier(const ProfileIndex& index, int tensor, const SegmentTiming& segment) {
  const InsideRole role = insideRole(index, tensor, segment);
  if (droppedByCheckpoint(role)) return true;
  if (role != InsideRole::Output || !segment.has_backward) return false;
  return outputForwardEnd(index, index.profile.tensors[tensor], segment, EveryNodeCheckpointed(segment)) <
         returnLeaf(segment.recompute_event);
}

RecomputeBlock recomputeBlock(const ProfileIndex& index, const SegmentTiming& segment) {
  RecomputeBlock block;
  if (!segment.has_backward) return block;
  block.leaf = blockLeaf(segment.recompute_event);
  constexpr int kActivation = static_cast<int>(Category::Activation);
  block.kept_state = LeafInterval{segment.kept_state_bytes, kActivation, gapLeaf(segment.forward_first_event),
                                  returnLeaf(segment.end_event)};
  const auto inside = [&](int tensor) {
    const int producer = index.profile.tensors[tensor].producer_node;
    return producer >= segment.range.first_node && producer <= segment.range.last_node;
  };
  // The recompute starts by copying the current generator state (to put it back after).
  CategoryBytes running{};
  running[kActivation] = segment.rng_state_bytes;
  int64_t running_total = segment.rng_state_bytes;
  if (running_total > 0) {
    block.has_events = true;
    block.rise_bytes = running_total;
    block.rise_by_category = running;
  }
  for (int e = segment.forward_first_event; e < segment.forward_end_event; ++e) {
    bool replayed = false;
    for (const int* t = index.tensors_allocated_at_event.begin(e); t != index.tensors_allocated_at_event.end(e); ++t) {
      if (!inside(*t)) continue;
      const TensorRecord& r = index.profile.tensors[*t];
      running[static_cast<int>(r.category)] += r.bytes;
      running_total += r.bytes;
      replayed = true;
    }
    for (const int* t = index.tensors_freed_at_event.begin(e); t != index.tensors_freed_at_event.end(e); ++t) {
      if (!inside(*t) || insideRole(index, *t, segment) != InsideRole::Temporary) continue;
      const TensorRecord& r = index.profile.tensors[*t];
      running[static_cast<int>(r.category)] -= r.bytes;
      running_total -= r.bytes;
      replayed = true;
    }
    if (replayed && (!block.has_events || running_total > block.rise_bytes)) {
      block.rise_bytes = running_total;
      block.rise_by_category = running;
      block.has_events = true;
    }
  }
  return block;
}

int tensorIntervals(const ProfileIndex& index, int tensor, const DecisionView& decision, LeafInterval out[2]) {
  const TensorRecord& t = index.profile.tensors[tensor];
  const int E = index.event_count;
  LeafInterval life{t.bytes, static_cast<int>(t.category), t.alloc_event < 0 ? 0 : eventLeaf(t.alloc_event),
                    t.free_event >= E ? leafCount(E) : eventLeaf(t.free_event)};
  int count = 0;
  const SegmentTiming* own = t.producer_node >= 0 ? decision.segmentContaining(t.producer_node) : nullptr;
  if (own && !own->has_backward) own = nullptr;
  if (own) {
    const int after_recompute = gapLeaf(own->recompute_event);
    const int segment_end = returnLeaf(own->end_event);
    LeafInterval copy{t.bytes, life.category, after_recompute, segment_end};
    switch (insideRole(index, tensor, *own)) {
      case InsideRole::Output:
        if (const int end = outputForwardEnd(index, t, *own, decision); end != kNoEarlierEnd) life.end_leaf = end;
        break;
      case InsideRole::Temporary:
      case InsideRole::HeldCopy:  // its holder (autocast's cache) ends with the recompute
        copy.end_leaf = copy.begin_leaf;  // lives only inside the block
        break;
      case InsideRole::InternalActivation: {
        const int last_use_step = std::max(t.alloc_step, t.last_forward_use_step);
        copy.end_leaf = life.end_leaf > after_recompute ? life.end_leaf : segment_end;
        life.end_leaf = returnLeaf(index.stepEndEvent(last_use_step));
        break;
      }
      case InsideRole::UnreachedSave: {
        const int last_use_step = std::max(t.alloc_step, t.last_forward_use_step);
        copy.end_leaf = segment_end;
        life.end_leaf = returnLeaf(index.stepEndEvent(last_use_step));
        break;
      }
    }
    if (copy.end_leaf > copy.begin_leaf) out[count++] = copy;
  }
  // The checkpoint's backward holds the gradients it received until it
  // returns; the original backward freed each once its node had used it.
  const int consumer_node = nodeThatFreed(index, t);
  if (t.producer_node < 0 && consumer_node >= 0 && consumer_node < index.node_count) {
    const SegmentTiming* consumer = decision.segmentContaining(consumer_node);
    if (consumer && consumer->has_backward && t.alloc_step < consumer->first_backward_step &&
        t.free_step <= consumer->last_backward_step && index.phaseOfStep(t.free_step) == Phase::Backward)
      life.end_leaf = std::max(life.end_leaf, returnLeaf(consumer->end_event));
    // Received by a use that hands a view of it on as an outside tensor's
    // gradient: alive until the return has handed that view on.
    if (consumer && consumer->has_backward && t.alloc_step < t.free_step && viewHeldBySegment(index, *consumer, t))
      life.end_leaf = std::max(life.end_leaf, blockLeaf(consumer->end_event));
  }
  // A sum the original made at a use that hands on a view begins at its checkpoint's return.
  const int maker_node = t.producer_node < 0 && t.alloc_step >= 0 && t.alloc_step < index.step_count
                             ? index.profile.steps[t.alloc_step].node
                             : -1;
  if (maker_node >= 0 && maker_node < index.node_count) {
    const SegmentTiming* maker = decision.segmentContaining(maker_node);
    if (maker && maker->has_backward &&
        std::find(maker->sums_made_at_return.begin(), maker->sums_made_at_return.end(), tensor) !=
            maker->sums_made_at_return.end())
      life.begin_leaf = std::min(std::max(life.begin_leaf, blockLeaf(maker->end_event)), life.end_leaf);
  }
  if (t.alloc_event >= 0) {
    for (const int* it = t.users.data(); it != t.users.data() + t.users.size(); ++it) {
      const SegmentTiming* reader = decision.segmentContaining(*it);
      if (reader && reader != own && reader->has_backward)
        life.end_leaf = std::max(life.end_leaf, returnLeaf(reader->end_event));
    }
  }
  out[count++] = life;
  return count;
}

}  // namespace acprof
