// The exact search of segment_set_search.h run on windows: a
// large-neighbourhood move for the refinement of mu-two's plan
// (solver_refined.cpp). Each window of `window` compute nodes (stride
// window/2, widened to whole segments) is searched exhaustively with the rest
// of the plan fixed, and its best segments replace the current ones when the whole
// plan gets better for the budget (betterForBudget's order). Deterministic:
// the search takes at most `visit_allowance` search steps, not a clock: in
// the first pass each window takes what it needs of one half, in the second
// each gets an even share of what is left.
#pragma once

#include "acprof/simulator.h"
#include "usable_segments.h"

namespace acprof {

// `usable` (which ranges may be segments, and of which kind) may be shared by
// the window searches of one solve on one thread: they ask it of the same ranges.
RecomputeDecision improveByWindows(const Simulator& simulator, int64_t budget_bytes, const RecomputeDecision& start,
                                   int window, long visit_allowance, UsableSegments& usable);

}  // namespace acprof
