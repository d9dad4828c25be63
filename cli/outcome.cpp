#include "outcome.h"

#include <iostream>

#include <nlohmann/json.hpp>

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
      if (search.searched)
        outcome["search"] = {{"proven_optimal", search.proven_optimal},
                             {"decisions_evaluated", search.decisions_evaluated},
                             {"seconds", search.seconds},
                             {"peak_lower_bound_bytes", search.peak_lower_bound_bytes}};
    }
  }
  try {
    writeFileAtomically(path, outcome.dump(2) + "\n");
  } catch (const std::exception& e) {
    std::cerr << "acprof: error: cannot write the outcome: " << e.what() << std::endl;
  }
}

}  // namespace acprof::cli
