// mu-two against the exact solver and Chen on real profiles, side by side in
// one process: per profile and budget (80 %, 60 %, 40 % of the profiled peak,
// and each solver's own floor, planned again with the floor as the budget so
// that the time is the least that reaches it), the predicted peak, the
// predicted extra time and the planning time. The greedy alone (mu-two without its refining moves)
// is shown too, so what the moves buy is visible.
//
//   acprof_solver_compare [--time-limit S] profile.json...
//
// Prints a Markdown table (docs/solvers.md is its output on the reference models).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "acprof/solver.h"

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  double time_limit_s = acprof::kDefaultSearchSeconds;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc)
      time_limit_s = std::atof(argv[++i]);
    else
      paths.push_back(argv[i]);
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: acprof_solver_compare [--time-limit S] profile.json...\n");
    return 2;
  }
  using Solve = std::function<acprof::SolverResult(const acprof::Simulator&, int64_t)>;
  const std::vector<std::pair<const char*, Solve>> solvers = {
      {"mu-two", acprof::solveMuTwo},
      {"refined", acprof::solveRefined},
      {"optimal", [&](const acprof::Simulator& s, int64_t b) { return acprof::solveOptimal(s, b, time_limit_s); }},
      {"chen", acprof::solveChen},
  };
  std::printf("| profile | compute nodes | budget | solver | peak MiB | extra time ms | plan s | note |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (const std::string& path : paths) {
    const acprof::Profile profile = acprof::readProfileFile(path);
    const acprof::Simulator simulator(profile);
    const int64_t baseline = simulator.simulate({}).peak_bytes;
    int compute_nodes = 0;
    for (const acprof::ForwardNode& n : profile.nodes) compute_nodes += n.role == acprof::CutRole::Compute;
    for (double fraction : {0.8, 0.6, 0.4, 0.0}) {
      // Budget 0 asks each solver for the lowest peak it can reach: its floor.
      const int64_t budget = static_cast<int64_t>(fraction * static_cast<double>(baseline));
      const std::string budget_text = fraction > 0 ? std::to_string(static_cast<int>(100 * fraction)) + " %" : "floor";
      for (const auto& [name, solve] : solvers) {
        const auto start = std::chrono::steady_clock::now();
        acprof::SolverResult r = solve(simulator, budget);
        if (fraction == 0) {
          // At the floor as at any budget: the least time that reaches it
          // (what 'acprof plan --budget <floor>' returns).
          acprof::SolverResult at_floor = solve(simulator, r.simulation.peak_bytes);
          if (at_floor.simulation.peak_bytes <= r.simulation.peak_bytes) r = std::move(at_floor);
        }
        const double seconds = secondsSince(start);
        std::string note;
        if (fraction > 0 && r.simulation.peak_bytes > budget) note = "does not fit";
        if (r.search.searched) note += std::string(note.empty() ? "" : "; ") + (r.search.proven_optimal ? "proven" : "not proven");
        std::printf("| %s | %d | %s | %s | %.2f | %.2f | %.3f | %s |\n", path.c_str(), compute_nodes,
                    budget_text.c_str(), name, mib(r.simulation.peak_bytes), r.simulation.extra_time_us / 1000.0,
                    seconds, note.c_str());
      }
    }
  }
  return 0;
}
