// The planner: from a profile and a memory budget to plan.json.
//
// Torch-free. It simulates what checkpointing node ranges of the forward graph
// does to the memory timeline (acprof/simulator.h), lets a solver choose the
// ranges (acprof/solver.h: auto by default, mu-two, refined, optimal, chen, none), and writes down the
// choice with its predicted peak, timeline and extra time (acprof/plan_format.h).
// Guarantees: the empty decision reproduces the profile's timeline exactly; no
// plan predicts a peak above the no-recompute peak; a plan is written only when
// its predicted peak fits the budget.
//
// Budgets (acprof/budget.h): plain bytes (6442450944); powers of 1000 with
// K/KB, M/MB, G/GB, T/TB (6GB, 1.5TB); powers of 1024 with KiB, MiB, GiB, TiB
// (512MiB); or a percentage of the profiled peak (60%). Units are
// case-insensitive and may follow a space.
#pragma once

#include <string>
#include <vector>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/solver.h"

namespace acprof {

struct PlanRequest {
  std::string profile_path;   // recorded in the plan
  std::string budget_text;    // as typed: "6GB", "60%"
  std::string solver = "auto";
  double time_limit_s = kDefaultSearchSeconds;  // for --solver optimal
};

// Parses the budget, solves, and fills every field of the plan. Throws
// BudgetError, InfeasibleBudget or, for an unknown solver, Error(ErrorKind::Usage), with one-line messages.
// `search`, where given, receives how the solver's search ended (the plan has it only as text).
Plan planRecompute(const Profile& profile, const PlanRequest& request, SearchReport* search = nullptr);

// The plan from a solver's result (every Plan field, every SegmentCut field).
Plan planFromSolution(const Simulator& simulator, const PlanRequest& request, int64_t budget_bytes,
                      const SolverResult& solution);

// acprof plan --sweep: the solver's plans at `budget_count` budgets evenly
// spaced from the no-recompute peak down to its floor (the exact solver
// searches 2 s per budget), keeping those no other
// plan beats on both predicted peak and extra time (ordered from no recompute
// to the floor), then two fixed strategies for comparison: Chen's sqrt(n)
// segments and per-block checkpointing (one segment per child of an
// nn.Sequential / nn.ModuleList, found from the module scopes, as users
// place torch.utils.checkpoint by hand).
std::vector<FrontierPoint> memoryTimeFrontier(const Profile& profile, const std::string& solver = "auto",
                                              int budget_count = 16);

// The frontier as a table: peak, saving against the highest point (no
// recompute) and extra time against the profiled iteration.
std::string frontierText(const Profile& profile, const std::vector<FrontierPoint>& frontier);

// The short table printed by 'acprof plan': baseline and predicted peak, saving,
// extra time and segment count.
std::string planSummaryText(const Plan& plan);

}  // namespace acprof
