// The solvers side by side on real profiles, in one process: per profile, each
// solver's floor (the lowest peak it reaches, planned again with that peak as
// the budget so the time is the least that reaches it) with the share of the
// removable bytes it removes, and at 60 % of the profiled peak the predicted
// extra time and the planning time.
//
//   acprof_solver_compare [--time-limit S] profile.json...
//
// Prints the Markdown table of docs/solvers.md. A profile named profile.json
// is listed under its directory's name, any other under its file name.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "acprof/solver.h"

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::string rowName(const std::string& path) {
  const std::filesystem::path p(path);
  if (p.filename() == "profile.json" && p.has_parent_path()) return p.parent_path().filename().string();
  return p.stem().string();
}

// Bytes no recompute can remove: weights, gradients, optimizer state and inputs at the peak.
int64_t fixedBytesAtPeak(const acprof::Profile& profile) {
  const auto& b = profile.summary.peak_breakdown;
  return b[static_cast<int>(acprof::Category::Weight)] + b[static_cast<int>(acprof::Category::Gradient)] +
         b[static_cast<int>(acprof::Category::OptimizerState)] + b[static_cast<int>(acprof::Category::Input)];
}

std::string joined(const std::vector<std::string>& cells) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) out += (i ? " · " : "") + cells[i];
  return out;
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

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
  std::printf("| model | compute nodes | baseline MiB | floor MiB (removable removed): mu-two · refined · optimal · chen "
              "| extra ms at 60 %%: mu-two · refined · optimal · chen | plan s at 60 %%: mu-two · refined · optimal |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const std::string& path : paths) {
    const acprof::Profile profile = acprof::readProfileFile(path);
    const acprof::Simulator simulator(profile);
    const int64_t baseline = simulator.simulate({}).peak_bytes;
    const int64_t removable = baseline - fixedBytesAtPeak(profile);
    int compute_nodes = 0;
    for (const acprof::ForwardNode& n : profile.nodes) compute_nodes += n.role == acprof::CutRole::Compute;
    const auto budget60 = static_cast<int64_t>(0.6 * static_cast<double>(baseline));
    std::vector<std::string> floors, times, seconds;
    for (const auto& [name, solve] : solvers) {
      // Budget 0 asks for the lowest peak the solver reaches; the least time
      // that reaches it is what 'acprof plan --budget <floor>' returns.
      acprof::SolverResult floor = solve(simulator, 0);
      acprof::SolverResult at_floor = solve(simulator, floor.simulation.peak_bytes);
      if (at_floor.simulation.peak_bytes <= floor.simulation.peak_bytes) floor = std::move(at_floor);
      const double removed = removable > 0 ? 100.0 * static_cast<double>(baseline - floor.simulation.peak_bytes) /
                                                 static_cast<double>(removable)
                                           : 0.0;
      std::string cell = format("%.2f", mib(floor.simulation.peak_bytes)) + format(" (%.0f %%)", removed);
      if (floor.search.searched && floor.search.proven_optimal) cell += " (proven)";
      floors.push_back(cell);
      const auto start = std::chrono::steady_clock::now();
      const acprof::SolverResult at60 = solve(simulator, budget60);
      const double plan_seconds = secondsSince(start);
      times.push_back(at60.simulation.peak_bytes <= budget60 ? format("%.1f", at60.simulation.extra_time_us / 1000.0)
                                                              : "—");
      if (std::strcmp(name, "chen") != 0) seconds.push_back(format("%.2f", plan_seconds));
    }
    std::printf("| %s | %d | %.2f | %s | %s | %s |\n", rowName(path).c_str(), compute_nodes, mib(baseline),
                joined(floors).c_str(), joined(times).c_str(), joined(seconds).c_str());
    std::fflush(stdout);
  }
  return 0;
}
