// Which ranges the segment-set search (segment_set_search.h) may use as
// segments: a legal range (cut_rules.h) with a backward, whose checkpoint
// drops a tensor or, with SegmentChoice::EveryEarlierFree, frees one earlier
// ([output-saved-only-inside]). A segment that frees nothing earlier only adds time and
// held inputs, so no best plan holds one.
//
// The answer depends on the range alone and is kept: the window search asks it
// of the same ranges in every overlapping window, every pass and every repair
// of one solve, and judging each time it asked was most of the floor search's
// work on a large real graph (GPT-2 124M profiled on an H100, 1218 nodes:
// docs/gpu.md, CHANGELOG). Not thread-safe: one per thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "acprof/simulator.h"
#include "memory_rules.h"
#include "profile_index.h"

namespace acprof {

// Which segments a search tries: those whose checkpoint drops a tensor, or
// also those that only end the saves of an output (checkpointMayFreeEarlier
// in memory_rules.h), which the exact solver and the refinement of mu-two's
// plan try; the refinement of Chen's plan and the repair after dropping a
// segment keep to the first (solver_refined.cpp says why).
enum class SegmentChoice { Dropping, EveryEarlierFree };

class UsableSegments {
 public:
  UsableSegments(const Simulator& simulator, SegmentChoice choice);

  // The range from compute node index `first` to `last` (ProfileIndex::compute_nodes).
  bool usable(int first, int last);

 private:
  // The cut rules' answer (CutRules::allows), from one GrowingRange per first
  // node, extended as the asked last nodes grow: the search lists a first
  // node's ends in increasing order from the first itself, so a row costs its
  // length once, not once per end. Ranges asked out of that order are judged
  // alone.
  bool legal(int first, int last);
  bool freesSomethingEarlier(const SegmentSpan& span) const;

  const ProfileIndex& index_;
  const SegmentChoice choice_;
  // judged_[first][last - first]: 1 usable, 0 not, -1 not judged yet. Rows
  // grow to the furthest end asked; a hash map of the same answers spent a
  // fifth of the 1218-node GPT-2 plan zeroing the pages its nodes took.
  std::vector<std::vector<int8_t>> judged_;
  std::optional<CutRules::GrowingRange> row_;
  int row_first_ = -1;      // compute node index the row starts at
  int row_last_node_ = -1;  // the node it reaches
};

}  // namespace acprof
