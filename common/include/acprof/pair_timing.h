// How a rewrite's extra time is measured: pairs of training steps (the
// original's, the rewritten model's) alternated in one process, and the rule
// for how many pairs to time and whether their median is a measurement to
// state. Torch-free, so that both rewrites follow one rule: the TorchScript
// one (rewriter/src/step_timing.cpp, timeRewrite) and the eager one
// (python/acprof/eager, through the engine module).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "acprof/command_budget.h"

namespace acprof {

constexpr int kDefaultTimedRounds = 2;
constexpr int kMostTimedRounds = 50;
constexpr double kLeastTimedSeconds = kLeastRoundSeconds;
constexpr double kMostTimedSeconds = 10.0;
constexpr double kTimedStandardError = 0.02;
// Why the pairs stopped, so that a reader of the result can tell a precise
// median from one the time or pair limit cut short, without redoing the rule.
enum class TimingStop {
  Precise,    // the median share's standard error is within kTimedStandardError
  TimeLimit,  // the pairs' steps have taken kMostTimedSeconds
  StepBudget,  // one more pair would take the rewrite past kRewriteStepBudget of the original's steps
  PairLimit,  // kMostTimedRounds pairs, or the pairs asked for where more
};
// Note: [an inconclusive extra time]
// Whether the pairs' median extra time is a measurement to state: conclusive
// where its standard error is known and within kTimedStandardError, however
// the pairs ended; inconclusive where a limit (the step budget, the 10 s, the
// pair limit) ended them first. Two pairs that disagree by a third of the step
// (the demo's "extra +50.5% ... standard error 16.8%", issue 61) say that the
// machine was busy, not what the rewrite costs, so an inconclusive extra time
// is not printed as a number: the time line and report.html say
// "inconclusive", and the outcome's time carries the verdict as a field.
enum class TimingVerdict { Conclusive, Inconclusive };
TimingVerdict timingVerdict(const std::optional<double>& extra_share_error);
// The pairs that would likely bring a standard error of `extra_share_error`
// over `pairs` within kTimedStandardError (it falls as 1 / sqrt(pairs)), at
// least one more: what an inconclusive time line suggests for --time-rounds,
// where it is no more than kMostTimedRounds.
int pairsForPreciseTiming(const std::optional<double>& extra_share_error, int pairs);

// The standard error of the median of `values`, from their interquartile
// range (1.2533 sigma / sqrt(n), sigma = IQR / 1.349, as for normal noise):
// robust to the odd step a busy machine stretches. With 3, the interpolated
// quartiles make the IQR half their range; with 2, the mean's standard error
// (half their difference); none for one value.
std::optional<double> medianStandardError(std::vector<double> values);

// Which limit ends the pairs, or none while more are wanted: after `min_rounds`
// pairs, more while the pairs have taken under kLeastTimedSeconds (steps of a
// few milliseconds, whose few-pair medians swing with the odd slow step, at a
// cost of half a second), or while the median share's standard error is over
// kTimedStandardError of the step (or too few pairs to say) and they have taken
// under kMostTimedSeconds: one step to the next varied by ±15 % on a shared
// 2-core machine, so five pairs left the median uncertain by about 10 % of the
// step, while on a quiet one two pairs agree within 4 % and the rewrite stops
// there (issue 36: a rewrite in at most ten steps). And, past
// kLeastTimedSeconds, no more once `another_pair_fits` is false: the
// command's step budget (timeRewrite) outranks the pairs' precision, whose
// standard error the result then states.
std::optional<TimingStop> whyTimingStops(const std::vector<double>& extra_shares, double timed_seconds,
                                         int min_rounds, bool another_pair_fits = true);

// What the rewrite runs after its pairs, in the rewritten model's steps: the
// re-profile's one instrumented iteration (1.16 of the rewritten step on
// gpt_cost, docs/command-cost.md); deriving and writing come on top.
constexpr double kReprofileSteps = 1.2;

// What the pairs measured, as both rewrites report it.
struct StepTimes {
  double original_us = 0;  // median
  // The median over the pairs of (rewritten - original) / original: a pair's
  // two steps share the machine's state of the moment, which the medians of
  // each model's steps taken apart do not.
  double extra_share = 0;
  std::optional<double> extra_share_error;  // medianStandardError of the pairs' shares
  int rounds = 0;
  // The timed steps' wall time added up: what kMostTimedSeconds limits. Under
  // load it is well over rounds times the medians, which skip the slow steps.
  double timed_seconds = 0;
  TimingStop stopped_by = TimingStop::PairLimit;
  TimingVerdict verdict = TimingVerdict::Inconclusive;  // timingVerdict(extra_share_error)
};
// The pairs' result: the original's median step, the median of the pairs'
// shares (rewritten - original) / original and its standard error, and why
// they stopped; empty (0 pairs) for none.
StepTimes stepTimesOf(const std::vector<double>& original_us, const std::vector<double>& rewritten_us,
                      double timed_seconds, TimingStop stopped_by);
// The outcome's `time` (docs/manual.md, "The outcome as data"), and back.
nlohmann::json stepTimesToJson(const StepTimes& times);
StepTimes stepTimesFromJson(const nlohmann::json& time);

// Whether one more pair keeps a rewrite within kRewriteStepBudget of the
// original's steps: the command's `spent_seconds` so far, one pair (the
// medians `original_seconds` and `rewritten_seconds` of the pairs so far), then
// the re-profile (kReprofileSteps of the rewritten step) and the files.
bool anotherPairFits(double spent_seconds, double original_seconds, double rewritten_seconds);

// The outcome's words for why the timed pairs stopped (docs/manual.md, "The
// outcome as data"): precise, time_limit, step_budget, pair_limit.
const char* timingStopName(TimingStop stop);
// The stop of that name; Error (bad input) for another.
TimingStop timingStopFromName(const std::string& name);

}  // namespace acprof
