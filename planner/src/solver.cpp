#include <fmt/format.h>

#include "acprof/solver.h"

namespace acprof {
namespace {

int64_t categoryBytes(const CategoryBytes& bytes, Category c) { return bytes[static_cast<int>(c)]; }

// One line: the smallest peak reached, the part of it no recompute can remove, and what to ask for.
std::string infeasibleMessage(const Simulator& simulator, const std::string& solver, int64_t budget_bytes,
                              const SimulationResult& best) {
  const CategoryBytes& b = best.peak_breakdown;
  const int64_t weights = categoryBytes(b, Category::Weight);
  const int64_t gradients = categoryBytes(b, Category::Gradient);
  const int64_t optimizer = categoryBytes(b, Category::OptimizerState);
  const int64_t inputs = categoryBytes(b, Category::Input);
  const std::vector<Step>& steps = simulator.profile().steps;
  const Step& step = best.peak_step >= 0 ? steps[best.peak_step] : Step{};
  return fmt::format(
      "budget {} is below the smallest peak the {} solver reached, {} ({} B) {} step {} ({} {}); of it {} cannot "
      "be removed by any recompute (weights {}, gradients {}, optimizer state {}, inputs {}); raise the budget "
      "to at least {} (--budget {})",
      formatBytes(budget_bytes), solver, formatBytes(best.peak_bytes), best.peak_bytes,
      best.peak_in_recompute ? "in the recompute before" : "at", best.peak_step, phaseName(step.phase), step.op,
      formatBytes(weights + gradients + optimizer + inputs), formatBytes(weights), formatBytes(gradients),
      formatBytes(optimizer), formatBytes(inputs), formatBytes(best.peak_bytes), best.peak_bytes);
}

}  // namespace

const std::vector<std::string>& solverNames() {
  static const std::vector<std::string> names = {"mu-two", "refined", "optimal", "chen", "none"};
  return names;
}

SolverResult solveRecompute(const Simulator& simulator, const std::string& solver, int64_t budget_bytes,
                            double time_limit_s) {
  SolverResult result;
  if (solver == "mu-two")
    result = solveMuTwo(simulator, budget_bytes);
  else if (solver == "refined")
    result = solveRefined(simulator, budget_bytes);
  else if (solver == "optimal")
    result = solveOptimal(simulator, budget_bytes, time_limit_s);
  else if (solver == "chen")
    result = solveChen(simulator, budget_bytes);
  else if (solver == "none")
    result = solveNone(simulator, budget_bytes);
  else
    throw Error(ErrorKind::Usage, fmt::format("unknown solver '{}'; use mu-two, refined, optimal, chen or none", solver));

  // A plan must never make things worse than doing nothing.
  const SimulationResult baseline = simulator.simulate({});
  if (result.simulation.peak_bytes > baseline.peak_bytes) result = SolverResult{{}, baseline, result.search};
  if (result.simulation.peak_bytes > budget_bytes) {
    std::string message = infeasibleMessage(simulator, solver, budget_bytes, result.simulation);
    const std::string search = searchReportText(result.search, result.simulation.peak_bytes);
    if (!search.empty()) message += " (" + search + ")";
    throw InfeasibleBudget(message, result.simulation.peak_bytes);
  }
  return result;
}

}  // namespace acprof
