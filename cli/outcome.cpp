#include "outcome.h"

#include <iostream>
#include <utility>

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

namespace {

constexpr std::pair<ErrorKind, const char*> kErrorKindNames[] = {
    {ErrorKind::Usage, "usage"},
    {ErrorKind::BadInput, "bad_input"},
    {ErrorKind::InfeasibleBudget, "infeasible_budget"},
    {ErrorKind::VerificationFailed, "verification_failed"},
    {ErrorKind::BudgetExceeded, "budget_exceeded"},
    {ErrorKind::ModelFails, "model_fails"},
    {ErrorKind::PythonImport, "python_import"},
    {ErrorKind::Internal, "internal"},
};

}  // namespace

const char* errorKindName(ErrorKind kind) {
  for (const auto& [named, name] : kErrorKindNames)
    if (named == kind) return name;
  return "internal";
}

ErrorKind errorKindNamed(const std::string& name) {
  for (const auto& [kind, named] : kErrorKindNames)
    if (name == named) return kind;
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
