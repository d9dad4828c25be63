// Solvers: choose which node ranges to recompute so that the simulated peak
// fits a budget. One file per strategy (src/solver_*.cpp), all returning a
// SolverResult whose numbers come from the one Simulator, so strategies are
// compared on the same ruler. All are deterministic: the same profile and
// budget give the same decision.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "acprof/error.h"
#include "acprof/simulator.h"

namespace acprof {

struct SolverResult {
  RecomputeDecision decision;
  SimulationResult simulation;  // of `decision`, by the Simulator
};

// No recompute.
SolverResult solveNone(const Simulator& simulator, int64_t budget_bytes);

// Chen et al. 2016: about sqrt(n) segments of roughly equal activation bytes
// over the whole forward pass, whatever the budget (unless nothing is needed).
SolverResult solveChen(const Simulator& simulator, int64_t budget_bytes);
// Chen's walk with a given number of segments of roughly equal activation bytes.
SolverResult segmentEvenly(const Simulator& simulator, int segment_count);
// Nodes that leave activations for backward.
int activationProducerCount(const Simulator& simulator);

// The greedy of μ-TWO (Purandare et al. 2023): repeatedly recompute the
// activation that frees the most bytes at the current peak per microsecond of
// added recompute, keeping a choice only if the simulated peak goes down, and
// stopping as soon as the peak fits the budget. Where the greedy stalls above
// the budget, Chen's walk with 1 to 2*sqrt(n) segments is tried too and the
// plan that fits with the least extra time is returned.
SolverResult solveMuTwo(const Simulator& simulator, int64_t budget_bytes);

// The solvers by name, for the CLI.
const std::vector<std::string>& solverNames();  // mu-two, chen, none

// The budget cannot be met: the message names the smallest peak the solver
// reached, what it is made of, and the budget to ask for instead.
class InfeasibleBudget : public Error {
 public:
  InfeasibleBudget(const std::string& message, int64_t smallest_peak_bytes)
      : Error(ErrorKind::InfeasibleBudget, message), smallest_peak_bytes(smallest_peak_bytes) {}
  int64_t smallest_peak_bytes;
};

// Runs the named solver. Never returns a decision whose simulated peak is above
// the no-recompute peak (it returns no recompute instead); throws
// InfeasibleBudget if the peak does not fit the budget, std::invalid_argument
// for an unknown solver name.
SolverResult solveRecompute(const Simulator& simulator, const std::string& solver, int64_t budget_bytes);

}  // namespace acprof
