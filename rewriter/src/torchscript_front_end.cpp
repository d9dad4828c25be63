// The TorchScript front end of the rewrite session: graph surgery and
// verification (rewriteModelFile), the paired timing, and the re-profile of
// the written model, all in this process.
#include <filesystem>
#include <memory>

#include "acprof/files.h"
#include "acprof/rewrite_session.h"
#include "acprof/run_modes.h"
#include "acprof/training_pair.h"

namespace acprof {
namespace {

namespace fs = std::filesystem;

class TorchScriptRewriteFrontEnd : public RewriteFrontEnd {
 public:
  std::optional<ReportFiles> prepare(const Plan& plan, const RewriteRequest& request) override {
    model_path_ = request.model_path.empty() ? plan.model_path : request.model_path;
    output_path_ = request.output_path.empty() ? defaultRewrittenPath(model_path_) : request.output_path;
    // The report draws the plan on its profile. A plan edited by hand or paired
    // with another profile fails here, before any work, not once the model is written.
    if (!plan.profile_path.empty() && fs::exists(plan.profile_path)) {
      before_ = readProfileFile(plan.profile_path);
      checkPlanMatchesProfile(plan, *before_);
    }
    const std::vector<std::string> inputs = {model_path_, request.plan_path, plan.profile_path};
    checkOutputPath(output_path_, inputs);
    if (!before_) return std::nullopt;
    return ReportFiles(request.report_dir.empty() ? fs::absolute(output_path_).parent_path()
                                                  : fs::path(request.report_dir),
                       inputs);
  }

  MeasuredRewrite apply(const Plan& plan, const RewriteRequest& request) override {
    RewriteOptions options;
    options.model_path = model_path_;
    options.output_path = output_path_;
    options.verify = request.verify;
    options.tolerance = request.tolerance;
    options.progress = request.progress;
    // The profile's training step, for the verification and the timing: read once.
    if (before_) options.step = stepConfigOf(before_->meta.run);
    MeasuredRewrite m;
    m.before = before_;
    // The library verifies, re-profiles and times at the profile's intra-op
    // thread count; a user training at another count should know.
    if (before_) {
      const int threads = before_->meta.run.intra_op_threads;
      const int own = intraOpThreads();
      if (threads > 0 && threads != own) m.threads_profile_and_own = std::make_pair(threads, own);
    }
    RewriteResult result = rewriteModelFile(plan, options);
    m.model_path = result.model_path;
    m.output_path = result.output_path;
    m.segment_count = result.segment_count;
    m.verification = result.verification;
    if (!before_) return m;
    // Timed before the report is drawn: its headline extra time is this
    // measurement. The verified pair goes on training (its verified step was the
    // warm-up), and the re-profile records its rewritten model, warm.
    std::shared_ptr<TrainingPair> pair = std::move(result.verified_pair);
    if (request.time_rounds > 0) {
      if (options.progress) options.progress("timing both models");
      if (!pair) pair = std::make_shared<TrainingPair>(result.model_path, result.output_path, *options.step);
      m.times = timeRewrite(*pair, request.time_rounds, /*keep_to_step_budget=*/true);
    }
    if (options.progress) options.progress("re-profiling the rewritten model");
    m.after = profileRewrittenModel(before_->meta, result.output_path, pair.get(), options.progress);
    return m;
  }

 private:
  std::string model_path_, output_path_;
  std::optional<Profile> before_;
};

}  // namespace

std::unique_ptr<RewriteFrontEnd> torchScriptRewriteFrontEnd() { return std::make_unique<TorchScriptRewriteFrontEnd>(); }

}  // namespace acprof
