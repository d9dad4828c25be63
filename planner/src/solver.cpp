#include <algorithm>

#include <fmt/format.h>

#include "acprof/solver.h"

namespace acprof {
namespace {

// One line: the smallest peak reached, what all of it is made of, the part no
// recompute can remove, and what to ask for.
std::string infeasibleMessage(const Simulator& simulator, const std::string& solver, int64_t budget_bytes,
                              const SimulationResult& best, const PeakComposition& composition) {
  const std::vector<Step>& steps = simulator.profile().steps;
  const Step& step = best.peak_step >= 0 ? steps[best.peak_step] : Step{};
  return fmt::format(
      "budget {} is below the smallest peak the {} solver reached, {} ({} B) {} step {} ({} {}); it is made of {}; "
      "of it {} cannot be removed by any recompute (weights, gradients, optimizer state, inputs); raise the budget "
      "to at least {} (--budget {})",
      formatBytes(budget_bytes), solver, formatBytes(best.peak_bytes), best.peak_bytes,
      best.peak_in_recompute ? "in the recompute before" : "at", best.peak_step, phaseName(step.phase), step.op,
      peakCompositionText(composition), formatBytes(unremovableBytes(best.peak_breakdown)),
      formatBytes(best.peak_bytes), best.peak_bytes);
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
  std::string message = infeasibleMessage(simulator, result.solver, budget_bytes, result.simulation, composition);
  const std::string search = searchReportText(result.search, result.simulation.peak_bytes);
  if (!search.empty()) message += " (" + search + ")";
  return InfeasibleBudget(message, result.simulation.peak_bytes, std::move(composition), result.search);
}

}  // namespace acprof
