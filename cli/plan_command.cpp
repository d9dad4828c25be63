// acprof plan: choose what to recompute so that a training step fits a budget.
#include <iostream>

#include <fmt/format.h>

#include "acprof/plan_format.h"
#include "acprof/planner.h"
#include "acprof/profile_format.h"
#include "commands.h"
#include "output_paths.h"

namespace acprof::cli {
namespace {

struct PlanArgs {
  std::string profile_path = "profile.json";
  std::string budget;
  std::string solver = "mu-two";
  double time_limit_s = kDefaultSearchSeconds;
  std::string output = "plan.json";
};

void runPlan(const PlanArgs& args) {
  checkOutputPath(args.output, {args.profile_path});
  const Profile profile = readProfileFile(args.profile_path);
  const Plan plan = planRecompute(profile, PlanRequest{args.profile_path, args.budget, args.solver, args.time_limit_s});
  writePlanFile(plan, args.output);
  std::cout << planSummaryText(plan) << fmt::format("wrote {}\n", args.output);
}

}  // namespace

void addPlanCommand(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "Choose activations to recompute so a training step fits a budget");
  cmd->add_option("profile", args->profile_path, "profile written by 'acprof profile' (default profile.json)");
  cmd->add_option("--budget", args->budget,
                  "peak memory to fit: bytes, 6GB / 1.5TB (powers of 1000), 512MiB / 6GiB (powers of 1024), "
                  "or 60% of the profiled peak")
      ->required();
  cmd->add_option("--solver", args->solver,
                  "mu-two (default, greedy), optimal (exhaustive search, small graphs), chen (sqrt(n) segments), none")
      ->check(CLI::IsMember(solverNames()));
  cmd->add_option("--time-limit", args->time_limit_s,
                  "seconds --solver optimal may search before it returns its best plan so far (default 10)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", args->output, "plan to write (default plan.json)");
  cmd->callback([args] { runPlan(*args); });
}

}  // namespace acprof::cli
