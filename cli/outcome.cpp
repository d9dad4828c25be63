#include "outcome.h"

#include <iostream>
#include <iterator>
#include <utility>

#include <nlohmann/json.hpp>

#include "acprof/contract.h"
#include "acprof/files.h"
#include "acprof/solver.h"
#include "acprof/unreproducible_step.h"

namespace acprof::cli {
namespace {

nlohmann::json& outcomeResult() {
  static nlohmann::json result;  // null until a command sets it
  return result;
}

}  // namespace

void setOutcomeResult(nlohmann::json result) { outcomeResult() = std::move(result); }

namespace {

// The contract lists the kinds in ErrorKind's order, Internal last.
static_assert(std::size(contract::kErrorKinds) == static_cast<size_t>(ErrorKind::Internal) + 1,
              "python/acprof/contract.json lists one error kind per acprof::ErrorKind");

const contract::ErrorKindEntry& entryOf(ErrorKind kind) { return contract::kErrorKinds[static_cast<size_t>(kind)]; }

}  // namespace

const char* errorKindName(ErrorKind kind) { return entryOf(kind).name; }

int exitCodeOf(ErrorKind kind) { return entryOf(kind).exit_code; }

ErrorKind errorKindNamed(const std::string& name) {
  for (size_t i = 0; i < std::size(contract::kErrorKinds); ++i)
    if (name == contract::kErrorKinds[i].name) return static_cast<ErrorKind>(i);
  return ErrorKind::Internal;
}

nlohmann::json searchJson(const SearchReport& search) {
  return {{"proven_optimal", search.proven_optimal},
          {"decisions_evaluated", search.decisions_evaluated},
          {"seconds", search.seconds},
          {"peak_lower_bound_bytes", search.peak_lower_bound_bytes}};
}

void writeOutcome(const std::string& path, const std::string& command, int exit_code, const std::string& kind,
                  const std::string& message, const std::exception* error) {
  nlohmann::json outcome = {{"acprof_outcome_version", 1}, {"command", command}, {"exit_code", exit_code},
                            {"result", outcomeResult()}};
  if (error == nullptr) {
    outcome["error"] = nullptr;
  } else {
    outcome["error"] = {{"kind", kind}, {"message", message}};
    if (const auto* unreproducible = dynamic_cast<const UnreproducibleStep*>(error))
      outcome["accepting_tolerance"] = unreproducible->accepting_tolerance;
    if (const auto* infeasible = dynamic_cast<const InfeasibleBudget*>(error)) {
      outcome["floor"] = infeasible->floor;
      const SearchReport& search = infeasible->search;
      if (search.searched) outcome["search"] = searchJson(search);
    }
  }
  try {
    writeFileAtomically(path, outcome.dump(2) + "\n");
  } catch (const std::exception& e) {
    std::cerr << "acprof: error: cannot write the outcome: " << e.what() << std::endl;
  }
}

}  // namespace acprof::cli
