#include "memory_rules.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace acprof {

namespace {

// [kept-state]: what a checkpoint keeps for the inputs that enter it as
// something other than a recorded tensor: a number or bool as a 0-dim tensor,
// an optional's flag (InputForm, profile_format.h).
int64_t convertedInputBytes(const Profile& profile, const SegmentBoundary& boundary) {
  int64_t bytes = 0;
  for (int v : boundary.inputs) {
    const GraphValue& value = profile.values[v];
    if (value.entry == ValueEntry::Input) bytes += inputFormExtraBytes(value.input_form);
  }
  return bytes;
}

// [output-saved-only-inside]: where the forward life of a segment output ends
// when what freed it in the original was autograd letting go of it, or when
// what kept it past the iteration was only saves by its own segment's nodes
// that no gradient reached (an auxiliary head's input). `checkpointed(node)`
// says whether a node is in a segment with a backward, whose checkpoint input
// [inputs-held-to-end] keeps instead. Without saved-tensor facts, or with a
// holder the profile does not name, it lives to the recompute (kNoEarlierEnd).
constexpr int kNoEarlierEnd = std::numeric_limits<int>::max();

template <typename Checkpointed>
int outputEndLeaf(const ProfileIndex& index, const TensorRecord& t, const SegmentSpan& own,
                  const Checkpointed& checkpointed) {
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
    if (inside_own(by.node) || (by.node >= 0 && checkpointed(by.node))) continue;
    end_event = std::max(end_event, index.stepEndEvent(by.release_step));
  }
  return returnLeaf(end_event);
}

// Where a segment output's forward life ends under its own checkpoint, or
// kNoEarlierEnd where it keeps its own end: one freed inside the segment's
// backward goes by the recompute ([segment-output]), or earlier where only the
// segment's saves held it; one kept past the iteration only by saves no
// gradient reached, inside its own segment, goes likewise
// ([output-saved-only-inside]).
template <typename Checkpointed>
int outputForwardEnd(const ProfileIndex& index, const TensorRecord& t, const SegmentSpan& own,
                     const Checkpointed& checkpointed) {
  const bool freed_in_own_backward = t.free_step >= own.first_backward_step && t.free_step <= own.last_backward_step;
  const int earlier_end = outputEndLeaf(index, t, own, checkpointed);
  const bool kept_only_by_own_saves =
      index.outlivesIteration(t.id) && t.category != Category::Output && earlier_end != kNoEarlierEnd;
  if (!freed_in_own_backward && !kept_only_by_own_saves) return kNoEarlierEnd;
  return std::min(returnLeaf(own.recompute_event), earlier_end);
}

}  // namespace

SegmentTiming segmentTiming(const ProfileIndex& index, NodeRange range) {
  SegmentTiming timing{segmentSpan(index, range), 0, GradientHolds{}};
  if (!timing.has_backward) return timing;
  timing.kept_state_bytes = timing.rng_state_bytes;
  const SegmentBoundary boundary = index.rules.boundary(range.first_node, range.last_node);
  // [kept-state]: a copy of each written storage (acprof::checkpoint's snapshotOnStorageCopy): one per storage
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
  timing.gradients = gradientHolds(index, boundary, timing);
  return timing;
}

InsideRole insideRole(const ProfileIndex& index, int tensor, const SegmentSpan& segment) {
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

bool checkpointMayFreeEarlier(const ProfileIndex& index, int tensor, const SegmentSpan& segment) {
  const InsideRole role = insideRole(index, tensor, segment);
  if (droppedByCheckpoint(role)) return true;
  if (role != InsideRole::Output || !segment.has_backward) return false;
  // Under a decision that checkpoints every node, the fewest saves hold a segment's output.
  const auto every_node_checkpointed = [](int) { return true; };
  return outputForwardEnd(index, index.profile.tensors[tensor], segment, every_node_checkpointed) <
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
  // [recompute-block]: the recompute starts by copying the current generator state (to put it back after).
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
  const auto checkpointed = [&](int node) {
    const SegmentTiming* holder = decision.segmentContaining(node);
    return holder && holder->has_backward;
  };
  const SegmentTiming* own = t.producer_node >= 0 ? decision.segmentContaining(t.producer_node) : nullptr;
  if (own && !own->has_backward) own = nullptr;
  if (own) {
    const int after_recompute = gapLeaf(own->recompute_event);
    const int segment_end = returnLeaf(own->end_event);
    LeafInterval copy{t.bytes, life.category, after_recompute, segment_end};
    switch (insideRole(index, tensor, *own)) {
      case InsideRole::Output:  // [segment-output], [output-saved-only-inside]
        if (const int end = outputForwardEnd(index, t, *own, checkpointed); end != kNoEarlierEnd) life.end_leaf = end;
        break;
      case InsideRole::Temporary:  // [temporary]
      case InsideRole::HeldCopy:   // [held-copy]: its holder (autocast's cache) ends with the recompute
        copy.end_leaf = copy.begin_leaf;  // lives only inside the block
        break;
      case InsideRole::InternalActivation: {  // [internal-activation]
        const int last_use_step = std::max(t.alloc_step, t.last_forward_use_step);
        copy.end_leaf = life.end_leaf > after_recompute ? life.end_leaf : segment_end;
        life.end_leaf = returnLeaf(index.stepEndEvent(last_use_step));
        break;
      }
      case InsideRole::UnreachedSave: {  // [unreached-save]
        const int last_use_step = std::max(t.alloc_step, t.last_forward_use_step);
        copy.end_leaf = segment_end;
        life.end_leaf = returnLeaf(index.stepEndEvent(last_use_step));
        break;
      }
    }
    if (copy.end_leaf > copy.begin_leaf) out[count++] = copy;
  }
  // [received-gradients-held]: the checkpoint's backward holds the gradients it
  // received until it returns; the original backward freed each once its node had used it.
  const int consumer_node = nodeThatFreed(index, t);
  if (t.producer_node < 0 && consumer_node >= 0 && consumer_node < index.node_count) {
    const SegmentTiming* consumer = decision.segmentContaining(consumer_node);
    if (consumer && consumer->has_backward && t.alloc_step < consumer->first_backward_step &&
        t.free_step <= consumer->last_backward_step && index.phaseOfStep(t.free_step) == Phase::Backward)
      life.end_leaf = std::max(life.end_leaf, returnLeaf(consumer->end_event));
    // Received by a use that hands a view of it on as an outside tensor's
    // gradient: alive until the return has handed that view on.
    if (consumer && consumer->has_backward && t.alloc_step < t.free_step &&
        viewHeldBySegment(index, consumer->gradients, t))
      life.end_leaf = std::max(life.end_leaf, blockLeaf(consumer->end_event));
  }
  // [view-holding-use]: a sum the original made at a use that hands on a view begins at its checkpoint's return.
  const int maker_node = t.producer_node < 0 && t.alloc_step >= 0 && t.alloc_step < index.step_count
                             ? index.profile.steps[t.alloc_step].node
                             : -1;
  if (maker_node >= 0 && maker_node < index.node_count) {
    const SegmentTiming* maker = decision.segmentContaining(maker_node);
    if (maker && maker->has_backward &&
        std::count(maker->gradients.sums_made_at_return.begin(), maker->gradients.sums_made_at_return.end(), tensor))
      life.begin_leaf = std::min(std::max(life.begin_leaf, blockLeaf(maker->end_event)), life.end_leaf);
  }
  // [inputs-held-to-end]: a checkpoint holds what it reads until its backward returns.
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
