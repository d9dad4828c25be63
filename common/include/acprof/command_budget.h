// What `acprof profile` and `acprof rewrite` may cost, in training steps of
// the model they run on (issue 36), and the clock they are held to. Their
// extra rounds (measured iterations, timed pairs) are taken while one more
// fits the command's budget; the fewest rounds their rules need are always
// taken. Torch-free.
#pragma once

namespace acprof {

// A profile's cost, process start included, in the model's training steps.
constexpr double kProfileStepBudget = 5.0;
// A rewrite's cost (surgery, verification, timed pairs, re-profile, report),
// in the original's training steps.
constexpr double kRewriteStepBudget = 10.0;
// Rounds that together have taken less than this are taken whatever the
// budget: on steps of milliseconds the process start alone is over any budget
// in steps, and a median of a few such steps swings with the odd slow one.
constexpr double kLeastRoundSeconds = 0.5;
// What a command still spends after its last round, deriving the profile from
// its events and writing the files: 0.15-0.35 s on the reference models of
// docs/command-cost.md, whatever the step.
constexpr double kDerivingAndWritingSeconds = 0.35;

// Wall seconds since this process started, the dynamic loading of LibTorch
// before main included (an exec, as acprof's to acprof-torch, keeps the
// start): from /proc/self/stat, in clock ticks (10 ms). 0 where that cannot
// be read, which leaves a command's budget to its own rounds.
double processAgeSeconds();

}  // namespace acprof
