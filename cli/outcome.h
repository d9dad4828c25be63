// The outcome of one acprof command as data (--outcome FILE): its exit code,
// the error's kind and line, and what the error knows beyond the line (for an
// infeasible budget: the floor's composition and, from a searching solver, how
// its search ended; for a step that does not agree with itself: the tolerance
// that accepts it), so that scripts read facts instead of parsing stderr.
#pragma once

#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "acprof/error.h"

namespace acprof {
struct SearchReport;  // acprof/solver.h
}  // namespace acprof

namespace acprof::cli {

// What a command found, for its outcome's "result": the plan's peaks and
// segments, the rewrite's verification, measured peak and time. Set by the
// command before it returns or throws a result-bearing error (a measured peak
// over the budget); one process runs one command.
void setOutcomeResult(nlohmann::json result);

// An error kind's name in the outcome ("infeasible_budget"), and back (a name
// the eager front end reported; an unknown one is Internal); and its exit code.
// Both from python/acprof/contract.json, which the eager front end reads too.
const char* errorKindName(ErrorKind kind);
ErrorKind errorKindNamed(const std::string& name);
int exitCodeOf(ErrorKind kind);

// How a searching solver's search ended, as the outcome carries it (a plan's
// result and an infeasible budget's alike).
nlohmann::json searchJson(const SearchReport& search);

// `error` is null on success. `kind` is the error's kind's name ("infeasible_budget",
// "internal" for acprof's own bugs). Written atomically; a failure to write it
// is reported on stderr and does not change the exit code.
void writeOutcome(const std::string& path, const std::string& command, int exit_code, const std::string& kind,
                  const std::string& message, const std::exception* error);

}  // namespace acprof::cli
