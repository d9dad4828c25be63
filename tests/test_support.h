// Helpers shared by the end-to-end tests: run the built acprof binary, make a
// scratch directory, locate the exported test models.
#pragma once

#include <string>
#include <vector>

namespace acprof::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `command` through /bin/sh in `working_dir` (empty: current directory).
CommandResult runCommand(const std::string& command, const std::string& working_dir = "");

// Runs the acprof binary under test with the given arguments (shell-quoted by the caller).
CommandResult runAcprof(const std::string& arguments, const std::string& working_dir = "");

// A fresh empty directory under the system temp dir, removed when the test
// process exits (kept where a test failed).
std::string makeScratchDir(const std::string& tag);

// Path of an exported test model (python3 models export-all --set test), e.g. "mlp_traced.pt".
std::string testModel(const std::string& file_name);

// Number of lines in a text (a trailing newline does not start a new line).
int lineCount(const std::string& text);

}  // namespace acprof::testing
