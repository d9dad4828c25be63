// A training step that does not agree with itself, so no rewrite can be
// verified bit for bit against it: two steps of a TorchScript original on the
// same inputs and seed, or an eager module against the graph torch.export
// captured from it with nothing checkpointed. The fault is the model's or
// PyTorch's, never acprof's; the fix is a tolerance that accepts the
// difference, which the error carries as data (the outcome's
// "accepting_tolerance") as well as in its one line.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "acprof/error.h"

namespace acprof {

// The smallest tolerance with three significant digits that accepts
// `difference`: rounded up, as rounding to nearest can fall below the
// difference and refuse it.
inline double toleranceAccepting(double difference) {
  if (!(difference > 0) || std::isinf(difference)) return difference;
  const double scale = std::pow(10.0, std::floor(std::log10(difference)) - 2);
  return std::ceil(difference / scale) * scale;
}

class UnreproducibleStep : public Error {
 public:
  // `problem` says which steps differ and why; the advice is added here.
  UnreproducibleStep(const std::string& problem, double difference)
      : Error(ErrorKind::ModelFails, problem + advice(toleranceAccepting(difference))),
        accepting_tolerance(toleranceAccepting(difference)) {}

  double accepting_tolerance;

 private:
  static std::string advice(double tolerance) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", tolerance);
    return std::string(": pass --tolerance ") + text +
           " (or larger) to accept differences that size, or --no-verify";
  }
};

}  // namespace acprof
