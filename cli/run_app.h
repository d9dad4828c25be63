// What both acprof executables do around their subcommands: record the command
// line, parse, and turn an exception into one line on stderr and an exit code.
#pragma once

#include <exception>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace acprof::cli {

// The one-line message of an exception no library turned into an
// acprof::Error (LibTorch's own messages need shortening: model_file.h).
using InternalErrorText = std::function<std::string(const std::exception&)>;

// Parses argv into `app` (its callbacks run the command) and returns the exit
// code of docs/manual.md's "Exit codes".
int runApp(CLI::App& app, int argc, char** argv, const InternalErrorText& internal_error_text);

}  // namespace acprof::cli
