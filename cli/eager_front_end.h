// The eager front end (python/acprof/eager) run from the acprof binary: `acprof
// profile --module` and `acprof rewrite --module` start a Python interpreter on
// acprof.eager's command (command_line.py) and turn what it reports into the
// binary's own error or result. The interpreter is $ACPROF_PYTHON where set (a
// path, or a name looked up on PATH), else `python3` on PATH; it must import
// torch and the acprof package (pip install ./python, or PYTHONPATH).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace acprof::cli {

// Runs `python -m acprof.eager <arguments>` (the command prints its own lines)
// and returns its result. Throws acprof::Error of the kind it reported: PythonImport
// where the interpreter, torch, the acprof package or the factory cannot be
// imported, with the fix; a result-bearing error (a peak over the budget) sets
// the outcome's result first.
nlohmann::json runEagerCommand(const std::vector<std::string>& arguments);

// meta.model_path of a profile the eager command recorded from a factory starts with this.
inline constexpr const char* kEagerModelPrefix = "eager:";

}  // namespace acprof::cli
