#include "acprof/simulator.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "acprof/error.h"
#include "memory_rules.h"
#include "profile_index.h"

namespace acprof {
namespace {

// A whole decision laid out for lookups: node -> its segment's timing.
class DecisionLayout : public DecisionView {
 public:
  DecisionLayout(const ProfileIndex& index, const RecomputeDecision& decision)
      : segment_of_node_(index.node_count, -1) {
    for (size_t i = 0; i < decision.size(); ++i) {
      const NodeRange& r = decision[i];
      if (r.first_node < 0 || r.last_node < r.first_node || r.last_node >= index.node_count)
        throw std::invalid_argument(fmt::format("segment [{}, {}] is not a range of the profile's {} nodes",
                                                r.first_node, r.last_node, index.node_count));
      if (i > 0 && r.first_node <= decision[i - 1].last_node)
        throw std::invalid_argument(fmt::format("segments [{}, {}] and [{}, {}] overlap or are out of order",
                                                decision[i - 1].first_node, decision[i - 1].last_node,
                                                r.first_node, r.last_node));
      timings_.push_back(segmentTiming(index, r));
      std::fill(segment_of_node_.begin() + r.first_node, segment_of_node_.begin() + r.last_node + 1,
                static_cast<int>(i));
    }
  }
  const SegmentTiming* segmentContaining(int node) const override {
    const int s = segment_of_node_[node];
    return s < 0 ? nullptr : &timings_[s];
  }
  const std::vector<SegmentTiming>& timings() const { return timings_; }

 private:
  std::vector<SegmentTiming> timings_;
  std::vector<int> segment_of_node_;
};

// Live bytes per leaf under a decision, per category at the leaves we report.
struct LeafTimeline {
  std::vector<int64_t> live_bytes;       // per leaf
  int peak_leaf = 0;                     // leftmost maximum, as timelineFromTensors picks the first
  CategoryBytes peak_breakdown{};
  std::vector<LeafInterval> intervals;   // every interval counted, each tagged with its holder
  std::vector<RecomputeBlock> blocks;    // per segment of the decision
  std::vector<int> block_step;           // the step each block runs before
};

// Totals per leaf only: the breakdown by category matters at the peak leaf
// alone, so it is summed there from the intervals kept on the way. A timeline
// of every category was 56 bytes a leaf to clear and fill, most of a
// simulation's time on a 10k-node graph, where mu-two's fallback simulates dozens of plans.
LeafTimeline replay(const ProfileIndex& index, const DecisionLayout& layout) {
  const int leaves = leafCount(index.event_count);
  std::vector<int64_t> delta(leaves + 1, 0);
  LeafTimeline out;
  std::vector<LeafInterval>& kept = out.intervals;
  kept.reserve(2 * index.profile.tensors.size());
  const auto add = [&](LeafInterval interval, int tensor, int segment) {
    if (interval.bytes == 0 || interval.begin_leaf >= interval.end_leaf) return;
    delta[interval.begin_leaf] += interval.bytes;
    delta[interval.end_leaf] -= interval.bytes;
    interval.tensor = tensor;
    interval.segment = segment;
    kept.push_back(interval);
  };
  LeafInterval intervals[2];
  for (int t = 0; t < static_cast<int>(index.profile.tensors.size()); ++t) {
    const int count = tensorIntervals(index, t, layout, intervals);
    for (int i = 0; i < count; ++i) add(intervals[i], t, -1);
  }
  for (int s = 0; s < static_cast<int>(layout.timings().size()); ++s) {
    const SegmentTiming& timing = layout.timings()[s];
    const RecomputeBlock block = recomputeBlock(index, timing);
    out.blocks.push_back(block);
    out.block_step.push_back(timing.first_backward_step);
    if (block.kept_state.bytes > 0) add(block.kept_state, -1, s);
    for (const LeafInterval& held : timing.gradients.held_use_gradients) add(held, -1, s);
    add(timing.gradients.return_sums, -1, s);
    if (!block.has_events) continue;
    for (int c = 0; c < kCategoryCount; ++c) add({block.rise_by_category[c], c, block.leaf, block.leaf + 1}, -1, s);
  }
  out.live_bytes.resize(leaves);
  int64_t running = 0;
  for (int leaf = 0; leaf < leaves; ++leaf) {
    out.live_bytes[leaf] = running += delta[leaf];
    if (out.live_bytes[leaf] > out.live_bytes[out.peak_leaf]) out.peak_leaf = leaf;
  }
  for (const LeafInterval& interval : kept)
    if (interval.begin_leaf <= out.peak_leaf && out.peak_leaf < interval.end_leaf)
      out.peak_breakdown[interval.category] += interval.bytes;
  return out;
}

// The memory rules tell whose gradient a tensor is by what autograd's hooks
// reported (TensorRecord::gradient_of); sizes cannot tell. A profile written
// before acprof recorded it cannot be planned truthfully.
const Profile& withGradientIdentity(const Profile& profile) {
  const bool recorded = std::all_of(profile.tensors.begin(), profile.tensors.end(),
                                    [](const TensorRecord& t) { return t.gradient_of.has_value(); });
  if (!recorded)
    throw Error(ErrorKind::BadInput,
                "the profile does not say whose gradient each tensor holds (tensors[].gradient_of), which planning "
                "reads: it was written by an older acprof; run acprof profile again");
  return profile;
}

}  // namespace

Simulator::Simulator(const Profile& profile)
    : index_(std::make_unique<ProfileIndex>(withGradientIdentity(profile))), baseline_(simulate({})) {}
Simulator::~Simulator() = default;

const Profile& Simulator::profile() const { return index_->profile; }

SimulationResult Simulator::simulate(const RecomputeDecision& decision) const {
  const ProfileIndex& index = *index_;
  const DecisionLayout layout(index, decision);
  const LeafTimeline replayed = replay(index, layout);
  const std::vector<int64_t>& live = replayed.live_bytes;

  SimulationResult result;
  result.peak_bytes = live[replayed.peak_leaf];
  result.peak_breakdown = replayed.peak_breakdown;
  const int peak_event = replayed.peak_leaf / 4;
  const bool peak_on_block_leaf = replayed.peak_leaf == blockLeaf(peak_event);
  // A return belongs to the step whose backward ended there, the one of the event before.
  const bool peak_on_return_leaf = replayed.peak_leaf == returnLeaf(peak_event) && peak_event > 0;
  // Leaves 0 to 2 hold only what was live before the first event: step 0, as timelineFromTensors says.
  if (index.step_count > 0)
    result.peak_step = replayed.peak_leaf < gapLeaf(0) + 1
                           ? 0
                           : stepOfEvent(index.profile, peak_on_return_leaf ? peak_event - 1 : peak_event);

  // One point per step (its gap leaf, event leaves and the return after its
  // last event), one per recompute block before its step.
  std::unordered_map<int, size_t> block_of_step;
  for (size_t b = 0; b < replayed.blocks.size(); ++b)
    if (replayed.blocks[b].has_events) block_of_step[replayed.block_step[b]] = b;
  for (int s = 0; s < index.step_count; ++s) {
    if (auto it = block_of_step.find(s); it != block_of_step.end()) {
      const int64_t block_peak = live[replayed.blocks[it->second].leaf];
      result.timeline.push_back(TimelinePoint{s, true, block_peak});
      if (peak_on_block_leaf && replayed.blocks[it->second].leaf == replayed.peak_leaf) {
        result.peak_step = s;
        result.peak_in_recompute = true;
      }
    }
    const int first = gapLeaf(index.step_first_event[s]);
    const int last = std::max(first, returnLeaf(index.stepEndEvent(s)));
    result.timeline.push_back(
        TimelinePoint{s, false, *std::max_element(live.begin() + first, live.begin() + last + 1)});
  }
  // The recompute costs the segment's forward again. The checkpoint's own
  // forward, which records no autograd history, is taken to cost what the
  // original's did: the profile's whole-model forward without grad ran
  // 0.73-1.00 times the forward with grad on the reference models, but
  // inside the rewritten models (their profile.after.json) the checkpoints'
  // forwards took 0.72-1.59 times their segments' (median 1.04), and
  // counting that saving put the prediction below the measured extra time
  // (docs/reference.md, 2026-11-26: 35 of 39 within 10 % of the step with
  // it, 38 of 39 without; mean error +1.4 and -0.1 points).
  for (const SegmentTiming& timing : layout.timings())
    if (timing.has_backward) result.extra_time_us += index.forwardTime(timing.range.first_node, timing.range.last_node);
  return result;
}

std::vector<PeakHolder> Simulator::peakHolders(const RecomputeDecision& decision) const {
  const DecisionLayout layout(*index_, decision);
  const LeafTimeline replayed = replay(*index_, layout);
  // One holder per tensor or segment and category: a tensor's forward life
  // and its recomputed copy never both cover one leaf, a segment's pieces may.
  std::map<std::tuple<int, int, int>, int64_t> bytes_by_holder;
  for (const LeafInterval& interval : replayed.intervals)
    if (interval.begin_leaf <= replayed.peak_leaf && replayed.peak_leaf < interval.end_leaf)
      bytes_by_holder[{interval.category, interval.tensor, interval.segment}] += interval.bytes;
  std::vector<PeakHolder> holders;
  for (const auto& [key, bytes] : bytes_by_holder)
    holders.push_back(PeakHolder{static_cast<Category>(std::get<0>(key)), bytes, std::get<1>(key), std::get<2>(key)});
  std::stable_sort(holders.begin(), holders.end(),
                   [](const PeakHolder& a, const PeakHolder& b) { return a.bytes > b.bytes; });
  return holders;
}

std::vector<int64_t> Simulator::liveBytesPerEvent(const RecomputeDecision& decision) const {
  const DecisionLayout layout(*index_, decision);
  const LeafTimeline replayed = replay(*index_, layout);
  std::vector<int64_t> live(index_->event_count);
  for (int e = 0; e < index_->event_count; ++e) live[e] = replayed.live_bytes[eventLeaf(e)];
  return live;
}

std::string Simulator::segmentProblem(const NodeRange& r) const {
  return index_->rules.problem(r.first_node, r.last_node);
}

SegmentCut Simulator::describeSegment(const NodeRange& r) const {
  const ProfileIndex& index = *index_;
  const std::vector<ForwardNode>& nodes = index.profile.nodes;
  SegmentCut cut;
  cut.first_node = r.first_node;
  cut.last_node = r.last_node;
  const SegmentBoundary boundary = index.rules.boundary(r.first_node, r.last_node);
  const auto names = [&](const std::vector<int>& ids) {
    std::vector<std::string> out;
    for (int v : ids) out.push_back(index.profile.values[v].name);
    return out;
  };
  cut.input_values = names(boundary.inputs);
  cut.output_values = names(boundary.outputs);
  cut.replayed_inputs = names(boundary.replayed_inputs);
  for (int v : boundary.outputs) {
    const GraphValue& value = index.profile.values[v];
    if (value.is_tensor && value.requires_grad && !value.needs_grad) cut.outputs_without_grad.push_back(value.name);
  }
  for (int n = r.first_node; n <= r.last_node; ++n) cut.recompute_time_us += nodes[n].forward_time_us;
  const SegmentTiming timing = segmentTiming(index, r);
  if (!timing.has_backward) {
    cut.recompute_time_us = 0;  // its backward never runs, so nothing is recomputed
    return cut;
  }
  cut.kept_state_bytes = timing.kept_state_bytes;
  cut.recompute_step = timing.first_backward_step;
  for (int n = r.first_node; n <= r.last_node; ++n)
    for (const int* t = index.tensors_produced_by_node.begin(n); t != index.tensors_produced_by_node.end(n); ++t)
      if (droppedByCheckpoint(insideRole(index, *t, timing))) {
        cut.dropped_tensors.push_back(*t);
        cut.dropped_bytes += index.profile.tensors[*t].bytes;
      }
  return cut;
}

}  // namespace acprof
