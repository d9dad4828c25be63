// The exact search of solver_optimal.cpp run on windows: a large-neighbourhood
// move for mu-two. Each window of `window` compute nodes (stride window/2,
// widened to whole segments) is searched exhaustively with the rest of the
// plan fixed, and its best segments replace the current ones when the whole
// plan gets better for the budget (betterForBudget's order). Deterministic:
// the search takes at most `visit_allowance` search steps, not a clock: in
// the first pass each window takes what it needs of one half, in the second
// each gets an even share of what is left.
#pragma once

#include "acprof/simulator.h"

namespace acprof {

// Which segments a search tries: those whose checkpoint drops a tensor, or
// also those that only end the saves of an output (checkpointMayFreeEarlier
// in memory_rules.h), which the exact solver and the refinement of mu-two's
// plan try; the refinement of Chen's plan and the repair after dropping a
// segment keep to the first (solver_mu_two.cpp says why).
enum class SegmentChoice { Dropping, EveryEarlierFree };

RecomputeDecision improveByWindows(const Simulator& simulator, int64_t budget_bytes, const RecomputeDecision& start,
                                   int window, long visit_allowance, SegmentChoice choice = SegmentChoice::Dropping);

}  // namespace acprof
