// The greedy of mu-TWO on its own (solver_mu_two.cpp), for the solvers that
// start their searches from its plan.
#pragma once

#include <cstdint>

#include "acprof/simulator.h"

namespace acprof {

// What the greedy divides the bytes a candidate frees at the peak by: the
// recompute's measured forward time, or the number of nodes it recomputes.
// The second makes a start that does not follow the profile's times, for
// searches whose goal (the lowest peak) does not depend on them either.
enum class GreedyCost { MeasuredTime, NodeCount };

// The greedy's decision alone, without mu-two's fallback to evenly spaced segments.
RecomputeDecision muTwoGreedy(const Simulator& simulator, int64_t budget_bytes, GreedyCost cost);

}  // namespace acprof
