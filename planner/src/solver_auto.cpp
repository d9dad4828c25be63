// The default strategy (solver.h: solveAuto).
#include "acprof/solver.h"

namespace acprof {

SolverResult solveAuto(const Simulator& simulator, int64_t budget_bytes) {
  // Refined where the greedy already fits too: the greedy stops at the first
  // plan that fits, which on the reference models cost up to 5.6 times the
  // exact solver's extra time at 80 % (docs/solvers.md).
  SolverResult result = solveRefined(simulator, budget_bytes);
  result.solver = "refined";
  return result;
}

}  // namespace acprof
