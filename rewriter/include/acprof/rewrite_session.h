// The rewrite use case, `acprof rewrite`, as a library: a plan is applied to
// its model by a front end, which verifies the result, times it and measures
// its step; the session then writes the before/after report and states the
// outcome as data, and keeps the budget's promise. The command only parses
// flags and prints (cli/rewrite_command.cpp).
//
// Two front ends: TorchScript (torchScriptRewriteFrontEnd, here: graph
// surgery, verification and the re-profile in this process) and eager (the
// cli's, which runs the Python front end on the module the plan's profile
// came from). Both hand back a MeasuredRewrite; everything after is shared.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "acprof/pair_timing.h"
#include "acprof/plan_format.h"
#include "acprof/profile_format.h"
#include "acprof/rewriter.h"

namespace acprof {

// What `acprof rewrite` was asked to do, its flags parsed.
struct RewriteRequest {
  std::string plan_path;
  std::string model_path;   // TorchScript: empty means the plan's model; eager: must be empty
  std::string output_path;  // TorchScript only; empty: <model>.ckpt.pt beside the model
  std::string report_dir;   // empty: beside the output (TorchScript), beside the plan (eager)
  bool verify = true;
  std::optional<double> tolerance;  // unset: bit for bit under deterministic algorithms
  int time_rounds = 0;              // 0: not timed
  std::string module;               // eager only: the module's factory (empty: the profile's)
  std::function<void(const std::string&)> progress;  // optional, one short line per stage
};

// Where a rewrite's report goes: the profiles before and after and
// report.html in one directory, made only once there is a report to put in
// it. Checked before any work: none of them may be one of the command's inputs.
struct ReportFiles {
  std::filesystem::path dir;
  std::string before, after, html;
  bool make_dir = false;

  ReportFiles(const std::filesystem::path& directory, const std::vector<std::string>& inputs);
  void makeDir() const;
  nlohmann::json outcomeFiles() const;
};

// What a front end measured of the plan applied to its model.
struct MeasuredRewrite {
  // TorchScript: the original and the written model; eager: empty (the plan is what is kept).
  std::string model_path, output_path;
  size_t segment_count = 0;
  std::optional<VerificationResult> verification;  // unset: --no-verify
  std::optional<Profile> before;                   // the plan's profile; unset: it is missing
  std::optional<Profile> after;                    // the checkpointed step as measured
  std::optional<StepTimes> times;                  // unset: not timed
  // The outcome as the front end states it (the eager command's), which the
  // session completes with the report's files; null: the session states it.
  nlohmann::json outcome;
  // Where the profile's intra-op thread count is not this process's: both.
  std::optional<std::pair<int, int>> threads_profile_and_own;
  // An error the front end found after it measured (the eager step over its
  // budget): raised once the report is written.
  std::exception_ptr deferred_error;
};

class RewriteFrontEnd {
 public:
  virtual ~RewriteFrontEnd() = default;
  // Checks what can be checked before any work (the plan against its
  // profile, the output paths) and says where the report goes; unset: no
  // report (the plan's profile is missing).
  virtual std::optional<ReportFiles> prepare(const Plan& plan, const RewriteRequest& request) = 0;
  // Applies the plan, verifies, times and measures. `outcome` stays null
  // where the session is to state the outcome from the measurement.
  virtual MeasuredRewrite apply(const Plan& plan, const RewriteRequest& request) = 0;
};

std::unique_ptr<RewriteFrontEnd> torchScriptRewriteFrontEnd();

// What the session did: the front end's measurement, the report, the outcome.
struct RewriteSessionResult {
  Plan plan;
  MeasuredRewrite measured;
  std::optional<ReportFiles> report;  // unset: no report (the plan's profile is missing)
  nlohmann::json outcome;             // the command's --outcome result
  int64_t over_budget_bytes = 0;      // measured peak above the plan's budget; 0: within it
};

// Runs the front end, writes the report, and states the outcome. Throws what
// the front end throws; a step over its budget is not thrown here but stated
// (over_budget_bytes), so that the caller can show the result first.
RewriteSessionResult runRewriteSession(RewriteFrontEnd& front_end, const Plan& plan, const RewriteRequest& request);

// The budget is what the user must fit in. The rewrite is correct and its
// report shows where the peak is, so the files stay; the error says the
// promise failed, with the budget that the same overshoot would still fit.
// Throws BudgetExceeded (or the front end's deferred error); returns otherwise.
void keepBudgetPromise(const RewriteSessionResult& result);

}  // namespace acprof
