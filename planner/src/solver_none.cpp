#include "acprof/solver.h"

namespace acprof {

SolverResult solveNone(const Simulator& simulator, int64_t /*budget_bytes*/) {
  return SolverResult{{}, simulator.baseline(), {}, "none"};
}

}  // namespace acprof
