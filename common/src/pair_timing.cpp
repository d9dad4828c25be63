#include "acprof/pair_timing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "acprof/error.h"
#include "acprof/statistics.h"

namespace acprof {

std::optional<double> medianStandardError(std::vector<double> values) {
  const size_t n = values.size();
  if (n < 2) return std::nullopt;
  // Two values have no quartiles; their median is their mean, whose standard
  // error is the sample deviation |a - b| / sqrt(2) over sqrt(2).
  if (n == 2) return std::abs(values[0] - values[1]) / 2;
  std::sort(values.begin(), values.end());
  // Quartiles by linear interpolation between order statistics.
  const auto quantile = [&](double q) {
    const double position = q * static_cast<double>(n - 1);
    const size_t below = static_cast<size_t>(position);
    const size_t above = std::min(below + 1, n - 1);
    return values[below] + (position - static_cast<double>(below)) * (values[above] - values[below]);
  };
  const double sigma = (quantile(0.75) - quantile(0.25)) / 1.349;
  return 1.2533 * sigma / std::sqrt(static_cast<double>(n));
}

std::optional<TimingStop> whyTimingStops(const std::vector<double>& extra_shares, double timed_seconds,
                                         int min_rounds, bool another_pair_fits) {
  const int rounds = static_cast<int>(extra_shares.size());
  if (rounds < min_rounds) return std::nullopt;
  if (rounds >= kMostTimedRounds) return TimingStop::PairLimit;
  if (timed_seconds < kLeastTimedSeconds) return std::nullopt;
  // Precise before the time limit: a median that is sure enough is so however long it took.
  const std::optional<double> error = medianStandardError(extra_shares);
  if (error && *error <= kTimedStandardError) return TimingStop::Precise;
  if (timed_seconds >= kMostTimedSeconds) return TimingStop::TimeLimit;
  if (!another_pair_fits) return TimingStop::StepBudget;
  return std::nullopt;
}

TimingVerdict timingVerdict(const std::optional<double>& extra_share_error) {
  return extra_share_error && *extra_share_error <= kTimedStandardError ? TimingVerdict::Conclusive
                                                                        : TimingVerdict::Inconclusive;
}

int pairsForPreciseTiming(const std::optional<double>& extra_share_error, int pairs) {
  // Too few pairs for a standard error: two have one.
  if (!extra_share_error) return std::max(pairs + 1, 2);
  const double ratio = *extra_share_error / kTimedStandardError;
  const double wanted = std::ceil(static_cast<double>(pairs) * ratio * ratio);
  return std::max(pairs + 1, static_cast<int>(std::min(wanted, 1e6)));
}

bool anotherPairFits(double spent_seconds, double original_seconds, double rewritten_seconds) {
  const double after_seconds = kReprofileSteps * rewritten_seconds + kDerivingAndWritingSeconds;
  return spent_seconds + original_seconds + rewritten_seconds + after_seconds <= kRewriteStepBudget * original_seconds;
}

const char* timingStopName(TimingStop stop) {
  switch (stop) {
    case TimingStop::Precise: return "precise";
    case TimingStop::TimeLimit: return "time_limit";
    case TimingStop::StepBudget: return "step_budget";
    case TimingStop::PairLimit: return "pair_limit";
  }
  throw Error(ErrorKind::Internal, fmt::format("timingStopName: no name for TimingStop {}", static_cast<int>(stop)));
}

TimingStop timingStopFromName(const std::string& name) {
  for (TimingStop stop : {TimingStop::Precise, TimingStop::TimeLimit, TimingStop::StepBudget, TimingStop::PairLimit})
    if (name == timingStopName(stop)) return stop;
  throw Error(ErrorKind::BadInput, fmt::format("'{}' is not a reason timed pairs stop (precise, time_limit, "
                                               "step_budget, pair_limit)", name));
}

StepTimes stepTimesOf(const std::vector<double>& original_us, const std::vector<double>& rewritten_us,
                      double timed_seconds, TimingStop stopped_by) {
  if (original_us.empty() || original_us.size() != rewritten_us.size()) return StepTimes{};
  std::vector<double> extra_shares;
  for (size_t i = 0; i < original_us.size(); ++i)
    extra_shares.push_back((rewritten_us[i] - original_us[i]) / original_us[i]);
  const std::optional<double> error = medianStandardError(extra_shares);
  return StepTimes{median(original_us), median(extra_shares), error, static_cast<int>(original_us.size()),
                   timed_seconds, stopped_by, timingVerdict(error)};
}

nlohmann::json stepTimesToJson(const StepTimes& times) {
  return {{"before_us", times.original_us},
          {"extra_share", times.extra_share},
          {"extra_share_error", times.extra_share_error ? nlohmann::json(*times.extra_share_error) : nlohmann::json()},
          {"pairs", times.rounds},
          {"timed_seconds", times.timed_seconds},
          {"stopped_by", timingStopName(times.stopped_by)},
          {"verdict", times.verdict == TimingVerdict::Conclusive ? "conclusive" : "inconclusive"}};
}

StepTimes stepTimesFromJson(const nlohmann::json& time) {
  StepTimes times;
  times.original_us = time.at("before_us").get<double>();
  times.extra_share = time.at("extra_share").get<double>();
  if (!time.at("extra_share_error").is_null()) times.extra_share_error = time.at("extra_share_error").get<double>();
  times.rounds = time.at("pairs").get<int>();
  times.timed_seconds = time.at("timed_seconds").get<double>();
  times.stopped_by = timingStopFromName(time.at("stopped_by").get<std::string>());
  times.verdict = timingVerdict(times.extra_share_error);
  return times;
}

}  // namespace acprof
