#include "run_app.h"

#include <cstdlib>
#include <iostream>

#include "acprof/error.h"
#include "commands.h"

namespace acprof::cli {
namespace {

std::string g_command_line;

// Exit codes (README "Exit codes"): 0 success, 1 bad input, 2 usage,
// 3 infeasible budget, 4 verification failed, 5 measured peak over the budget,
// 6 the model's own training step fails in PyTorch, 70 internal error (sysexits' EX_SOFTWARE).
constexpr int kBadInputExit = 1;
constexpr int kUsageExit = 2;
constexpr int kInfeasibleBudgetExit = 3;
constexpr int kVerificationFailedExit = 4;
constexpr int kBudgetExceededExit = 5;
constexpr int kModelFailsExit = 6;
constexpr int kInternalExit = 70;

int exitCodeOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage: return kUsageExit;
    case ErrorKind::BadInput: return kBadInputExit;
    case ErrorKind::InfeasibleBudget: return kInfeasibleBudgetExit;
    case ErrorKind::VerificationFailed: return kVerificationFailedExit;
    case ErrorKind::BudgetExceeded: return kBudgetExceededExit;
    case ErrorKind::ModelFails: return kModelFailsExit;
  }
  return kInternalExit;
}

// One line: some LibTorch messages start with a newline or span several.
void printError(std::string message) {
  // For bug reports: LibTorch's whole message, backtrace included.
  if (std::getenv("ACPROF_FULL_ERRORS")) std::cerr << message << std::endl;
  const auto start = message.find_first_not_of(" \n\t");
  message = start == std::string::npos ? std::string("unknown error") : message.substr(start);
  if (const auto newline = message.find('\n'); newline != std::string::npos) message.resize(newline);
  std::cerr << "acprof: error: " << message << std::endl;
}

}  // namespace

const std::string& commandLine() { return g_command_line; }

int runApp(CLI::App& app, int argc, char** argv, const InternalErrorText& internal_error_text) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) g_command_line += ' ';
    g_command_line += i == 0 ? std::string("acprof") : std::string(argv[i]);
  }
  // Answered as soon as it is parsed: the app otherwise asks for a subcommand first.
  app.add_flag_callback("--version", [] { throw CLI::CallForVersion(ACPROF_VERSION_TEXT, 0); },
                        "Print acprof's version, the LibTorch it runs on and whether CUDA is compiled in")
      ->trigger_on_parse();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kUsageExit;  // --help is not an error
  } catch (const Error& e) {
    // Libraries throw one-line errors that already name the problem and the fix.
    printError(e.what());
    return exitCodeOf(e.kind());
  } catch (const std::exception& e) {
    // Anything else escaped a library that should have said what the user can
    // do: that is acprof's bug, and the message is all there is to report.
    if (std::getenv("ACPROF_FULL_ERRORS")) std::cerr << e.what() << std::endl;
    printError(internal_error_text(e) +
               " (an internal error of acprof; please report it with the command line, and with "
               "ACPROF_FULL_ERRORS=1 set for the whole message)");
    return kInternalExit;
  }
  return 0;
}

}  // namespace acprof::cli
