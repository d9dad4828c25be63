// acprof plan --sweep: what each MiB of peak costs in time, from no recompute
// to the floor of the solver asked for (auto by default), with two fixed
// strategies marked for comparison.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "acprof/planner.h"
#include "acprof/solver.h"
#include "profile_index.h"

namespace acprof {
namespace {

// The scope of the container child a node belongs to: the shortest prefix of
// its module scope whose last name is a number ("layer1.0" of
// "layer1.0.conv1", "blocks.3" of "blocks.3.attention.qkv"), i.e. one element
// of an nn.Sequential or nn.ModuleList. "" if there is none.
std::string containerChild(const std::string& scope) {
  size_t start = 0;
  while (start <= scope.size()) {
    const size_t dot = scope.find('.', start);
    const size_t end = dot == std::string::npos ? scope.size() : dot;
    const bool numeric = end > start && std::all_of(scope.begin() + start, scope.begin() + end,
                                                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (numeric) return scope.substr(0, end);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return "";
}

// Per-block checkpointing as users write it by hand (torch.utils.checkpoint
// around each block): one segment over each container child's compute nodes,
// where the cut rules allow it.
RecomputeDecision perBlockDecision(const Simulator& simulator) {
  RecomputeDecision decision;
  std::string current;
  NodeRange range{-1, -1};
  auto close = [&] {
    if (range.first_node >= 0 && simulator.index().rules.allows(range.first_node, range.last_node)) decision.push_back(range);
    range = {-1, -1};
  };
  for (const ForwardNode& node : simulator.profile().nodes) {
    if (node.role != CutRole::Compute) continue;
    const std::string child = containerChild(node.scope);
    if (child != current || child.empty()) {
      close();
      current = child;
    }
    if (child.empty()) continue;
    if (range.first_node < 0) range.first_node = node.id;
    range.last_node = node.id;
  }
  close();
  return decision;
}

// How long the exact solver may search at each budget of a sweep.
constexpr double kSweepSearchSeconds = 2;

// The lowest peak the solver reaches: what it names when no budget fits.
int64_t floorOf(const Simulator& simulator, const std::string& solver) {
  return solveRecompute(simulator, solver, 0, kSweepSearchSeconds).simulation.peak_bytes;
}

FrontierPoint pointOf(const std::string& label, int64_t budget_bytes, const SolverResult& r) {
  return FrontierPoint{label, budget_bytes, r.simulation.peak_bytes, r.simulation.extra_time_us,
                       static_cast<int>(r.decision.size())};
}

}  // namespace

std::vector<FrontierPoint> memoryTimeFrontier(const Profile& profile, const std::string& solver, int budget_count) {
  const Simulator simulator(profile);
  const SolverResult none{{}, simulator.baseline(), {}, "none"};
  const int64_t baseline = none.simulation.peak_bytes;
  const int64_t lowest = std::min(baseline, floorOf(simulator, solver));

  // The solver at evenly spaced budgets from the baseline down to its floor;
  // a plan another one beats on both peak and time is dropped.
  std::vector<FrontierPoint> planned = {pointOf("none", 0, none)};
  for (int k = 1; k < budget_count; ++k) {
    const int64_t budget = baseline - (baseline - lowest) * k / (budget_count - 1);
    // At the floor too: asked for the floor as a budget, the solver spends the least time reaching it.
    const SolverResult r = solveRecompute(simulator, solver, budget, kSweepSearchSeconds);
    if (!fitsBudget(r, budget)) continue;
    planned.push_back(pointOf(r.solver, budget, r));  // auto: the strategy that made this plan
  }
  std::sort(planned.begin(), planned.end(), [](const FrontierPoint& a, const FrontierPoint& b) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes : a.extra_time_us < b.extra_time_us;
  });
  std::vector<FrontierPoint> frontier;
  for (const FrontierPoint& p : planned)
    if (frontier.empty() || p.extra_time_us < frontier.back().extra_time_us) frontier.push_back(p);
  std::reverse(frontier.begin(), frontier.end());  // from no recompute to the floor

  frontier.push_back(pointOf("chen", 0, solveChen(simulator, 0)));
  const RecomputeDecision blocks = perBlockDecision(simulator);
  if (!blocks.empty())
    frontier.push_back(pointOf("per-block", 0, SolverResult{blocks, simulator.simulate(blocks), {}, "per-block"}));
  return frontier;
}

std::string frontierText(const Profile& profile, const std::vector<FrontierPoint>& frontier) {
  std::string text = fmt::format("{:<10} {:>14} {:>8} {:>14} {:>8} {:>9}\n", "plan", "peak", "saving", "extra time",
                                 "of iter", "segments");
  const double iteration = std::max(iterationTimeUs(profile), 1e-9);
  int64_t baseline_bytes = 1;
  for (const FrontierPoint& p : frontier)
    if (p.label == "none") baseline_bytes = std::max<int64_t>(p.peak_bytes, 1);
  const double baseline = static_cast<double>(baseline_bytes);
  for (const FrontierPoint& p : frontier)
    text += fmt::format("{:<10} {:>14} {:>7.1f}% {:>11.3f} ms {:>7.1f}% {:>9}\n", p.label, formatBytes(p.peak_bytes),
                        100.0 * (baseline - static_cast<double>(p.peak_bytes)) / baseline, p.extra_time_us / 1000.0,
                        100.0 * p.extra_time_us / iteration, p.segment_count);
  return text;
}

}  // namespace acprof
