// The solvers side by side on real profiles, in one process.
//
// Per profile, two tables:
//  - floors: each solver's lowest peak (planned again with that peak as the
//    budget, so the time is the least that reaches it) and the share of the
//    removable bytes it removes;
//  - time at a budget: at 80, 60 and 40 % of the profiled peak and at the
//    exact solver's floor, each solver's predicted extra time and planning
//    time, and the default's extra time as a ratio to the exact solver's.
// It ends with how often the default (auto) is within the planner issue's
// bars: extra time within 10 % of optimal's, floor within 2 % of optimal's.
//
//   acprof_solver_compare [--time-limit S] profile.json...
//
// Prints the Markdown tables of docs/solvers.md. A profile named profile.json
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

using Solve = std::function<acprof::SolverResult(const acprof::Simulator&, int64_t)>;

struct NamedSolver {
  const char* name;
  Solve solve;
};

// The planner issue's bars for the default against the exact solver.
constexpr double kTimeBar = 1.10;
constexpr double kFloorBar = 1.02;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::string rowName(const std::string& path) {
  const std::filesystem::path p(path);
  if (p.filename() == "profile.json" && p.has_parent_path()) return p.parent_path().filename().string();
  return p.stem().string();
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

bool fits(const acprof::SolverResult& r, int64_t budget) { return r.simulation.peak_bytes <= budget; }

// The lowest peak the solver reaches, at the least time that reaches it:
// budget 0 asks for the lowest peak, and planning again at that peak is what
// 'acprof plan --budget <floor>' returns.
acprof::SolverResult floorOf(const NamedSolver& solver, const acprof::Simulator& simulator) {
  acprof::SolverResult floor = solver.solve(simulator, 0);
  acprof::SolverResult at_floor = solver.solve(simulator, floor.simulation.peak_bytes);
  if (at_floor.simulation.peak_bytes <= floor.simulation.peak_bytes) floor = std::move(at_floor);
  return floor;
}

struct Tally {
  int time_cases = 0, time_within = 0;
  int floor_cases = 0, floor_within = 0;
  std::vector<std::string> misses;
};

struct BudgetRow {
  std::string label;
  int64_t budget_bytes;
};

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
  const std::vector<NamedSolver> solvers = {
      {"mu-two", acprof::solveMuTwo},
      {"auto", acprof::solveAuto},
      {"optimal", [&](const acprof::Simulator& s, int64_t b) { return acprof::solveOptimal(s, b, time_limit_s); }},
      {"chen", acprof::solveChen},
  };
  constexpr size_t kAuto = 1, kOptimal = 2;
  Tally tally;
  std::string floor_table =
      "| model | compute nodes | baseline MiB | floor MiB (removable removed): mu-two · auto · optimal · chen "
      "| auto / optimal |\n|---|---|---|---|---|\n";
  std::string time_table =
      "| model | budget | MiB | extra ms: mu-two · auto · optimal · chen | auto / optimal "
      "| plan s: mu-two · auto · optimal |\n|---|---|---|---|---|---|\n";
  for (const std::string& path : paths) {
    const acprof::Profile profile = acprof::readProfileFile(path);
    const acprof::Simulator simulator(profile);
    const int64_t baseline = simulator.baseline().peak_bytes;
    const int64_t removable = baseline - acprof::unremovableBytes(profile.summary.peak_breakdown);
    int compute_nodes = 0;
    for (const acprof::ForwardNode& n : profile.nodes) compute_nodes += n.role == acprof::CutRole::Compute;
    const std::string name = rowName(path);

    std::vector<acprof::SolverResult> floors;
    std::vector<std::string> floor_cells;
    for (const NamedSolver& solver : solvers) {
      floors.push_back(floorOf(solver, simulator));
      const acprof::SolverResult& floor = floors.back();
      const double removed = removable > 0 ? 100.0 * static_cast<double>(baseline - floor.simulation.peak_bytes) /
                                                 static_cast<double>(removable)
                                           : 0.0;
      std::string cell = format("%.2f", mib(floor.simulation.peak_bytes)) + format(" (%.0f %%)", removed);
      if (floor.search.searched && floor.search.proven_optimal) cell += " (proven)";
      floor_cells.push_back(cell);
    }
    const double floor_ratio = static_cast<double>(floors[kAuto].simulation.peak_bytes) /
                               static_cast<double>(floors[kOptimal].simulation.peak_bytes);
    ++tally.floor_cases;
    if (floor_ratio <= kFloorBar)
      ++tally.floor_within;
    else
      tally.misses.push_back(name + " floor " + format("%.3f", floor_ratio));
    char row[1024];
    std::snprintf(row, sizeof row, "| %s | %d | %.2f | %s | %.3f |\n", name.c_str(), compute_nodes, mib(baseline),
                  joined(floor_cells).c_str(), floor_ratio);
    floor_table += row;

    const auto fraction = [&](double f) { return static_cast<int64_t>(f * static_cast<double>(baseline)); };
    const std::vector<BudgetRow> budgets = {{"80 %", fraction(0.8)},
                                            {"60 %", fraction(0.6)},
                                            {"40 %", fraction(0.4)},
                                            {"floor", floors[kOptimal].simulation.peak_bytes}};
    for (const BudgetRow& budget : budgets) {
      if (budget.label != "floor" && budget.budget_bytes < floors[kOptimal].simulation.peak_bytes) continue;
      std::vector<acprof::SolverResult> results;
      std::vector<std::string> times, seconds;
      for (const NamedSolver& solver : solvers) {
        const auto start = std::chrono::steady_clock::now();
        results.push_back(solver.solve(simulator, budget.budget_bytes));
        const double plan_seconds = secondsSince(start);
        const acprof::SolverResult& r = results.back();
        times.push_back(fits(r, budget.budget_bytes) ? format("%.1f", r.simulation.extra_time_us / 1000.0) : "—");
        if (std::strcmp(solver.name, "chen") != 0) seconds.push_back(format("%.2f", plan_seconds));
      }
      const acprof::SolverResult& best = results[kOptimal];
      const acprof::SolverResult& chosen = results[kAuto];
      std::string ratio = "—";
      if (fits(best, budget.budget_bytes)) {
        ++tally.time_cases;
        const bool ok = fits(chosen, budget.budget_bytes) &&
                        chosen.simulation.extra_time_us <= kTimeBar * best.simulation.extra_time_us + 1e-9;
        tally.time_within += ok;
        if (fits(chosen, budget.budget_bytes))
          ratio = best.simulation.extra_time_us > 0
                      ? format("%.3f", chosen.simulation.extra_time_us / best.simulation.extra_time_us)
                      : "1.000";
        if (!ok) tally.misses.push_back(name + " at " + budget.label + " time " + ratio);
      }
      std::snprintf(row, sizeof row, "| %s | %s | %.2f | %s | %s | %s |\n", name.c_str(), budget.label.c_str(),
                    mib(budget.budget_bytes), joined(times).c_str(), ratio.c_str(), joined(seconds).c_str());
      time_table += row;
    }
    std::fprintf(stderr, "solver_compare: %s done\n", name.c_str());
  }
  std::printf("### Floors\n\n%s\n### Extra time at a budget\n\n%s\n", floor_table.c_str(), time_table.c_str());
  std::printf("auto within %.0f %% of optimal's extra time: %d of %d budgets; floor within %.0f %% of optimal's: "
              "%d of %d models\n",
              100 * (kTimeBar - 1), tally.time_within, tally.time_cases, 100 * (kFloorBar - 1), tally.floor_within,
              tally.floor_cases);
  for (const std::string& miss : tally.misses) std::printf("  outside the bar: %s\n", miss.c_str());
  return 0;
}
