// The memory simulator: a profile plus a recompute decision -> the predicted
// memory timeline, peak and extra time of one training iteration.
//
// Every solver's decision goes through this one simulator, so solvers are
// compared on the same ruler (as in Checkmate's scheduler). With the empty
// decision it reproduces the profile's liveBytesPerEvent and every step's
// peak_bytes byte for byte. A decision is a sorted list of non-overlapping
// node ranges; each becomes one acprof::checkpoint call in the rewritten model,
// which runs the range without grad in forward, keeps only its inputs, and in
// backward re-runs it with grad just before the first backward step of its
// nodes. What that does to each tensor's lifetime (internal activations freed
// early and recomputed, a second copy of the segment's outputs, inputs held
// until the segment's backward ends) is docs/memory-model.md, by named rule.
//
// The simulator keeps a reference to the profile: keep the profile alive.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"

namespace acprof {

// Inclusive range of forward node ids: one checkpoint segment.
struct NodeRange {
  int first_node = 0;
  int last_node = 0;
  bool operator==(const NodeRange& other) const {
    return first_node == other.first_node && last_node == other.last_node;
  }
};
using RecomputeDecision = std::vector<NodeRange>;  // sorted, non-overlapping

struct SimulationResult {
  int64_t peak_bytes = 0;
  int peak_step = -1;
  bool peak_in_recompute = false;      // the peak is inside the recompute before peak_step
  CategoryBytes peak_breakdown{};      // live bytes per category at the peak
  std::vector<TimelinePoint> timeline; // one point per step, one per recompute (before its step)
  double extra_time_us = 0;            // forward time of every segment's nodes
};

// Something live at a simulated peak: a profile tensor (its life, or the copy
// a recompute makes of it), or what a segment's checkpoint holds itself (the
// generator state, input snapshots, gradients it holds until it returns) or
// makes in its recompute block.
struct PeakHolder {
  Category category = Category::Temporary;
  int64_t bytes = 0;
  int tensor = -1;   // index into Profile::tensors, -1 for a segment's own
  int segment = -1;  // index into the decision, when tensor is -1
};

class ProfileIndex;  // lookups built once per profile (src/profile_index.h)

class Simulator {
 public:
  // Throws Error(BadInput) for a profile that does not record whose gradient
  // each tensor holds (TensorRecord::gradient_of): the memory rules read it.
  explicit Simulator(const Profile& profile);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  const Profile& profile() const;
  const ProfileIndex& index() const { return *index_; }

  // Throws std::invalid_argument if the decision is unsorted, overlapping or out of range.
  SimulationResult simulate(const RecomputeDecision& decision) const;

  // simulate({}), the no-recompute baseline: simulated once at construction
  // because the budget, every solver's guard and the plan all measure against it.
  const SimulationResult& baseline() const { return baseline_; }

  // Everything live at the decision's peak, largest first; the bytes sum to
  // simulate(decision).peak_bytes and, per category, to its peak_breakdown.
  std::vector<PeakHolder> peakHolders(const RecomputeDecision& decision) const;

  // Live bytes after each original event under the decision (size event_count);
  // recompute blocks are not events of the profile and are not in it.
  std::vector<int64_t> liveBytesPerEvent(const RecomputeDecision& decision) const;

  // Why a range cannot be a checkpoint segment ("" if it can), by the one
  // legality model of acprof/cut_rules.h, naming the rule.
  std::string segmentProblem(const NodeRange& range) const;

  // The plan's description of a segment: its boundary values, the tensors it
  // drops and the forward time it recomputes.
  SegmentCut describeSegment(const NodeRange& range) const;

 private:
  std::unique_ptr<ProfileIndex> index_;
  SimulationResult baseline_;
};

}  // namespace acprof
