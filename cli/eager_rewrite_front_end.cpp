#include "eager_rewrite_front_end.h"

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "acprof/error.h"
#include "eager_front_end.h"
#include "outcome.h"

namespace acprof::cli {
namespace {

namespace fs = std::filesystem;

class EagerRewriteFrontEnd : public RewriteFrontEnd {
 public:
  std::optional<ReportFiles> prepare(const Plan& plan, const RewriteRequest& request) override {
    if (!request.model_path.empty())
      throw Error(ErrorKind::Usage, fmt::format("'{}' is a model file, and an eager plan's module comes from "
                                                "--module; pass the plan only",
                                                request.model_path));
    const fs::path plan_dir = fs::absolute(request.plan_path).parent_path();
    return ReportFiles(request.report_dir.empty() ? plan_dir : fs::path(request.report_dir),
                       {request.plan_path, plan.profile_path, (plan_dir / plan.profile_path).string()});
  }

  // The front end writes the after profile once the module is verified; the
  // report's files are written only then. A peak over the budget is the
  // front end's BudgetExceeded (exit 5), raised once the report is written,
  // as the TorchScript rewrite does.
  MeasuredRewrite apply(const Plan&, const RewriteRequest& request) override {
    const TemporaryFile after_file("the checkpointed module's profile");
    std::vector<std::string> command = {"rewrite", request.plan_path, "--profile-after", after_file.path};
    if (!request.module.empty()) command.insert(command.end(), {"--module", request.module});
    if (!request.verify) command.push_back("--no-verify");
    if (request.tolerance) command.insert(command.end(), {"--tolerance", fmt::format("{}", *request.tolerance)});
    command.insert(command.end(), {"--time-rounds", std::to_string(request.time_rounds)});
    EagerOutcome outcome = runEagerCommandOutcome(command);
    nlohmann::json& result = outcome.result;
    const bool measured =
        result.is_object() && result.contains("files") && result["files"].contains("profile_after");
    if (outcome.error && (outcome.error_kind != ErrorKind::BudgetExceeded || !measured)) {
      if (!result.is_null()) setOutcomeResult(result);
      std::rethrow_exception(outcome.error);
    }
    MeasuredRewrite m;
    m.before = readProfileFile(result["files"].at("profile").get<std::string>());
    m.after = readProfileFile(after_file.path);
    if (const nlohmann::json& verified = result.at("verification"); !verified.is_null()) {
      m.verification = VerificationResult{};
      if (verified.value("mode", "") == "tolerance") {
        m.verification->tolerance = verified.at("tolerance").get<double>();
        // The front end reports the largest difference of loss, gradients and
        // buffers together, which is all the report's note shows (maxAbsDiff).
        m.verification->max_gradient_abs_diff = verified.at("max_abs_diff").get<double>();
      }
    }
    // The front end timed its pairs by the same rule (pair_timing.h, through the
    // engine module) and reports them as the outcome's `time`.
    if (result.contains("time") && !result["time"].is_null()) m.times = stepTimesFromJson(result["time"]);
    m.outcome = std::move(result);
    m.deferred_error = outcome.error;
    return m;
  }
};

}  // namespace

std::unique_ptr<RewriteFrontEnd> eagerRewriteFrontEnd() { return std::make_unique<EagerRewriteFrontEnd>(); }

}  // namespace acprof::cli
