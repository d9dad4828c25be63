// runApp (cli/run_app.h): every outcome of a command becomes its exit code and,
// with --outcome, the same facts as JSON. Exit 70 stays reserved for acprof's
// own bugs: an exception no library turned into a user's error, or an Error of
// kind Internal that a check of acprof's own raised.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "acprof/files.h"
#include "acprof/error.h"
#include "acprof/unreproducible_step.h"
#include "outcome.h"
#include "run_app.h"

namespace acprof::cli {
namespace {

namespace fs = std::filesystem;

// Runs `acprof <args>` with one subcommand, "work", whose callback is `work`.
int runWork(const std::function<void()>& work, std::vector<std::string> args) {
  CLI::App app{"test"};
  app.require_subcommand(1);
  app.add_subcommand("work", "")->callback(work);
  args.insert(args.begin(), "acprof");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return runApp(app, static_cast<int>(argv.size()), argv.data(),
                [](const std::exception& e) { return std::string(e.what()); });
}

nlohmann::json outcomeOf(const std::function<void()>& work, int& exit_code) {
  const fs::path path = fs::temp_directory_path() / ("acprof-outcome-" + std::to_string(::getpid()) + ".json");
  fs::remove(path);
  exit_code = runWork(work, {"work", "--outcome", path.string()});
  const nlohmann::json outcome = nlohmann::json::parse(readWholeFile(path.string()));
  fs::remove(path);
  return outcome;
}

TEST(RunApp, AnExceptionNoLibraryTurnedIntoAnErrorIsAnInternalErrorAndExits70) {
  int code = 0;
  const nlohmann::json outcome = outcomeOf([] { throw std::out_of_range("vector::at"); }, code);
  EXPECT_EQ(code, 70);
  EXPECT_EQ(outcome.at("exit_code"), 70);
  EXPECT_EQ(outcome.at("error").at("kind"), "internal");
  EXPECT_NE(outcome.at("error").at("message").get<std::string>().find("an internal error of acprof"),
            std::string::npos);
}

TEST(RunApp, AnInternalErrorOfAcprofsOwnChecksExits70) {
  int code = 0;
  const nlohmann::json outcome =
      outcomeOf([] { throw Error(ErrorKind::Internal, "the checkpointed graph is invalid; this is a bug"); }, code);
  EXPECT_EQ(code, 70);
  EXPECT_EQ(outcome.at("error").at("kind"), "internal");
}

TEST(RunApp, TheModelsOwnFailureIsNotAnInternalError) {
  int code = 0;
  const nlohmann::json outcome =
      outcomeOf([] { throw Error(ErrorKind::ModelFails, "the model's own training step fails"); }, code);
  EXPECT_EQ(code, 6);
  EXPECT_EQ(outcome.at("error").at("kind"), "model_fails");
}

// A step that does not agree with itself is the model's fault (exit 6), and
// the outcome carries the tolerance that accepts it, rounded up in three
// significant digits, as its line names it: rounded to nearest, 2.9802e-08
// would print 2.98e-08 and refuse the very difference it was asked for.
TEST(RunApp, AnUnreproducibleStepCarriesTheToleranceThatAcceptsIt) {
  int code = 0;
  const double difference = 2.9802322387695312e-08;
  const nlohmann::json outcome =
      outcomeOf([&] { throw UnreproducibleStep("two steps of the original differ", difference); }, code);
  EXPECT_EQ(code, 6);
  EXPECT_EQ(outcome.at("error").at("kind"), "model_fails");
  const double accepting = outcome.at("accepting_tolerance").get<double>();
  EXPECT_GE(accepting, difference);
  EXPECT_DOUBLE_EQ(accepting, 2.99e-08);
  EXPECT_NE(outcome.at("error").at("message").get<std::string>().find("pass --tolerance 2.99e-08 (or larger)"),
            std::string::npos)
      << outcome.at("error").at("message");
  EXPECT_DOUBLE_EQ(toleranceAccepting(0.00123), 0.00123);  // exact in three digits: not raised
  EXPECT_EQ(toleranceAccepting(0), 0);
}

// The outcome names each error kind once, and the eager front end's reports are
// read back by the same names: every kind goes there and back. The names and
// exit codes come from python/acprof/contract.json by ErrorKind's order, so
// each kind's are pinned here as docs/manual.md ("Exit codes") gives them: a
// contract whose entries were reordered fails.
TEST(RunApp, EveryErrorKindsNameReadsBackAsThatKind) {
  const std::tuple<ErrorKind, std::string, int> kinds[] = {
      {ErrorKind::Usage, "usage", 2},
      {ErrorKind::BadInput, "bad_input", 1},
      {ErrorKind::InfeasibleBudget, "infeasible_budget", 3},
      {ErrorKind::VerificationFailed, "verification_failed", 4},
      {ErrorKind::BudgetExceeded, "budget_exceeded", 5},
      {ErrorKind::ModelFails, "model_fails", 6},
      {ErrorKind::PythonImport, "python_import", 7},
      {ErrorKind::Internal, "internal", 70}};
  for (const auto& [kind, name, exit_code] : kinds) {
    EXPECT_EQ(cli::errorKindNamed(cli::errorKindName(kind)), kind) << cli::errorKindName(kind);
    EXPECT_EQ(cli::errorKindName(kind), name);
    EXPECT_EQ(cli::exitCodeOf(kind), exit_code) << name;
  }
  EXPECT_EQ(cli::errorKindNamed("no such kind"), ErrorKind::Internal);
}

TEST(RunApp, SuccessWritesAnOutcomeWithNoError) {
  int code = -1;
  const nlohmann::json outcome = outcomeOf([] {}, code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(outcome.at("command"), "work");
  EXPECT_TRUE(outcome.at("error").is_null());
}

}  // namespace
}  // namespace acprof::cli
