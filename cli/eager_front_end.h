// The eager front end (python/acprof/eager) run from the acprof binary: `acprof
// profile --module` and `acprof rewrite --module` start a Python interpreter on
// acprof.eager's command (command_line.py) and turn what it reports into the
// binary's own error or result. The interpreter is $ACPROF_PYTHON where set (a
// path, or a name looked up on PATH), else `python3` on PATH; it must import
// torch and the acprof package (pip install ./python, or PYTHONPATH).
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "acprof/error.h"

namespace acprof::cli {

// What the eager command reported: its result (null where it found none) and
// its error, if it failed: an acprof::Error of error_kind, or an
// UnreproducibleStep where the front end reported the difference that made it
// refuse the module (thrown as what it is: std::rethrow_exception).
struct EagerOutcome {
  nlohmann::json result;
  std::optional<ErrorKind> error_kind;
  std::exception_ptr error;
};

// Runs `python -m acprof.eager <arguments>` (the command prints its own lines)
// and returns what it reported. Throws only where it reported nothing (the
// interpreter cannot be started: PythonImport; no result file: Internal).
EagerOutcome runEagerCommandOutcome(const std::vector<std::string>& arguments);

// The same, as a command's own outcome: sets the outcome's result and throws
// acprof::Error of the kind it reported (PythonImport where the interpreter,
// torch, the acprof package or the factory cannot be imported, with the fix).
nlohmann::json runEagerCommand(const std::vector<std::string>& arguments);

// A file in the temporary directory for the front end to write, removed when
// this goes out of scope.
struct TemporaryFile {
  std::string path;
  explicit TemporaryFile(const std::string& purpose);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
};

// meta.model_path of a profile the eager command recorded from a factory starts with this.
inline constexpr const char* kEagerModelPrefix = "eager:";

}  // namespace acprof::cli
