#include <algorithm>

#include <fmt/format.h>

#include "acprof/solver.h"

namespace acprof {
namespace {

// One line, under 200 characters (185 at a floor of a PiB, every number at its
// widest): the budget, the floor and the fix. The floor's make-up, every
// category with its largest holders, was on this line too, which made it 800 to
// 1,300 characters (issue 61); it is the error's detail now
// (peakCompositionTable), and the outcome's "floor" as data.
std::string infeasibleMessage(const std::string& solver, int64_t budget_bytes, int64_t floor_bytes) {
  return fmt::format(
      "budget {} is below the floor, {}, the smallest peak the {} solver reached; use --budget {} or more, or see "
      "each budget's cost: acprof plan --sweep",
      formatBytes(budget_bytes), formatBytes(floor_bytes), solver, floor_bytes);
}

// The strategies that take no time limit, adapted to the table's signature.
template <SolverResult (*Solve)(const Simulator&, int64_t)>
SolverResult withoutTimeLimit(const Simulator& simulator, int64_t budget_bytes, double /*time_limit_s*/) {
  return Solve(simulator, budget_bytes);
}

// "a, b, c or d": the table's names for the unknown-solver message.
std::string namesAsChoice() {
  const std::vector<std::string>& names = solverNames();
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += names[i];
  }
  return text;
}

}  // namespace

const std::vector<SolverEntry>& solverTable() {
  static const std::vector<SolverEntry> table = {
      {"auto", "default: mu-two's plan, refined", withoutTimeLimit<solveAuto>},
      {"mu-two", "greedy", withoutTimeLimit<solveMuTwo>},
      {"refined", "mu-two + local and windowed exact search", withoutTimeLimit<solveRefined>},
      {"optimal", "exhaustive search, small graphs", solveOptimal},
      {"chen", "sqrt(n) segments", withoutTimeLimit<solveChen>},
      {"none", "", withoutTimeLimit<solveNone>},
  };
  return table;
}

const std::vector<std::string>& solverNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const SolverEntry& entry : solverTable()) out.push_back(entry.name);
    return out;
  }();
  return names;
}

SolverResult solveRecompute(const Simulator& simulator, const std::string& solver, int64_t budget_bytes,
                            double time_limit_s) {
  const std::vector<SolverEntry>& table = solverTable();
  const auto entry =
      std::find_if(table.begin(), table.end(), [&](const SolverEntry& e) { return e.name == solver; });
  if (entry == table.end())
    throw Error(ErrorKind::Usage, fmt::format("unknown solver '{}'; use {}", solver, namesAsChoice()));
  SolverResult result = entry->solve(simulator, budget_bytes, time_limit_s);
  if (result.solver.empty()) result.solver = entry->name;

  // A plan must never make things worse than doing nothing.
  const SimulationResult& baseline = simulator.baseline();
  if (result.simulation.peak_bytes > baseline.peak_bytes)
    result = SolverResult{{}, baseline, result.search, result.solver};
  return result;
}

InfeasibleBudget infeasibleBudget(const Simulator& simulator, const SolverResult& result, int64_t budget_bytes) {
  PeakComposition composition = peakComposition(simulator, result.decision);
  const std::string message = infeasibleMessage(result.solver, budget_bytes, result.simulation.peak_bytes);
  std::string detail = peakCompositionTable(composition, simulator.profile());
  const std::string search = searchReportText(result.search, result.simulation.peak_bytes);
  if (!search.empty()) detail += fmt::format("  search: {}\n", search);
  return InfeasibleBudget(message, detail, result.simulation.peak_bytes, std::move(composition), result.search);
}

}  // namespace acprof
