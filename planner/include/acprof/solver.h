// Solvers: choose which node ranges to recompute so that the simulated peak
// fits a budget. One file per strategy (src/solver_*.cpp), all returning a
// SolverResult whose numbers come from the one Simulator, so strategies are
// compared on the same ruler. All are deterministic: the same profile and
// budget give the same decision; the exact solver only when its search
// completes (stopped by its time limit, it returns the best plan found so far).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "acprof/error.h"
#include "acprof/peak_composition.h"
#include "acprof/simulator.h"

namespace acprof {

// How a search ended, for solvers that search exhaustively.
struct SearchReport {
  bool searched = false;        // false: the solver does not search (the fields below mean nothing)
  bool proven_optimal = false;  // every candidate plan was judged: none beats the result
  long decisions_evaluated = 0; // complete plans the simulator judged
  double seconds = 0;
  int64_t peak_lower_bound_bytes = 0;  // no decision peaks below this (static + non-forward tensors)
};

// How long `--solver optimal` searches unless told otherwise.
inline constexpr double kDefaultSearchSeconds = 10;

struct SolverResult {
  RecomputeDecision decision;
  SimulationResult simulation;  // of `decision`, by the Simulator
  SearchReport search;
  std::string solver;  // the strategy that chose `decision` (auto: refined)
};

// No recompute.
SolverResult solveNone(const Simulator& simulator, int64_t budget_bytes);

// Chen et al. 2016: about sqrt(n) segments of roughly equal activation bytes
// over the whole forward pass, whatever the budget (unless nothing is needed).
SolverResult solveChen(const Simulator& simulator, int64_t budget_bytes);
// Chen's walk with a given number of segments of roughly equal activation
// bytes; a range none of whose nodes has a backward is left out.
SolverResult segmentEvenly(const Simulator& simulator, int segment_count);
// Nodes that leave activations for backward.
int activationProducerCount(const Simulator& simulator);
// The most segments mu-two's fallback walks with: twice sqrt of the
// activation producers, and no more than there are producers.
int mostEvenSegments(const Simulator& simulator);

// The greedy of μ-TWO (Purandare et al. 2023): repeatedly recompute the
// activation that frees the most bytes at the current peak per microsecond of
// added recompute, keeping a choice only if the simulated peak goes down, and
// stopping as soon as the peak fits the budget. Where the greedy stalls above
// the budget, Chen's walk with 1 to 2*sqrt(n) segments is tried too and the
// plan that fits with the least extra time is returned.
SolverResult solveMuTwo(const Simulator& simulator, int64_t budget_bytes);

// mu-two's plan, refined: local moves on whole segments (shift an end,
// remove, split, merge, add: solver_refined.cpp) while each gives a better plan
// (a lower peak, or the same peak for less time, or, once it fits, less
// time); then, on graphs of up to 1000 compute nodes, the exact search
// re-plans windows of 12 compute nodes with the rest held fixed, within a
// fixed allowance of search steps. Where no plan so far fits, a third start,
// the greedy counting recomputed nodes instead of microseconds, is refined
// too: the lowest peak does not follow the op times, a start that does can
// stop above it. Lower floors and less time than mu-two's
// (docs/solvers.md), at up to about a second of planning on a 1k-node graph
// and under half a second on a 10k-node one, where mu-two takes milliseconds.
SolverResult solveRefined(const Simulator& simulator, int64_t budget_bytes);

// The default: refined's plan, and the result names refined. Above mu-two's
// floor it costs less extra time than the greedy, which stops at the first
// plan that fits; below it, it reaches lower peaks instead of a refusal
// (docs/solvers.md). A name of its own, so the default can change without
// changing what `--solver refined` means.
SolverResult solveAuto(const Simulator& simulator, int64_t budget_bytes);

// The exact solver: the least extra time under the budget (the lowest peak,
// then the least time, when nothing fits) over every set of segments whose
// first and last nodes are compute nodes and which each drop a tensor, judged
// by the same peak tracker as mu-two. Depth-first, pruned by extra time once a
// plan fits, starting from the refined plan, so never worse than it. It stops
// after `time_limit_s` and then reports the best plan found as not proven.
SolverResult solveOptimal(const Simulator& simulator, int64_t budget_bytes, double time_limit_s);

// One line on how a search ended ("" for solvers that do not search): proven
// optimal, or stopped at the limit with the gap to the peak lower bound.
std::string searchReportText(const SearchReport& report, int64_t peak_bytes);

// One entry per strategy: the name `--solver` takes, a line for the CLI's help,
// and the function. The one list of solvers: solveRecompute, solverNames, the
// unknown-solver error and `acprof plan --help` all read it.
struct SolverEntry {
  std::string name;
  std::string description;  // a few words after the name in --help; "" for none
  SolverResult (*solve)(const Simulator& simulator, int64_t budget_bytes, double time_limit_s);
};
const std::vector<SolverEntry>& solverTable();  // auto (the default) first

// The table's names in its order: auto, mu-two, refined, optimal, chen, none.
const std::vector<std::string>& solverNames();

// The budget cannot be met: the message names the budget, the floor (the
// smallest peak the solver reached) and the budget to ask for instead, in under
// 200 characters; the detail shows what the floor is made of in a few lines;
// the composition carries all of it as data (the outcome's "floor").
class InfeasibleBudget : public Error {
 public:
  InfeasibleBudget(const std::string& message, const std::string& detail, int64_t smallest_peak_bytes,
                   PeakComposition floor, SearchReport search)
      : Error(ErrorKind::InfeasibleBudget, message, detail),
        smallest_peak_bytes(smallest_peak_bytes),
        floor(std::move(floor)),
        search(search) {}
  int64_t smallest_peak_bytes;
  PeakComposition floor;
  SearchReport search;  // how the solver's search ended (searched false: it does not search)
};

// Runs the named solver. Never returns a decision whose simulated peak is above
// the no-recompute peak (it returns no recompute instead). A plan that does not
// fit the budget is returned too, as a value: its peak is the smallest the
// solver reached (fitsBudget tells; the caller that must refuse raises
// infeasibleBudget). Throws Error(ErrorKind::Usage) for an unknown solver name.
// `time_limit_s` bounds the searching solvers (optimal).
SolverResult solveRecompute(const Simulator& simulator, const std::string& solver, int64_t budget_bytes,
                            double time_limit_s = kDefaultSearchSeconds);

inline bool fitsBudget(const SolverResult& result, int64_t budget_bytes) {
  return result.simulation.peak_bytes <= budget_bytes;
}

// The refusal of a plan that does not fit: the one-line message (the budget,
// the smallest peak reached, the budget to ask for or the sweep), the floor's
// make-up as a short table (peakCompositionTable, and how a search ended), and
// the same as data.
InfeasibleBudget infeasibleBudget(const Simulator& simulator, const SolverResult& result, int64_t budget_bytes);

}  // namespace acprof
