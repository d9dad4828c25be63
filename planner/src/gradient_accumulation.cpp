#include "gradient_accumulation.h"

#include <algorithm>
#include <utility>

namespace acprof {

namespace {

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

// [view-holding-use]: whether a use's backward hands on a view of the gradient it received (a
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

// [sum-waits]: whether one of a tensor's readers outside the segment ran its
// backward before the segment's backward began: a gradient it handed on waits in the
// tensor's buffer, a running sum.
bool sumWaits(const ProfileIndex& index, const SegmentSpan& span, const int* readers_begin,
              const int* readers_end) {
  return std::any_of(readers_begin, readers_end, [&](int node) {
    const int step = index.first_backward_step[node];
    return (node < span.range.first_node || node > span.range.last_node) && step >= 0 &&
           step < span.first_backward_step;
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
// outlives it), one such sum begins at the return instead ([view-holding-use]).
// Sums of one value are interchangeable; each use takes one not yet taken.
void sumMadeAtReturn(const ProfileIndex& index, int node, int value, GradientHolds& holds) {
  const int last = index.last_backward_step[node];
  std::vector<int>& moved = holds.sums_made_at_return;
  for (const int* t = index.backward_allocations_by_node.begin(node); t != index.backward_allocations_by_node.end(node);
       ++t) {
    const TensorRecord& r = index.profile.tensors[*t];
    if (!isGradientOf(r, value) || (r.free_step >= 0 && r.free_step <= last)) continue;
    if (std::find(moved.begin(), moved.end(), *t) != moved.end()) continue;
    moved.push_back(*t);
    return;
  }
}

// [held-use-gradient]: the backward step of node at whose end the original had let its gradient
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
// from that step's end until its return has handed every gradient on ([return-hand-over]).
void holdGradientToReturn(const ProfileIndex& index, const SegmentSpan& span, int64_t bytes, int step,
                          std::vector<LeafInterval>& held) {
  const LeafInterval interval{bytes, static_cast<int>(Category::Gradient), returnLeaf(index.stepEndEvent(step)),
                              blockLeaf(span.end_event)};
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

// [shared-weight-use]: a traced model reads a weight through one value per use (a GetAttr each),
// so uses of one weight are separate checkpoint inputs even across values.
// A use whose gradient the original added to a running sum begun by a use
// backwarded earlier is held by the checkpoint until it returns, where the
// original folded it in at once. Where the original summed into a new tensor
// and this is the segment's first use of the weight, the older sum it freed
// was a gradient the segment received, already held (tensorIntervals), and
// the new sum stands for the held gradient: nothing to add.
void heldWeightGradients(const ProfileIndex& index, const SegmentSpan& span, int node, const GraphValue& value,
                         std::vector<LeafInterval>& held) {
  const int weight = weightReadAs(index, value);
  if (weight < 0) return;
  const int step = index.first_backward_step[node];
  bool sum_begun = false, first_in_segment = true;
  for (int user : index.profile.tensors[weight].users) {
    const int user_step = index.first_backward_step[user];
    if (user == node || user_step < 0 || user_step >= step || !readsWeightItself(index, user, weight)) continue;
    sum_begun = true;
    if (user >= span.range.first_node && user <= span.range.last_node) first_in_segment = false;
  }
  if (!sum_begun || (first_in_segment && !summedInPlace(index, node, value.id))) return;
  holdGradientToReturn(index, span, value.bytes, gradientLetGoStep(index, node, value.id), held);
}

// Fills holds.held_use_gradients and holds.view_holding_uses ([held-use-gradient],
// [sum-waits], [view-holding-use]): per outside tensor that may need grad, the
// uses inside the range whose node has a backward, in backward order, all but
// the first; the first too where it is a use of a shared weight
// ([shared-weight-use], heldWeightGradients).
void addHeldUseGradients(const ProfileIndex& index, const SegmentBoundary& boundary, const SegmentSpan& span,
                         GradientHolds& holds) {
  std::vector<LeafInterval>& held = holds.held_use_gradients;
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
    for (const int* n = std::lower_bound(index.readers_of_value.begin(v), readers_end, span.range.first_node);
         n != readers_end && *n <= span.range.last_node; ++n)
      if (index.first_backward_step[*n] >= 0) use_steps.emplace_back(index.last_backward_step[*n], *n);
    if (use_steps.empty()) continue;
    std::sort(use_steps.begin(), use_steps.end());
    const int first = use_steps[0].second;
    heldWeightGradients(index, span, first, value, held);
    // A first use that hands on a view while a sum waits for the value: the
    // original added the view to that sum at once and let the gradient go;
    // the checkpoint keeps the view, and so the whole gradient, until it returns.
    const bool sum_waiting = sumWaits(index, span, index.readers_of_value.begin(v), readers_end);
    if (sum_waiting && weightReadAs(index, value) < 0) {
      if (handsOnView(index, first, v)) {
        holds.view_holding_uses.push_back({first, v});
        if (!summedInPlace(index, first, v)) sumMadeAtReturn(index, first, v, holds);
      } else if (summedInPlace(index, first, v)) {
        // A gradient of its own that the original added in place to the sum
        // waiting for the value (LibTorch 2.x's InputBuffer steals the sum's
        // buffer) and let go at once: the checkpoint holds it until it
        // returns, as it does a shared weight's (heldWeightGradients). Out of
        // place, the waiting sum it freed is a gradient the segment received,
        // already held, and the new sum stands for the held gradient.
        holdGradientToReturn(index, span, value.bytes, gradientLetGoStep(index, first, v), held);
      }
    }
    for (size_t u = 1; u < use_steps.size(); ++u) {
      const int node = use_steps[u].second;
      // A later use that hands on a view of the gradient it received (a
      // cat's slice): that whole gradient is then what the checkpoint holds
      // (tensorIntervals), not a copy, and the sum the original made there
      // is made at the return.
      if (handsOnView(index, node, v)) {
        holds.view_holding_uses.push_back({node, v});
        if (!summedInPlace(index, node, v)) sumMadeAtReturn(index, node, v, holds);
        continue;
      }
      holdGradientToReturn(index, span, value.bytes, gradientLetGoStep(index, node, v), held);
    }
  }
}

}  // namespace

// The node whose step freed a tensor, or -1 (never freed, or freed by a step
// of no node: the loss, the optimizer).
int nodeThatFreed(const ProfileIndex& index, const TensorRecord& t) {
  return t.free_step >= 0 && t.free_step < index.step_count ? index.profile.steps[t.free_step].node : -1;
}

// Whether one of the segment's view-holding uses hands on a view of gradient
// r: the use frees r itself, or r is what autograd's hooks reported as the
// use's value's gradient while the use's backward ran (a cat's slice, when
// another node of the segment frees the rest of r later).
bool viewHeldBySegment(const ProfileIndex& index, const GradientHolds& holds, const TensorRecord& r) {
  const int freeing_node = nodeThatFreed(index, r);
  return std::any_of(holds.view_holding_uses.begin(), holds.view_holding_uses.end(),
                     [&](const GradientHolds::ViewHoldingUse& use) {
                       return use.node == freeing_node ||
                              (isGradientOf(r, use.value) && r.alloc_step <= index.first_backward_step[use.node] &&
                               index.last_backward_step[use.node] <= r.free_step);
                     });
}

namespace {

// `v`'s value as its tensor's first value has it, and every other value on
// that tensor (ProfileIndex::same_tensor_as, aliases_of_value), into `out`.
void valuesOnTheTensorOf(const ProfileIndex& index, int v, std::vector<int>& out) {
  const int root = index.same_tensor_as[v];
  out.assign(1, root);
  out.insert(out.end(), index.aliases_of_value.begin(root), index.aliases_of_value.end(root));
}

// [output-read-inside-and-after]: fills more of holds.held_use_gradients. Where
// the original's buffer died inside the segment's backward,
// [received-gradients-held] already holds it to the return, so the second
// tensor is the sum, from the inside use to the buffer's free; where it
// outlived the segment (a residual stream's gradient, passed on through the
// adds), the second is the received gradient, from the inside use to the
// return. The output may be read inside through another value on its tensor
// (ProfileIndex::same_tensor_as): a traced LSTMCell's unpack of (h, c).
void addHeldOutputGradients(const ProfileIndex& index, const SegmentBoundary& boundary, const SegmentSpan& span,
                            GradientHolds& holds) {
  const Profile& p = index.profile;
  const int segment_return = blockLeaf(span.end_event);
  std::vector<int> same_tensor;  // the output's value and every other value on its tensor
  for (int v : boundary.outputs) {
    const GraphValue& value = p.values[v];
    if (!value.is_tensor || !value.needs_grad || value.bytes <= 0) continue;
    valuesOnTheTensorOf(index, v, same_tensor);
    if (std::none_of(same_tensor.begin(), same_tensor.end(), [&](int alias) {
          return sumWaits(index, span, index.readers_of_value.begin(alias), index.readers_of_value.end(alias));
        }))
      continue;
    // The inside use backwarded first, its last backward step, and the value it reads the tensor through.
    int inside_step = -1, inside_node = -1, inside_value = -1;
    for (int alias : same_tensor) {
      const int* readers_end = index.readers_of_value.end(alias);
      for (const int* n = std::lower_bound(index.readers_of_value.begin(alias), readers_end, span.range.first_node);
           n != readers_end && *n <= span.range.last_node; ++n)
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
    for (int n = span.range.first_node; n <= span.range.last_node; ++n)
      for (const int* t = index.gradients_received_by_node.begin(n); t != index.gradients_received_by_node.end(n);
           ++t) {
        const TensorRecord& r = p.tensors[*t];
        const bool of_this_output =
            std::any_of(same_tensor.begin(), same_tensor.end(), [&](int alias) { return isGradientOf(r, alias); });
        if (!of_this_output || r.alloc_step >= span.first_backward_step || r.free_step <= inside_step)
          continue;
        buffer_end = std::max(buffer_end, eventLeaf(r.free_event));
        buffer_view_held = buffer_view_held || viewHeldBySegment(index, holds, r);
      }
    // Where a use of the segment hands on a view of the buffer (a cat that
    // made the output from an outside value), the sum that stands for it in
    // the recompute is held with that view until the return.
    const int end_leaf =
        buffer_end < 0 || buffer_view_held ? segment_return : std::min(buffer_end, segment_return);
    const LeafInterval interval{value.bytes, static_cast<int>(Category::Gradient),
                                returnLeaf(index.stepEndEvent(inside_step)), end_leaf};
    if (interval.begin_leaf < interval.end_leaf) holds.held_use_gradients.push_back(interval);
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

// [passed-on-gradient]: fills more of holds.held_use_gradients. The sum is made
// where the original added (just before the use let its own gradient go) and
// lives as long as the original's buffer. Which tensors a buffer is the
// gradient of is read from autograd's hooks (TensorRecord::gradient_of), not
// from op names. Outputs that the segment also reads are
// [output-read-inside-and-after]'s case, and a buffer that outlives the segment
// (passed on again to a tensor made outside it) is not looked for.
void addPassedOnOutputGradients(const ProfileIndex& index, const SegmentBoundary& boundary, const SegmentSpan& span,
                                GradientHolds& holds) {
  const Profile& p = index.profile;
  const int value_count = static_cast<int>(p.values.size());
  const int segment_return = blockLeaf(span.end_event);
  const auto inside = [&](int node) { return node >= span.range.first_node && node <= span.range.last_node; };
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
          return sumWaits(index, span, index.readers_of_value.begin(alias), index.readers_of_value.end(alias));
        }))
      continue;
    for (int n = span.range.first_node; n <= span.range.last_node; ++n)
      for (const int* t = index.gradients_received_by_node.begin(n); t != index.gradients_received_by_node.end(n);
           ++t) {
        const TensorRecord& buffer = p.tensors[*t];
        if (!buffer.gradient_of || buffer.alloc_step >= span.first_backward_step) continue;
        const std::vector<int>& buffer_holds = *buffer.gradient_of;
        if (std::none_of(same_tensor.begin(), same_tensor.end(),
                         [&](int alias) { return isGradientOf(buffer, alias); }))
          continue;
        // The first use (in backward order), while the buffer lived, of a tensor made inside that it
        // is also the gradient of, which added its own gradient to it in place.
        int first_step = -1, summand = -1;
        for (int w : buffer_holds) {
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
        if (interval.begin_leaf < interval.end_leaf) holds.held_use_gradients.push_back(interval);
      }
  }
}

// [return-sums]: what the checkpoint's return adds above the gradients it holds. The returned gradients belong to one buffer per outside
// tensor: a weight's storage (a trace reads it through one value per use) or
// the value itself. Per buffer: whether a use outside the segment handed it a
// gradient before the segment's backward began (a running sum is waiting),
// and whether the original made a new tensor for the sum at the segment's
// uses that add to the buffer (all of them when a sum was waiting; all but
// the first in backward order otherwise, whose gradient became the buffer).
void addReturnSums(const ProfileIndex& index, const SegmentBoundary& boundary, const SegmentSpan& span,
                   GradientHolds& holds) {
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
    for (const int* n = std::lower_bound(index.readers_of_value.begin(v), readers_end, span.range.first_node);
         n != readers_end && *n <= span.range.last_node; ++n) {
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
      sum_waiting = sumWaits(index, span, users.data(), users.data() + users.size());
    } else {
      sum_waiting = sumWaits(index, span, index.readers_of_value.begin(-1 - buffer),
                             index.readers_of_value.end(-1 - buffer));
    }
    bool new_sums = false;
    for (size_t u = sum_waiting ? first : first + 1; u < end; ++u)
      new_sums = new_sums || !summedInPlace(index, uses[u].node, uses[u].value);
    if (!new_sums) continue;
    if (sum_waiting) waiting_sums += bytes;
    largest_sum = std::max(largest_sum, bytes);
  }
  const int leaf = returnLeaf(span.end_event);
  holds.return_sums = LeafInterval{waiting_sums + largest_sum, static_cast<int>(Category::Gradient), leaf, leaf + 1};
}

}  // namespace

GradientHolds gradientHolds(const ProfileIndex& index, const SegmentBoundary& boundary, const SegmentSpan& span) {
  GradientHolds holds;
  if (!span.has_backward) return holds;
  addHeldUseGradients(index, boundary, span, holds);
  addHeldOutputGradients(index, boundary, span, holds);
  addPassedOnOutputGradients(index, boundary, span, holds);
  addReturnSums(index, boundary, span, holds);
  return holds;
}

}  // namespace acprof
