// The original and the rewritten model loaded side by side to train on the
// profile's training step, each with its own optimizer. Verification steps
// both once; the paired timing goes on from there, so the verified step is
// also the timing's warm-up and a rewrite loads and steps each model once
// less (issue 36: a rewrite costs a few training steps).
#pragma once

#include <memory>
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

  std::string original_path;  // loaded again only where verification must check the original against itself
  StepConfig config;
  std::vector<at::Tensor> inputs;
  at::Tensor target;
  torch::jit::Module original;
  torch::jit::Module rewritten;
  std::unique_ptr<Optimizer> original_optimizer;  // null once released
  std::unique_ptr<Optimizer> rewritten_optimizer;
  // Training steps (forward, loss, backward) each model has taken. The timing
  // warms up a pair that has taken none; after the verified step it only
  // applies the optimizer to that step's gradients, untimed.
  int steps_taken = 0;
  // Whether the optimizers have stepped, so that their state (momentum, Adam's
  // moments) exists, as after a profile's warm-up iteration.
  bool optimizers_stepped = false;

  // Free a model, its gradients and its optimizer's state, so that what runs
  // next (the re-profile of the rewritten model) has the memory the user's own
  // training would.
  void releaseOriginal();
  void releaseRewritten();
};

}  // namespace acprof
