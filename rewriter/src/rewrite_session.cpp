#include "acprof/rewrite_session.h"

#include <algorithm>

#include <fmt/format.h>

#include "acprof/error.h"
#include "acprof/files.h"
#include "acprof/viz.h"

namespace acprof {

namespace fs = std::filesystem;

ReportFiles::ReportFiles(const fs::path& directory, const std::vector<std::string>& inputs)
    : dir(directory), before((directory / "profile.before.json").string()),
      after((directory / "profile.after.json").string()), html((directory / "report.html").string()),
      make_dir(!fs::exists(directory)) {
  if (make_dir) checkOutputDirectory(dir.string());
  else
    for (const std::string& path : {before, after, html}) checkOutputPath(path, inputs);
}

void ReportFiles::makeDir() const {
  if (make_dir) fs::create_directories(dir);
}

nlohmann::json ReportFiles::outcomeFiles() const {
  return {{"report", absolutePath(html)}, {"profile_before", absolutePath(before)},
          {"profile_after", absolutePath(after)}};
}

namespace {

// The mode of verification in report.html's words.
std::string verificationNote(const std::optional<VerificationResult>& v) {
  if (!v) return "Verification: not verified (--no-verify).";
  if (v->tolerance)
    return fmt::format("Verification: within tolerance {:g} (max diff {:.3g}).", *v->tolerance, v->maxAbsDiff());
  return "Verification: bit for bit, deterministic algorithms.";
}

// The paired time as report.html's headline states it.
MeasuredStepTime measuredStepTime(const StepTimes& times) {
  return MeasuredStepTime{times.original_us, times.extra_share, times.extra_share_error, times.rounds,
                          times.verdict == TimingVerdict::Conclusive};
}

// The rewrite's outcome as data (--outcome): what was verified and how, the
// peaks predicted and measured, the paired time, and the files written.
nlohmann::json outcomeOf(const Plan& plan, const MeasuredRewrite& m, nlohmann::json files) {
  files["model"] = absolutePath(m.output_path);
  nlohmann::json verification = nullptr;
  if (m.verification) {
    const VerificationResult& v = *m.verification;
    verification = {{"mode", v.tolerance ? "tolerance" : "bitwise"},
                    {"tolerance", v.tolerance ? nlohmann::json(*v.tolerance) : nlohmann::json()},
                    {"max_abs_diff", v.maxAbsDiff()},
                    {"gradients_compared", v.gradients_compared},
                    {"buffers_compared", v.buffers_compared}};
  }
  nlohmann::json peak = {{"budget_bytes", plan.budget_bytes}, {"predicted_bytes", plan.predicted_peak_bytes}};
  if (m.before) peak["before_bytes"] = m.before->summary.peak_bytes;
  if (m.after) peak["measured_bytes"] = m.after->summary.peak_bytes;
  // A caching allocator's (CUDA's) reserved peaks, where the profiles have them.
  if (m.before && m.before->summary.reserved_peak_bytes)
    peak["before_reserved_bytes"] = *m.before->summary.reserved_peak_bytes;
  if (m.after && m.after->summary.reserved_peak_bytes)
    peak["measured_reserved_bytes"] = *m.after->summary.reserved_peak_bytes;
  const nlohmann::json time = m.times ? stepTimesToJson(*m.times) : nlohmann::json();
  const double predicted_share =
      plan.baseline_iteration_time_us > 0 ? plan.extra_time_us / plan.baseline_iteration_time_us : 0;
  return {{"segments", m.segment_count}, {"verification", verification}, {"peak", peak},
          {"time", time}, {"predicted_extra_share", predicted_share}, {"files", files}};
}

}  // namespace

RewriteSessionResult runRewriteSession(RewriteFrontEnd& front_end, const Plan& plan, const RewriteRequest& request) {
  RewriteSessionResult result{plan, {}, front_end.prepare(plan, request), nullptr, 0};
  result.measured = front_end.apply(plan, request);
  const MeasuredRewrite& m = result.measured;
  const bool drawn = result.report && m.before && m.after;
  if (drawn) {
    std::optional<MeasuredStepTime> measured_time;
    if (m.times) measured_time = measuredStepTime(*m.times);
    result.report->makeDir();
    writeProfileFile(*m.before, result.report->before);
    writeProfileFile(*m.after, result.report->after);
    writeFileAtomically(result.report->html,
                        renderComparisonHtml(*m.before, *m.after, &plan, verificationNote(m.verification),
                                             measured_time ? &*measured_time : nullptr));
  } else {
    result.report.reset();
  }
  const nlohmann::json files = drawn ? result.report->outcomeFiles() : nlohmann::json::object();
  if (m.outcome.is_null()) {
    result.outcome = outcomeOf(plan, m, files);
  } else {
    result.outcome = m.outcome;
    if (drawn) result.outcome["files"].update(files);
  }
  if (m.after) result.over_budget_bytes = std::max<int64_t>(m.after->summary.peak_bytes - plan.budget_bytes, 0);
  return result;
}

void keepBudgetPromise(const RewriteSessionResult& result) {
  if (result.measured.deferred_error) std::rethrow_exception(result.measured.deferred_error);
  const int64_t over = result.over_budget_bytes;
  if (over <= 0) return;
  const Plan& plan = result.plan;
  const int64_t peak = result.measured.after->summary.peak_bytes;
  throw Error(ErrorKind::BudgetExceeded,
              fmt::format("the rewritten model peaked at {} ({} B), {} over the plan's budget of {} (predicted {}); "
                          "the model and report are written: plan again with --budget {} and report this "
                          "profile and plan, as the prediction missed",
                          formatBytes(peak), peak, formatBytes(over), formatBytes(plan.budget_bytes),
                          formatBytes(plan.predicted_peak_bytes), std::max<int64_t>(plan.budget_bytes - over, 1)));
}

}  // namespace acprof
