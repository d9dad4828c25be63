#include "acprof/planner.h"

#include <fmt/format.h>

#include "acprof/budget.h"

namespace acprof {
namespace {

// What the profile holds before its step begins: the static storages
// (weights, inputs, optimizer state) alive at its first event, which no
// recompute touches. Note: [a bare budget below the step's start] (budget.h).
int64_t bytesBeforeStep(const Profile& profile) {
  int64_t bytes = 0;
  for (const TensorRecord& tensor : profile.tensors)
    if (tensor.alloc_event < 0 && tensor.free_event > 0) bytes += tensor.bytes;
  return bytes;
}

}  // namespace

Plan planFromSolution(const Simulator& simulator, const PlanRequest& request, int64_t budget_bytes,
                      const SolverResult& solution) {
  const Profile& profile = simulator.profile();
  Plan plan;
  plan.model_sha256 = profile.meta.model_sha256;
  plan.model_path = profile.meta.model_path;
  plan.profile_path = request.profile_path;
  plan.solver = solution.solver;  // under auto, the strategy that made the plan
  plan.solver_report = searchReportText(solution.search, solution.simulation.peak_bytes);
  plan.budget_text = request.budget_text;
  plan.budget_bytes = budget_bytes;
  plan.baseline_peak_bytes = simulator.baseline().peak_bytes;
  plan.predicted_peak_bytes = solution.simulation.peak_bytes;
  plan.predicted_peak_step = solution.simulation.peak_step;
  plan.predicted_peak_breakdown = solution.simulation.peak_breakdown;
  plan.baseline_iteration_time_us = iterationTimeUs(profile);
  plan.extra_time_us = solution.simulation.extra_time_us;
  for (const NodeRange& range : solution.decision) plan.segments.push_back(simulator.describeSegment(range));
  plan.predicted_timeline = solution.simulation.timeline;
  return plan;
}

Plan planRecompute(const Profile& profile, const PlanRequest& request, SearchReport* search) {
  const Simulator simulator(profile);
  const int64_t budget_bytes = parseBudget(request.budget_text, simulator.baseline().peak_bytes);
  checkBareBudget(request.budget_text, bytesBeforeStep(profile));
  const SolverResult solution = solveRecompute(simulator, request.solver, budget_bytes, request.time_limit_s);
  if (!fitsBudget(solution, budget_bytes)) throw infeasibleBudget(simulator, solution, budget_bytes);
  if (search) *search = solution.search;
  return planFromSolution(simulator, request, budget_bytes, solution);
}

std::string planSummaryText(const Plan& plan) {
  const int64_t saved = plan.baseline_peak_bytes - plan.predicted_peak_bytes;
  const double saved_percent =
      plan.baseline_peak_bytes > 0 ? 100.0 * static_cast<double>(saved) / static_cast<double>(plan.baseline_peak_bytes)
                                   : 0.0;
  const double extra_percent =
      plan.baseline_iteration_time_us > 0 ? 100.0 * plan.extra_time_us / plan.baseline_iteration_time_us : 0.0;
  std::string text;
  text += fmt::format("{:<16}{}\n", "solver", plan.solver);
  if (!plan.solver_report.empty()) text += fmt::format("{:<16}{}\n", "search", plan.solver_report);
  text += fmt::format("{:<16}{} ({} B)\n", "budget", formatBytes(plan.budget_bytes), plan.budget_bytes);
  text += fmt::format("{:<16}{} ({} B)\n", "baseline peak", formatBytes(plan.baseline_peak_bytes),
                      plan.baseline_peak_bytes);
  text += fmt::format("{:<16}{} ({} B) at step {}\n", "predicted peak", formatBytes(plan.predicted_peak_bytes),
                      plan.predicted_peak_bytes, plan.predicted_peak_step);
  if (plan.predicted_peak_breakdown) {
    std::string parts;
    for (int c = 0; c < kCategoryCount; ++c) {
      const int64_t bytes = (*plan.predicted_peak_breakdown)[c];
      if (bytes == 0) continue;
      parts += fmt::format("{}{} {}", parts.empty() ? "" : " · ", categoryName(static_cast<Category>(c)),
                           formatBytes(bytes));
    }
    text += fmt::format("{:<16}{}\n", "at the peak", parts);
  }
  text += fmt::format("{:<16}{} ({:.1f} %)\n", "saving", formatBytes(saved), saved_percent);
  text += fmt::format("{:<16}{:.3f} ms ({:.1f} % of a {:.3f} ms iteration)\n", "extra time",
                      plan.extra_time_us / 1000.0, extra_percent, plan.baseline_iteration_time_us / 1000.0);
  text += fmt::format("{:<16}{}\n", "segments", plan.segments.size());
  return text;
}

}  // namespace acprof
