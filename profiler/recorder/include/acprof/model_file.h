// A TorchScript model file: loading it for training, the input specs its
// export stored beside it, and LibTorch's errors reduced to the line a user reads.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include <torch/script.h>

namespace acprof {

// Loads a TorchScript file onto the device, in train mode. Throws std::runtime_error
// with a one-line message when the file is missing or not TorchScript.
torch::jit::Module loadModel(const std::string& path, const std::string& device);

// The one line of a LibTorch error that says what went wrong: TorchScript
// errors start with a generic line and end with "RuntimeError: <the reason>".
std::string oneLineTorchError(const std::exception& error);

// Reads the input/target specs that models/ export scripts store in the archive
// (archive extra files "acprof_inputs", one spec per line; "acprof_target"; "acprof_loss").
// Missing entries are returned empty.
struct StoredSpecs {
  std::vector<std::string> inputs;
  std::string target;
  std::string loss;
  std::string autocast;  // "acprof_autocast"
};
StoredSpecs readStoredSpecs(const std::string& model_path);

}  // namespace acprof
