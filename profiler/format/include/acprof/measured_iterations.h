// How many measured iterations a profile takes: step times are medians over
// them, and a quiet machine needs fewer than a busy one. Torch-free, so that
// the rule is tested without running a model, and so that the eager recorder
// takes it from the engine (python/engine) rather than restating it.
#pragma once

#include <optional>
#include <vector>

namespace acprof {

// The fewest measured iterations that can show their times agree.
constexpr int kFewestMeasuredIterations = 2;
// Iterations agree when the wall times of a majority of them lie within this
// share of the median of all: on a quiet machine consecutive iterations differ
// by about 1 %; on the shared 2-core reference machine by 5-10 %, where per-op
// times from three iterations moved the predicted extra time by several points
// of the step. A majority, not all: step times are per-step medians over the
// iterations, which one iteration slowed by the machine does not move, so one
// such iteration costs one more, not all up to --iters.
constexpr double kAgreeingIterationSpread = 0.02;

// Where the profile's cost stands when one more iteration is considered
// (command_budget.h): the command's wall time so far, process start included;
// one plain training step (the iterations' median less what the probes add);
// and what the command still runs after its last iteration.
struct ProfileCost {
  double spent_seconds = 0;
  double step_seconds = 0;
  double after_seconds = 0;
};

// Whether to measure one more iteration after those timed in `iteration_us`:
// yes below min(kFewestMeasuredIterations, most_iterations), no at
// `most_iterations` (--iters), and in between until more than half of them
// lie within a spread (largest minus smallest) of kAgreeingIterationSpread of
// the median of all, and, where `cost` is given, only while one more of them
// keeps the profile within kProfileStepBudget steps or the iterations so far
// have taken under kLeastRoundSeconds.
bool moreIterationsWanted(const std::vector<double>& iteration_us, int most_iterations,
                          const std::optional<ProfileCost>& cost = std::nullopt);

// Each step's time as the profile states it: the median over the measured
// iterations of that step's time (`iterations_step_us[i][s]`: step s of
// iteration i), taking only the iterations that ran as many steps as the first,
// which is the one the profile's record is; one iteration alone gives its own.
// Both recorders' rule: the LibTorch one and the eager one, whose stream
// carries the later iterations' step times (event_stream_format.h).
std::vector<double> stepTimeMedians(const std::vector<std::vector<double>>& iterations_step_us);

}  // namespace acprof
