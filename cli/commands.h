// The subcommands of the acprof tool, one file each. Each registers itself on
// the app; its callback parses nothing more, calls the libraries and prints.
// Errors are thrown as exceptions carrying one line; runApp() prints them and
// decides the exit code. profile and rewrite need LibTorch and live in
// acprof-torch (main.cpp); acprof (front_main.cpp) runs plan and view itself.
#pragma once

#include <CLI/CLI.hpp>

namespace acprof::cli {

inline constexpr const char* kToolDescription =
    "acprof: measure a training step, plan activation recomputation under a memory budget, "
    "and rewrite the TorchScript model to fit";
inline constexpr const char* kProfileDescription =
    "Measure one training iteration of a TorchScript model, or of an eager nn.Module (--module)";
inline constexpr const char* kRewriteDescription =
    "Apply plan.json to its model: checkpointed TorchScript model, verification, before/after report; for an eager "
    "module (--module), apply it in eager and verify";

void addProfileCommand(CLI::App& app);
void addPlanCommand(CLI::App& app);
void addRewriteCommand(CLI::App& app);
void addViewCommand(CLI::App& app);

// The command line as typed, recorded in profiles and plans.
const std::string& commandLine();

}  // namespace acprof::cli
