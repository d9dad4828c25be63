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
#include "acprof/training_pair.h"
#include "acprof/run_modes.h"
#include "acprof/viz.h"
#include "commands.h"
#include "cublas_workspace.h"
#include "eager_front_end.h"
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

std::string timeLine(const Plan& plan, const StepTimes& times);

// The paired time as report.html's headline states it.
MeasuredStepTime measuredStepTime(const StepTimes& times) {
  return MeasuredStepTime{times.original_us, times.extra_share, times.extra_share_error, times.rounds,
                          times.verdict == TimingVerdict::Conclusive};
}

bool isEagerPlan(const Plan& plan) { return plan.model_path.rfind(kEagerModelPrefix, 0) == 0; }

// Where a rewrite's report goes: the profiles before and after and report.html
// in one directory, made only once there is a report to put in it. Checked
// before any work: none of them may be one of the command's inputs.
struct ReportFiles {
  fs::path dir;
  std::string before, after, html;
  bool make_dir = false;

  ReportFiles(const fs::path& directory, const std::vector<std::string>& inputs)
      : dir(directory), before((directory / "profile.before.json").string()),
        after((directory / "profile.after.json").string()), html((directory / "report.html").string()),
        make_dir(!fs::exists(directory)) {
    if (make_dir) checkOutputDirectory(dir.string());
    else
      for (const std::string& path : {before, after, html}) checkOutputPath(path, inputs);
  }
  void makeDir() const {
    if (make_dir) fs::create_directories(dir);
  }
  nlohmann::json outcomeFiles() const {
    return {{"report", absolutePath(html)}, {"profile_before", absolutePath(before)},
            {"profile_after", absolutePath(after)}};
  }
};

// The mode of verification in report.html's words.
std::string verificationNote(const std::optional<VerificationResult>& v) {
  if (!v) return "Verification: not verified (--no-verify).";
  if (v->tolerance)
    return fmt::format("Verification: within tolerance {:g} (max diff {:.3g}).", *v->tolerance, v->maxAbsDiff());
  return "Verification: bit for bit, deterministic algorithms.";
}

// acprof rewrite of an eager module's plan: the Python front end applies the
// plan to the module the factory builds, verifies one step and measures its
// peak, printing the same lines as the TorchScript rewrite, and writes the
// measured step as profile.after.json; this draws report.html from it and the
// plan's profile. A peak over the budget is BudgetExceeded (exit 5), with the
// report written, as the TorchScript rewrite does.
void runEagerRewrite(const RewriteArgs& args, const std::string& plan_path, const std::string& model_path,
                     const std::vector<std::string>& torchscript_flags_given) {
  if (!model_path.empty())
    throw Error(ErrorKind::Usage, fmt::format("'{}' is a model file, and an eager plan's module comes from "
                                              "--module; pass the plan only",
                                              model_path));
  if (!torchscript_flags_given.empty())
    throw Error(ErrorKind::Usage, fmt::format("{} is not supported for an eager module (the rewrite writes no model: "
                                              "the plan is what is kept); leave it out",
                                              torchscript_flags_given.front()));
  const Plan plan = readPlanFile(plan_path);
  const fs::path plan_dir = fs::absolute(plan_path).parent_path();
  const ReportFiles report(args.report_dir.empty() ? plan_dir : fs::path(args.report_dir),
                           {plan_path, plan.profile_path, (plan_dir / plan.profile_path).string()});
  // The front end writes the after profile once the module is verified, here;
  // the report's files are written only then.
  const TemporaryFile after_file("the checkpointed module's profile");
  std::vector<std::string> command = {"rewrite", plan_path, "--profile-after", after_file.path};
  if (!args.module.empty()) command.insert(command.end(), {"--module", args.module});
  if (args.no_verify) command.push_back("--no-verify");
  if (args.tolerance_given) command.insert(command.end(), {"--tolerance", args.tolerance});
  command.insert(command.end(), {"--time-rounds", std::to_string(args.time_rounds)});
  EagerOutcome outcome = runEagerCommandOutcome(command);
  nlohmann::json& result = outcome.result;
  const bool measured = result.is_object() && result.contains("files") && result["files"].contains("profile_after");
  if (outcome.error && (outcome.error_kind != ErrorKind::BudgetExceeded || !measured)) {
    if (!result.is_null()) setOutcomeResult(result);
    std::rethrow_exception(outcome.error);
  }
  const Profile before = readProfileFile(result["files"].at("profile").get<std::string>());
  const Profile after = readProfileFile(after_file.path);
  std::optional<VerificationResult> verification;
  if (const nlohmann::json& verified = result.at("verification"); !verified.is_null()) {
    verification = VerificationResult{};
    if (verified.value("mode", "") == "tolerance") {
      verification->tolerance = verified.at("tolerance").get<double>();
      // The front end reports the largest difference of loss, gradients and
      // buffers together, which is all the report's note shows (maxAbsDiff).
      verification->max_gradient_abs_diff = verified.at("max_abs_diff").get<double>();
    }
  }
  // The front end timed its pairs by the same rule (pair_timing.h, through the
  // engine module) and reports them as the outcome's `time`; the line and the
  // report's headline are the TorchScript rewrite's.
  std::optional<StepTimes> times;
  std::optional<MeasuredStepTime> measured_time;
  if (result.contains("time") && !result["time"].is_null()) {
    times = stepTimesFromJson(result["time"]);
    measured_time = measuredStepTime(*times);
  }
  report.makeDir();
  writeProfileFile(before, report.before);
  writeProfileFile(after, report.after);
  writeFileAtomically(report.html, renderComparisonHtml(before, after, &plan, verificationNote(verification),
                                                        measured_time ? &*measured_time : nullptr));
  if (times) std::cout << timeLine(plan, *times) << "\n";
  result["files"].update(report.outcomeFiles());
  setOutcomeResult(result);
  std::cout << fmt::format("wrote {}, {}, {}\n", report.before, report.after, report.html);
  if (outcome.error) std::rethrow_exception(outcome.error);
}

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

// The rewrite's outcome as data (--outcome): what was verified and how, the
// peaks predicted and measured, the paired time, and the files written.
nlohmann::json rewriteResultJson(const Plan& plan, const RewriteResult& result, const std::optional<Profile>& before,
                                 const std::optional<Profile>& after, const std::optional<StepTimes>& times,
                                 nlohmann::json files) {
  files["model"] = absolutePath(result.output_path);
  nlohmann::json verification = nullptr;
  if (result.verification) {
    const VerificationResult& v = *result.verification;
    verification = {{"mode", v.tolerance ? "tolerance" : "bitwise"},
                    {"tolerance", v.tolerance ? nlohmann::json(*v.tolerance) : nlohmann::json()},
                    {"max_abs_diff", v.maxAbsDiff()},
                    {"gradients_compared", v.gradients_compared},
                    {"buffers_compared", v.buffers_compared}};
  }
  nlohmann::json peak = {{"budget_bytes", plan.budget_bytes}, {"predicted_bytes", plan.predicted_peak_bytes}};
  if (before) peak["before_bytes"] = before->summary.peak_bytes;
  if (after) peak["measured_bytes"] = after->summary.peak_bytes;
  // A caching allocator's (CUDA's) reserved peaks, where the profiles have them.
  if (before && before->summary.reserved_peak_bytes)
    peak["before_reserved_bytes"] = *before->summary.reserved_peak_bytes;
  if (after && after->summary.reserved_peak_bytes)
    peak["measured_reserved_bytes"] = *after->summary.reserved_peak_bytes;
  const nlohmann::json time = times ? stepTimesToJson(*times) : nlohmann::json();
  const double predicted_share =
      plan.baseline_iteration_time_us > 0 ? plan.extra_time_us / plan.baseline_iteration_time_us : 0;
  return {{"segments", result.segment_count}, {"verification", verification}, {"peak", peak},
          {"time", time}, {"predicted_extra_share", predicted_share}, {"files", files}};
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

void runRewrite(const RewriteArgs& args, const std::vector<std::string>& torchscript_flags_given) {
  const std::optional<double> tolerance = parseTolerance(args.tolerance, args.tolerance_given);
  if (tolerance && args.no_verify)
    throw Error(ErrorKind::Usage, "--tolerance sets how to verify and --no-verify skips verifying; pass one of them");
  useDeterministicCublasWorkspace();  // as the profile did (cublas_workspace.h)
  std::string model_path, plan_path;
  splitFileArguments(args.files, model_path, plan_path);
  if (!args.module.empty()) return runEagerRewrite(args, plan_path, model_path, torchscript_flags_given);
  const Plan plan = readPlanFile(plan_path);
  if (isEagerPlan(plan)) return runEagerRewrite(args, plan_path, model_path, torchscript_flags_given);
  if (model_path.empty()) model_path = plan.model_path;
  if (plan.segments.empty())
    std::cout << "the plan has no segment (its budget needs no recompute): the rewritten model is the original "
                 "with nothing checkpointed; plan with a lower --budget to save memory\n";

  RewriteOptions options;
  options.model_path = model_path;
  options.output_path = args.output.empty() ? defaultRewrittenPath(model_path) : args.output;
  options.verify = !args.no_verify;
  options.tolerance = tolerance;
  if (::isatty(STDERR_FILENO))
    options.progress = [](const std::string& line) { std::cerr << "acprof: " << line << std::endl; };

  const bool has_profile = !plan.profile_path.empty() && fs::exists(plan.profile_path);
  // The report draws the plan on its profile. A plan edited by hand or paired
  // with another profile fails here, before any work, not once the model is written.
  std::optional<Profile> before;
  if (has_profile) {
    before = readProfileFile(plan.profile_path);
    checkPlanMatchesProfile(plan, *before);
  }
  const std::vector<std::string> inputs = {model_path, plan_path, plan.profile_path};
  checkOutputPath(options.output_path, inputs);
  std::optional<ReportFiles> report;
  if (has_profile)
    report.emplace(args.report_dir.empty() ? fs::absolute(options.output_path).parent_path()
                                           : fs::path(args.report_dir),
                   inputs);

  // The profile's training step, for the verification and the timing: read once.
  const std::optional<StepConfig> step = before ? std::optional(stepConfigOf(before->meta.run)) : std::nullopt;
  // The library verifies, re-profiles and times at the profile's intra-op
  // thread count; a user training at another count should know.
  if (before) {
    const int threads = before->meta.run.intra_op_threads;
    const int own = intraOpThreads();
    if (threads > 0 && threads != own)
      std::cout << fmt::format("running with the profile's {} intra-op thread(s), not this process's {}: CPU "
                               "workspaces grow with the count; train with OMP_NUM_THREADS={}\n",
                               threads, own, threads);
  }
  options.step = step;
  RewriteResult result = rewriteModelFile(plan, options);
  std::cout << fmt::format("rewrote {} segment(s) of {} into {}\n", result.segment_count, result.model_path,
                           result.output_path);
  if (result.verification) std::cout << verificationLine(*result.verification) << "\n";
  else std::cout << "not verified (--no-verify)\n";
  std::cout << howToTrainText(result.output_path);

  if (!has_profile) {
    std::cout << fmt::format("no before/after report: the plan's profile '{}' is missing\n", plan.profile_path);
    setOutcomeResult(rewriteResultJson(plan, result, std::nullopt, std::nullopt, std::nullopt, {}));
    return;
  }
  // Timed before the report is drawn: its headline extra time is this
  // measurement. The verified pair goes on training (its verified step was the
  // warm-up), and the re-profile records its rewritten model, warm.
  std::optional<StepTimes> times;
  std::shared_ptr<TrainingPair> pair = std::move(result.verified_pair);
  if (args.time_rounds > 0) {
    if (options.progress) options.progress("timing both models");
    if (!pair) pair = std::make_shared<TrainingPair>(result.model_path, result.output_path, *step);
    times = timeRewrite(*pair, args.time_rounds, /*keep_to_step_budget=*/true);
  }
  if (options.progress) options.progress("re-profiling the rewritten model");
  const Profile after = profileRewrittenModel(before->meta, result.output_path, pair.get(), options.progress);
  pair.reset();
  std::optional<MeasuredStepTime> measured;
  if (times) measured = measuredStepTime(*times);
  report->makeDir();
  writeProfileFile(*before, report->before);
  writeProfileFile(after, report->after);
  writeFileAtomically(report->html, renderComparisonHtml(*before, after, &plan, verificationNote(result.verification),
                                                         measured ? &*measured : nullptr));
  std::cout << peakLine(plan, *before, after) << "\n";
  if (times) std::cout << timeLine(plan, *times) << "\n";
  setOutcomeResult(rewriteResultJson(plan, result, *before, after, times, report->outcomeFiles()));
  std::cout << fmt::format("wrote {}, {}, {}\n", report->before, report->after, report->html);
  // The budget is what the user must fit in. The rewrite is correct and its
  // report shows where the peak is, so the files stay; the exit code says the
  // promise failed, with the budget that the same overshoot would still fit.
  const int64_t over = after.summary.peak_bytes - plan.budget_bytes;
  if (over > 0)
    throw Error(ErrorKind::BudgetExceeded,
                fmt::format("the rewritten model peaked at {} ({} B), {} over the plan's budget of {} (predicted {}); "
                            "the model and report are written: plan again with --budget {} and report this "
                            "profile and plan, as the prediction missed",
                            formatBytes(after.summary.peak_bytes), after.summary.peak_bytes, formatBytes(over),
                            formatBytes(plan.budget_bytes), formatBytes(plan.predicted_peak_bytes),
                            std::max<int64_t>(plan.budget_bytes - over, 1)));
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
