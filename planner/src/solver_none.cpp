#include "acprof/solver.h"

namespace acprof {

SolverResult solveNone(const Simulator& simulator, int64_t /*budget_bytes*/) {
  SolverResult result;
  result.simulation = simulator.simulate(result.decision);
  return result;
}

}  // namespace acprof
