// The original and the rewritten model loaded side by side to train on the
// profile's training step, each with its own optimizer. Verification steps
// both once; the paired timing goes on from there, so the verified step is
// also the timing's warm-up and a rewrite loads and steps each model once
// less (issue 36: a rewrite costs a few training steps).
#pragma once

#include <string>
#include <vector>

#include <torch/script.h>

#include "acprof/optimizer.h"
#include "acprof/training_step.h"

namespace acprof {

struct TrainingPair {
  // Loads both files on config.run.device and makes the step's inputs
  // (makeInputs with config.run.seed) and target once, for both.
  TrainingPair(const std::string& original_path, const std::string& rewritten_path, const StepConfig& config);
  TrainingPair(const TrainingPair&) = delete;
  TrainingPair& operator=(const TrainingPair&) = delete;

  std::string original_path;
  std::string rewritten_path;
  StepConfig config;
  std::vector<at::Tensor> inputs;
  at::Tensor target;
  torch::jit::Module original;
  torch::jit::Module rewritten;
  Optimizer original_optimizer;
  Optimizer rewritten_optimizer;
  // Training steps (forward, loss, backward) each model has taken. The timing
  // warms up a pair that has taken none; after the verified step it only
  // applies the optimizer to that step's gradients, untimed.
  int steps_taken = 0;
};

}  // namespace acprof
