// The subcommands of the acprof tool, one file each. Each registers itself on
// the app; its callback parses nothing more, calls the libraries and prints.
// Errors are thrown as exceptions carrying one line; main() prints them and
// decides the exit code.
#pragma once

#include <CLI/CLI.hpp>

namespace acprof::cli {

void addProfileCommand(CLI::App& app);
void addPlanCommand(CLI::App& app);
void addRewriteCommand(CLI::App& app);
void addViewCommand(CLI::App& app);

// The command line as typed, recorded in profiles and plans.
const std::string& commandLine();

}  // namespace acprof::cli
