// acprof view: render one profile (or a before/after pair) to an offline HTML
// timeline, optionally with a plan, a static SVG and a Perfetto trace.
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "acprof/error.h"
#include "acprof/files.h"
#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/viz.h"
#include "commands.h"

namespace acprof::cli {
namespace {

struct ViewArgs {
  std::vector<std::string> profiles;  // one, or before and after
  std::string plan;
  std::string html = "timeline.html";
  std::string svg;
  std::string trace;
  std::string x_axis = "time";  // time | events
};

void runView(const ViewArgs& args) {
  const std::vector<std::string> profile_paths = args.profiles.empty() ? std::vector<std::string>{"profile.json"}
                                                                       : args.profiles;
  std::vector<std::string> inputs = profile_paths;
  if (!args.plan.empty()) inputs.push_back(args.plan);
  // Check every output before reading anything, so a bad path costs nothing.
  std::set<std::string> outputs;
  for (const std::string* output : {&args.html, &args.svg, &args.trace}) {
    if (output->empty()) continue;
    checkOutputPath(*output, inputs);
    if (!outputs.insert(*output).second)
      throw Error(ErrorKind::Usage, fmt::format("{}: given for two outputs; choose a different path for each", *output));
  }

  std::vector<Profile> profiles;
  for (const std::string& path : profile_paths) profiles.push_back(readProfileFile(path));
  std::unique_ptr<Plan> plan;
  if (!args.plan.empty()) plan = std::make_unique<Plan>(readPlanFile(args.plan));

  // Render everything first: a failure leaves no partial set of outputs.
  const ChartXAxis x_axis = args.x_axis == "events" ? ChartXAxis::AllocatorEvents : ChartXAxis::WallTime;
  const std::string html = profiles.size() == 2 ? renderComparisonHtml(profiles[0], profiles[1], plan.get(), "",
                                                                       nullptr, x_axis)
                                                : renderTimelineHtml(profiles[0], plan.get(), x_axis);
  const std::string svg = args.svg.empty() ? "" : renderTimelineSvg(profiles[0], plan.get());
  const std::string trace = args.trace.empty() ? "" : renderPerfettoTrace(profiles[0], plan.get());

  writeFileAtomically(args.html, html);
  std::cout << fmt::format("wrote {}\n", args.html);
  if (!args.svg.empty()) {
    writeFileAtomically(args.svg, svg);
    std::cout << fmt::format("wrote {}\n", args.svg);
  }
  if (!args.trace.empty()) {
    writeFileAtomically(args.trace, trace);
    std::cout << fmt::format("wrote {} (open it in https://ui.perfetto.dev)\n", args.trace);
  }
}

}  // namespace

void addViewCommand(CLI::App& app) {
  auto args = std::make_shared<ViewArgs>();
  CLI::App* cmd = app.add_subcommand(
      "view", "Render a profile's memory timeline (or a before/after pair) to an offline HTML page");
  cmd->add_option("profiles", args->profiles,
                  "profile.json, or the profiles before and after a rewrite (default: profile.json)")
      ->expected(0, 2);
  cmd->add_option("--plan", args->plan, "plan.json: draw its budget, predicted peak and segments");
  cmd->add_option("-o,--output", args->html, "HTML page to write (default: timeline.html)");
  cmd->add_option("--x-axis", args->x_axis, "the charts' x axis: time (wall time, default) or events (allocator events)")
      ->check(CLI::IsMember({"time", "events"}));
  cmd->add_option("--svg", args->svg, "also write the stacked chart of the (first) profile as a static SVG");
  cmd->add_option("--trace", args->trace, "also write a Chrome Trace Event JSON of the (first) profile for Perfetto");
  cmd->callback([args] { runView(*args); });
}

}  // namespace acprof::cli
