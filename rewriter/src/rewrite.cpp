// The rewrite of a model file: plan checks, surgery, verification, atomic write.
#include <filesystem>
#include <future>
#include <unistd.h>

#include <fmt/format.h>

#include "acprof/model_file.h"
#include "acprof/recorder.h"
#include "acprof/rewriter.h"
#include "acprof/training_pair.h"
#include "acprof/unreproducible_step.h"
#include "graph_surgery.h"

namespace acprof {
namespace {

namespace fs = std::filesystem;

void report(const RewriteOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

std::string shortHash(const std::string& sha256) { return sha256.substr(0, 12); }

// LibTorch's messages span lines (and often start with one); the CLI prints one.
std::string oneLine(const std::string& message) {
  std::string line;
  for (const char c : message) {
    if (c == '\n') {
      if (!line.empty() && line.back() != ' ') line += ' ';
    } else {
      line += c;
    }
  }
  while (!line.empty() && line.front() == ' ') line.erase(line.begin());
  return line;
}

// The export scripts' input specs travel along, so the rewritten model can be
// profiled as typed, like the original. So does the executor mode the plan was
// profiled in, where the profile's run is known: acprof.load (python/acprof)
// sets it before the model trains.
torch::jit::ExtraFilesMap storedSpecFiles(const std::string& model_path, const std::optional<StepConfig>& run) {
  const StoredSpecs stored = readStoredSpecs(model_path);
  torch::jit::ExtraFilesMap files;
  if (run) files["acprof_executor_optimize"] = run->run.executor_optimize ? "on" : "off";
  if (!stored.inputs.empty()) {
    std::string joined;
    for (const std::string& spec : stored.inputs) joined += spec + "\n";
    files["acprof_inputs"] = joined;
  }
  if (!stored.target.empty()) files["acprof_target"] = stored.target;
  if (!stored.loss.empty()) files["acprof_loss"] = stored.loss;
  if (!stored.autocast.empty()) files["acprof_autocast"] = stored.autocast;
  return files;
}

void checkPlanMatchesModel(const Plan& plan, const std::string& model_path, const std::string& actual) {
  if (actual != plan.model_sha256) {
    throw RewriteError(fmt::format(
        "the plan was made for a model with sha256 {}…, but {} has sha256 {}…; pass the model the plan was made "
        "for ({}), or profile and plan this one",
        shortHash(plan.model_sha256), model_path, shortHash(actual), plan.model_path));
  }
}


StepConfig verificationConfig(const Plan& plan) {
  if (plan.profile_path.empty() || !fs::exists(plan.profile_path)) {
    throw RewriteError(fmt::format(
        "the plan's profile '{}' is missing, and verification needs its input specs; restore it, or pass "
        "--no-verify to skip verification",
        plan.profile_path));
  }
  return stepConfigOf(readProfileFile(plan.profile_path).meta.run);
}

}  // namespace

std::string defaultRewrittenPath(const std::string& model_path) {
  const fs::path path(model_path);
  return (path.parent_path() / (path.stem().string() + ".ckpt.pt")).string();
}

torch::jit::Module checkpointedModel(const std::string& model_path, const Plan& plan) {
  torch::jit::Module module = loadModel(model_path, "cpu");
  checkpointSegments(module, plan.segments);
  return module;
}

RewriteResult rewriteModelFile(const Plan& plan, const RewriteOptions& options) {
  RewriteResult result;
  result.model_path = options.model_path.empty() ? plan.model_path : options.model_path;
  result.output_path = options.output_path.empty() ? defaultRewrittenPath(result.model_path) : options.output_path;
  result.segment_count = plan.segments.size();
  if (!fs::exists(result.model_path)) {
    throw RewriteError(fmt::format("{}: no such file; pass the model the plan was made for", result.model_path));
  }
  checkOutputPath(result.output_path, {result.model_path});
  // Hashing and loading read the same file; the hash runs on a thread of its
  // own beside the load (0.28 s of 47 MB on the 2-core machine), and is checked
  // before the surgery, which a plan for another model would fail less clearly.
  std::future<std::string> model_sha256 = std::async(std::launch::async, sha256OfFile, result.model_path);
  // Read before any work, so a missing profile fails fast.
  std::optional<StepConfig> config;
  if (options.verify) config = options.step ? *options.step : verificationConfig(plan);
  torch::jit::Module module = loadModel(result.model_path, "cpu");
  checkPlanMatchesModel(plan, result.model_path, model_sha256.get());

  report(options, fmt::format("rewriting {} segment(s) of {}", plan.segments.size(), result.model_path));
  try {
    checkpointSegments(module, plan.segments);
  } catch (const c10::Error& e) {
    throw RewriteError(fmt::format("the checkpointed graph is invalid ({}); this is a bug in acprof rewrite, "
                                   "please report it with the plan",
                                   oneLine(e.what_without_backtrace())),
                       ErrorKind::Internal);
  }

  // Removed on any error and on SIGINT/SIGTERM: an interrupted rewrite leaves nothing.
  TemporaryFile temporary(fmt::format("{}.tmp-{}", result.output_path, ::getpid()));
  const std::string& temp_path = temporary.path();
  module.save(temp_path, storedSpecFiles(result.model_path, options.step ? options.step : config));
  if (config) {
    report(options, "verifying one training step against the original");
    result.verified_pair = std::make_shared<TrainingPair>(result.model_path, temp_path, *config);
    result.verification = verifyRewrite(*result.verified_pair, options.tolerance);
    const VerificationResult& v = *result.verification;
    if (v.original_difference) {
      const StepDifference& d = *v.original_difference;
      const std::string made_by = d.made_by.empty() ? "" : fmt::format(" (made by the backward of {})", d.made_by);
      throw UnreproducibleStep(
          fmt::format("the original model's own training step is not reproducible: two steps of the original, "
                      "on the same inputs and seed, differ in {}{} by {:.3g}, so no rewrite can be verified against "
                      "it; this is nondeterminism in PyTorch or the model, not in acprof",
                      d.what, made_by, d.abs_diff),
          std::max(v.maxAbsDiff(), d.abs_diff));
    }
    if (!v.passed()) {
      const std::string how = v.tolerance ? fmt::format("above the tolerance {:.3g}", *v.tolerance)
                                          : std::string("with deterministic algorithms");
      throw RewriteError(fmt::format(
                             "verification failed: the rewritten model differs from the original by up to {:.3g}, {} "
                             "(loss {:.3g}, gradients {:.3g}, buffers {:.3g}); nothing was written, please report "
                             "this with the plan",
                             v.maxAbsDiff(), how, v.loss_abs_diff, v.max_gradient_abs_diff, v.max_buffer_abs_diff),
                         ErrorKind::VerificationFailed);
    }
  }
  fs::rename(temp_path, result.output_path);
  temporary.release();
  return result;
}

Profile profileRewrittenModel(const ProfileMeta& original, const std::string& rewritten_path, TrainingPair* trained,
                              const std::function<void(const std::string&)>& progress) {
  RecordOptions options;
  options.model_path = rewritten_path;
  options.run = original.run;
  // One measured iteration: the peak and the timeline come from the first in
  // any case, and the paired timing, not this profile, measures the time.
  options.run.measured_iters = 1;
  // The probes cost what they cost the original's steps: no plain forward.
  if (original.probe_cost_us >= 0) options.probe_cost_us = original.probe_cost_us;
  // Recorded "" is no autocast; requested "" would take the archive's.
  if (options.run.autocast.empty()) options.run.autocast = "off";
  options.command_line = "acprof rewrite (re-profile)";
  options.progress = progress;
  // The pair trained in the plain interpreter (verification and timing). A
  // profile in the optimizing executor's mode needs its warm-up, whose first
  // call in that mode is a profiling run, and so its own load.
  if (trained) trained->releaseOriginal();
  if (!trained || !trained->optimizers_stepped || original.run.executor_optimize) {
    if (trained) trained->releaseRewritten();
    return recordProfile(options);
  }
  options.run.warmup_iters = 0;
  return recordTrainedModel(options, trained->rewritten, *trained->rewritten_optimizer);
}

}  // namespace acprof
