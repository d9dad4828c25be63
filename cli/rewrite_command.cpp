// acprof rewrite: apply a plan to its model, verify, re-profile, report.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "acprof/error.h"
#include "acprof/files.h"
#include "acprof/ops.h"
#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/rewriter.h"
#include "acprof/rewrite_session.h"
#include "commands.h"
#include "cublas_workspace.h"
#include "eager_front_end.h"
#include "eager_rewrite_front_end.h"
#include "outcome.h"

namespace acprof::cli {
namespace {

namespace fs = std::filesystem;

struct RewriteArgs {
  std::vector<std::string> files;  // [model.pt] [plan.json], in either order
  std::string output;
  bool no_verify = false;
  std::string tolerance;         // as typed; parsed by parseTolerance
  bool tolerance_given = false;  // unset: bit for bit under deterministic algorithms
  std::string report_dir;
  int time_rounds = kDefaultTimedRounds;
  std::string module;  // --module: the eager module's factory (default: the one its profile records)
};

// The TorchScript rewrite's flag that the eager one does not take: it writes
// no model (the plan is the artifact).
const std::vector<std::string> kTorchScriptOnlyRewriteFlags = {"--output"};

bool isEagerPlan(const Plan& plan) { return plan.model_path.rfind(kEagerModelPrefix, 0) == 0; }

// A .json argument is the plan, anything else the model.
void splitFileArguments(const std::vector<std::string>& files, std::string& model_path, std::string& plan_path) {
  for (const std::string& file : files) {
    std::string& slot = fs::path(file).extension() == ".json" ? plan_path : model_path;
    if (!slot.empty()) {
      throw Error(ErrorKind::Usage, fmt::format("'{}' and '{}' are both {}; pass one model and one plan.json", slot, file,
                                           &slot == &plan_path ? "plans" : "models"));
    }
    slot = file;
  }
  if (plan_path.empty()) plan_path = "plan.json";
}

// --tolerance: a finite absolute difference, 0 or more.
std::optional<double> parseTolerance(const std::string& text, bool given) {
  if (!given) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value < 0) {
    throw Error(ErrorKind::Usage, fmt::format("--tolerance '{}' is not a non-negative number; pass the largest "
                                              "absolute difference you accept, e.g. --tolerance 1e-5",
                                              text));
  }
  return value;
}

// Printed only for a rewrite that passed. scripts/zoo.py reads these lines:
// bit for bit starts "verified: " and says "bit for bit"; the other starts
// "verified within tolerance".
std::string verificationLine(const VerificationResult& v) {
  if (v.tolerance) {
    return fmt::format("verified within tolerance {:g} (max diff {:.3g}): loss, {} gradients and {} buffers compared "
                       "with the original's, deterministic algorithms not forced",
                       *v.tolerance, v.maxAbsDiff(), v.gradients_compared, v.buffers_compared);
  }
  return fmt::format("verified: loss, {} gradients and {} buffers equal the original's bit for bit, deterministic "
                     "algorithms (max abs diff 0)",
                     v.gradients_compared, v.buffers_compared);
}

// Why the pairs stopped, in the time line's words, for an extra time they
// left inconclusive (a precise stop is never that).
std::string timingStopWords(TimingStop stop) {
  switch (stop) {
    case TimingStop::Precise: return "precise";
    case TimingStop::TimeLimit: return fmt::format("ended by the {:g} s limit", kMostTimedSeconds);
    case TimingStop::StepBudget: return fmt::format("ended by the rewrite's budget of {:g} steps", kRewriteStepBudget);
    case TimingStop::PairLimit: return "ended by the pair limit";
  }
  return "";
}

// The plan's extra time against the one measured: both as shares of the
// original step, so that a slower or faster machine state cancels out. Where
// the pairs left it inconclusive (Note: [an inconclusive extra time],
// rewriter.h), the line says so in place of the number, why the pairs ended,
// and how to time more.
std::string timeLine(const Plan& plan, const StepTimes& times) {
  const double predicted = plan.baseline_iteration_time_us > 0 ? 100.0 * plan.extra_time_us / plan.baseline_iteration_time_us : 0;
  const std::string error = times.extra_share_error
                                ? fmt::format("standard error {:.1f}%", 100.0 * *times.extra_share_error)
                                : std::string("too few for a standard error");
  if (times.verdict == TimingVerdict::Inconclusive) {
    // More pairs help where they are few; past the pair limit's worth (on the
    // 2-core test machine beside a build, 10-17 pairs of 10-17 ms steps left 4.8-54 %)
    // the machine is too busy for any number of them.
    const int wanted = pairsForPreciseTiming(times.extra_share_error, times.rounds);
    const std::string more = times.stopped_by == TimingStop::PairLimit || wanted > kMostTimedRounds
                                 ? std::string("time it on a quieter machine")
                                 : fmt::format("--time-rounds {} times more", wanted);
    return fmt::format("time: step before {:.1f} ms, after inconclusive, extra inconclusive ({} alternated pairs, {}, "
                       "over the {:g}% bound, {}; {}), predicted {:+.1f}%",
                       times.original_us / 1000, times.rounds, error, 100 * kTimedStandardError,
                       timingStopWords(times.stopped_by), more, predicted);
  }
  // "after" is the original's median step at the measured extra share, so the
  // line agrees with itself: the two models' own medians, taken apart, need not
  // (a busy moment stretches one model's steps and not the other's).
  return fmt::format("time: step before {:.1f} ms, after {:.1f} ms, extra {:+.1f}% (median of {} alternated pairs, "
                     "{}), predicted {:+.1f}%",
                     times.original_us / 1000, times.original_us * (1 + times.extra_share) / 1000,
                     100.0 * times.extra_share, times.rounds, error, predicted);
}

// The plan predicts allocated bytes (what tensors hold). Where the allocator
// also reports what it reserves from the device (CUDA's caching allocator), the
// measured reserved peaks follow: that is the figure that runs out.
std::string peakLine(const Plan& plan, const Profile& before, const Profile& after) {
  const int64_t measured = after.summary.peak_bytes;
  const double error = measured > 0 ? 100.0 * double(plan.predicted_peak_bytes - measured) / double(measured) : 0;
  std::string line = fmt::format("peak (allocated): before {}, predicted {}, measured {} ({:+.1f}% error), budget {}",
                                 formatBytes(before.summary.peak_bytes), formatBytes(plan.predicted_peak_bytes),
                                 formatBytes(measured), error, formatBytes(plan.budget_bytes));
  if (before.summary.reserved_peak_bytes && after.summary.reserved_peak_bytes) {
    line += fmt::format("\npeak (reserved by the caching allocator): before {}, measured {}",
                        formatBytes(*before.summary.reserved_peak_bytes),
                        formatBytes(*after.summary.reserved_peak_bytes));
  }
  return line;
}

// The op library this process runs with, as the dynamic linker found it: the
// one a user's own training process must load too.
std::string opsLibraryPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&checkpointOperatorRegistered), &info) == 0 || info.dli_fname == nullptr)
    return "libacprof_ops.so";
  return absolutePath(info.dli_fname);
}

// The two lines a user needs to train the result, with absolute paths.
std::string howToTrainText(const std::string& model_path) {
  const std::string model = absolutePath(model_path);
  const std::string ops = opsLibraryPath();
  return fmt::format(
      "train it in Python: import acprof; model = acprof.load(\"{}\")  (pip install the repo's python/; where "
      "acprof is not on PATH, set ACPROF_OPS_LIBRARY={})\n"
      "train it in C++: link {} (CMake: acprof::ops), call acprof::checkpointOperatorRegistered(), then "
      "torch::jit::load(\"{}\")\n",
      model, ops, ops, model);
}

// What the session did, in the command's lines (scripts/zoo.py reads some).
void printResult(const RewriteSessionResult& result, bool eager) {
  const MeasuredRewrite& m = result.measured;
  if (m.threads_profile_and_own) {
    const auto [threads, own] = *m.threads_profile_and_own;
    std::cout << fmt::format("ran with the profile's {} intra-op thread(s), not this process's {}: CPU "
                             "workspaces grow with the count; train with OMP_NUM_THREADS={}\n",
                             threads, own, threads);
  }
  if (!eager) {
    std::cout << fmt::format("rewrote {} segment(s) of {} into {}\n", m.segment_count, m.model_path, m.output_path);
    if (m.verification) std::cout << verificationLine(*m.verification) << "\n";
    else std::cout << "not verified (--no-verify)\n";
    std::cout << howToTrainText(m.output_path);
  }
  if (!result.report) {
    std::cout << fmt::format("no before/after report: the plan's profile '{}' is missing\n", result.plan.profile_path);
    return;
  }
  if (!eager) std::cout << peakLine(result.plan, *m.before, *m.after) << "\n";
  if (m.times) std::cout << timeLine(result.plan, *m.times) << "\n";
  std::cout << fmt::format("wrote {}, {}, {}\n", result.report->before, result.report->after, result.report->html);
}

void runRewrite(const RewriteArgs& args, const std::vector<std::string>& torchscript_flags_given) {
  RewriteRequest request;
  request.tolerance = parseTolerance(args.tolerance, args.tolerance_given);
  if (request.tolerance && args.no_verify)
    throw Error(ErrorKind::Usage, "--tolerance sets how to verify and --no-verify skips verifying; pass one of them");
  useDeterministicCublasWorkspace();  // as the profile did (cublas_workspace.h)
  splitFileArguments(args.files, request.model_path, request.plan_path);
  request.output_path = args.output;
  request.report_dir = args.report_dir;
  request.verify = !args.no_verify;
  request.time_rounds = args.time_rounds;
  request.module = args.module;
  if (::isatty(STDERR_FILENO))
    request.progress = [](const std::string& line) { std::cerr << "acprof: " << line << std::endl; };
  const Plan plan = readPlanFile(request.plan_path);
  const bool eager = !args.module.empty() || isEagerPlan(plan);
  if (eager && !torchscript_flags_given.empty())
    throw Error(ErrorKind::Usage, fmt::format("{} is not supported for an eager module (the rewrite writes no model: "
                                              "the plan is what is kept); leave it out",
                                              torchscript_flags_given.front()));
  if (!eager && plan.segments.empty())
    std::cout << "the plan has no segment (its budget needs no recompute): the rewritten model is the original "
                 "with nothing checkpointed; plan with a lower --budget to save memory\n";
  const std::unique_ptr<RewriteFrontEnd> front_end = eager ? eagerRewriteFrontEnd() : torchScriptRewriteFrontEnd();
  const RewriteSessionResult result = runRewriteSession(*front_end, plan, request);
  printResult(result, eager);
  setOutcomeResult(result.outcome);
  keepBudgetPromise(result);
}

}  // namespace

void addRewriteCommand(CLI::App& app) {
  auto args = std::make_shared<RewriteArgs>();
  CLI::App* command = app.add_subcommand("rewrite", kRewriteDescription);
  command->add_option("files", args->files, "[model.pt] [plan.json] (default: plan.json, and the plan's model)")
      ->expected(0, 2);
  command->add_option("-o,--output", args->output, "rewritten model (default: <model>.ckpt.pt beside the model)");
  command->add_flag("--no-verify", args->no_verify, "skip the training-step comparison with the original");
  CLI::Option* tolerance = command->add_option("--tolerance", args->tolerance,
                      "verify within this absolute difference instead of bit for bit under deterministic algorithms "
                      "(for models with nondeterministic ops)");
  command->add_option("--time-rounds", args->time_rounds,
                      fmt::format("pairs of training steps (original, rewritten) timed for the extra-time line: "
                                  "at least this many, more (up to {}) while under {:g} s in all, or while the "
                                  "median's standard error is over {:g}% of the step, under {:g} s in all, and one "
                                  "more keeps the rewrite within {:g} of the original's steps (default {}; 0: skip)",
                                  kMostTimedRounds, kLeastTimedSeconds, 100 * kTimedStandardError, kMostTimedSeconds,
                                  kRewriteStepBudget, kDefaultTimedRounds))
      ->check(CLI::NonNegativeNumber);
  command->add_option("--report-dir", args->report_dir,
                      "where profile.before.json, profile.after.json and report.html go (default: the output's directory)");
  command->add_option("--module", args->module,
                      "the eager nn.Module's factory, module.path:make_model or path/to/file.py:make_model: apply "
                      "the plan in eager, verify it and write the report, writing no model (default for a plan of `acprof profile "
                      "--module`: the factory its profile records)");
  command->callback([args, tolerance, command] {
    args->tolerance_given = tolerance->count() > 0;
    std::vector<std::string> given;
    for (const std::string& flag : kTorchScriptOnlyRewriteFlags)
      if (command->count(flag) > 0) given.push_back(flag);
    runRewrite(*args, given);
  });
}

}  // namespace acprof::cli
