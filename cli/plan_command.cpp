// acprof plan: choose what to recompute so that a training step fits a budget.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "acprof/budget.h"
#include "acprof/error.h"
#include "acprof/files.h"
#include "acprof/plan_format.h"
#include "acprof/planner.h"
#include "acprof/profile_format.h"
#include "acprof/viz.h"
#include "commands.h"
#include "outcome.h"
#include "profile_summary.h"

namespace acprof::cli {
namespace {

struct PlanArgs {
  std::string profile_path = "profile.json";
  std::string second_word;  // a positional after the profile: what `--budget 60 %` leaves (checkOneWordBudget)
  std::string budget;
  std::string solver = "auto";
  double time_limit_s = kDefaultSearchSeconds;
  std::string output = "plan.json";
  bool sweep = false;
  std::string sweep_svg = "frontier.svg";
};

// A TorchScript archive given where the profile goes (`acprof plan model.pt`)
// is named as what it is, with the command that makes its profile; anything
// else is the profile reader's to judge.
Profile readProfileOf(const std::string& path) {
  char head[4] = {};
  std::ifstream(path, std::ios::binary).read(head, sizeof(head));
  if (std::string(head, sizeof(head)) == std::string("PK\x03\x04", 4))  // a zip archive, as torch.jit.save writes
    throw Error(ErrorKind::BadInput,
                fmt::format("{} is a model archive, not a profile: run 'acprof profile {}' first, then "
                            "'acprof plan --budget ...' on the profile.json it writes",
                            path, path));
  return readProfileFile(path);
}

// `--budget 60 %` reaches us as --budget 60 and a positional '%', which would
// be opened as the profile ("%: cannot open the file"). A positional that is
// a unit of the budget convention and no file is the budget's second word.
void checkOneWordBudget(const PlanArgs& args, const std::vector<std::string>& positionals) {
  for (const std::string& word : positionals) {
    if (args.budget.empty() || !isBudgetUnit(word) || std::filesystem::exists(word)) continue;
    throw Error(ErrorKind::Usage, fmt::format("--budget {} {}: the budget came as two words, so '{}' was taken for "
                                              "the profile; write it as one word: --budget {}{}",
                                              args.budget, word, word, args.budget, word));
  }
  if (positionals.size() > 1)
    throw Error(ErrorKind::Usage, fmt::format("'{}' and '{}' are both given as the profile; pass one profile.json",
                                              positionals[0], positionals[1]));
}

void runPlan(const PlanArgs& args, const std::vector<std::string>& positionals) {
  checkOneWordBudget(args, positionals);
  if (args.budget.empty() && !args.sweep)
    throw Error(ErrorKind::Usage,
                "acprof plan needs --budget (6GB, 512MiB or 60% of the profiled peak), or --sweep to see what each "
                "budget costs");
  if (!args.budget.empty()) checkOutputPath(args.output, {args.profile_path});
  if (args.sweep) checkOutputPath(args.sweep_svg, {args.profile_path, args.output});
  const Profile profile = readProfileOf(args.profile_path);
  std::vector<FrontierPoint> frontier;
  if (args.sweep) {
    frontier = memoryTimeFrontier(profile, args.solver);
    std::cout << frontierText(profile, frontier) << "\n";
  }
  if (args.budget.empty()) {
    writeFileAtomically(args.sweep_svg, renderFrontierSvg(profile, frontier));
    std::cout << fmt::format("wrote {}\n", args.sweep_svg);
    return;
  }
  SearchReport search;
  Plan plan =
      // By absolute path, as the profile records its model: `acprof rewrite dir/plan.json` works from anywhere.
      planRecompute(profile, PlanRequest{absolutePath(args.profile_path), args.budget, args.solver, args.time_limit_s},
                    &search);
  plan.frontier = frontier;
  writePlanFile(plan, args.output);
  nlohmann::json result = {{"plan", absolutePath(args.output)},
                           {"solver", plan.solver},
                           {"budget_bytes", plan.budget_bytes},
                           {"baseline_peak_bytes", plan.baseline_peak_bytes},
                           {"predicted_peak_bytes", plan.predicted_peak_bytes},
                           {"extra_time_us", plan.extra_time_us},
                           {"baseline_iteration_time_us", plan.baseline_iteration_time_us},
                           {"segments", plan.segments.size()}};
  if (search.searched) result["search"] = searchJson(search);
  setOutcomeResult(std::move(result));
  if (args.sweep) writeFileAtomically(args.sweep_svg, renderFrontierSvg(profile, frontier, &plan));
  // The simulator replays tensors, so its peak is allocated bytes; a caching
  // allocator (CUDA) reserves more, which 'acprof rewrite' measures.
  const std::string threads = threadsNote(profile.meta.run);
  std::cout << planSummaryText(plan) << planSegmentsText(profile, plan)
            << fmt::format("{:<16}{}\n", "peaks count", "allocated bytes (tensors), not "
                           "the caching allocator's reserved bytes")
            << (threads.empty() ? "" : fmt::format("{:<16}{}\n", "threads", threads))
            << (plan.segments.empty() && plan.budget_bytes >= plan.baseline_peak_bytes
                    ? fmt::format("{:<16}the budget is at or above the profiled peak ({}): nothing needs "
                                  "recomputing, so the plan has no segment; ask for less, e.g. --budget 70%\n",
                                  "note", formatBytes(plan.baseline_peak_bytes))
                    : "")
            << fmt::format("wrote {}\n", args.output);
  if (args.sweep) std::cout << fmt::format("wrote {}\n", args.sweep_svg);
}

// "auto (default: ...), mu-two (...), ..., none": the solver table as --solver's help.
std::string solverHelpText() {
  std::string text;
  for (const SolverEntry& entry : solverTable()) {
    if (!text.empty()) text += ", ";
    text += entry.name;
    if (!entry.description.empty()) text += " (" + entry.description + ")";
  }
  return text;
}

// CLI11 2.1 lists a hidden positional in the usage line as "[]"; the second
// word is no argument of plan's, only caught to be named.
class UsageWithoutHiddenPositionals : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string usage = CLI::Formatter::make_usage(app, std::move(name));
    for (size_t at; (at = usage.find(" []")) != std::string::npos;) usage.erase(at, 3);
    return usage;
  }
};

}  // namespace

void addPlanCommand(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "Choose activations to recompute so a training step fits a budget");
  CLI::Option* profile =
      cmd->add_option("profile", args->profile_path, "profile written by 'acprof profile' (default profile.json)");
  // Hidden: a second word, kept to say what it is (checkOneWordBudget) instead of "not expected".
  CLI::Option* second_word = cmd->add_option("second-word", args->second_word)->group("");
  cmd->formatter(std::make_shared<UsageWithoutHiddenPositionals>());
  cmd->add_option("--budget", args->budget,
                  "peak memory to fit: bytes, 6GB / 1.5TB (powers of 1000), 512MiB / 6GiB (powers of 1024), "
                  "or 60% of the profiled peak (required unless --sweep)");
  cmd->add_option("--solver", args->solver, solverHelpText())
      ->check(CLI::IsMember(solverNames()));
  cmd->add_option("--time-limit", args->time_limit_s,
                  "seconds --solver optimal may search before it returns its best plan so far (default 10)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", args->output, "plan to write (default plan.json)");
  cmd->add_flag("--sweep", args->sweep,
                "print the trade-off between peak and extra time from no recompute to the floor (--solver at 16 "
                "budgets, chen and per-block marked) and draw it as SVG; with --budget the plan records it too");
  cmd->add_option("--sweep-svg", args->sweep_svg, "where --sweep draws the trade-off (default frontier.svg)");
  cmd->callback([args, profile, second_word] {
    std::vector<std::string> positionals;
    if (profile->count() > 0) positionals.push_back(args->profile_path);
    if (second_word->count() > 0) positionals.push_back(args->second_word);
    runPlan(*args, positionals);
  });
}

}  // namespace acprof::cli
