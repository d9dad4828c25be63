#include "run_app.h"

#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "acprof/error.h"
#include "commands.h"
#include "outcome.h"

namespace acprof::cli {
namespace {

std::string g_command_line;

// Exit codes (docs/manual.md, "Exit codes"): 0 success, and one per error
// kind, as python/acprof/contract.json states them for the binary and the
// eager front end alike (70 for an internal error: sysexits' EX_SOFTWARE).

// One line: some LibTorch messages start with a newline or span several.
std::string oneLine(std::string message) {
  const auto start = message.find_first_not_of(" \n\t");
  message = start == std::string::npos ? std::string("unknown error") : message.substr(start);
  if (const auto newline = message.find('\n'); newline != std::string::npos) message.resize(newline);
  return message;
}

// Prints the line and returns it, for the outcome.
std::string printError(const std::string& message) {
  // For bug reports: LibTorch's whole message, backtrace included.
  if (std::getenv("ACPROF_FULL_ERRORS")) std::cerr << message << std::endl;
  const std::string line = oneLine(message);
  std::cerr << "acprof: error: " << line << std::endl;
  return line;
}

// The subcommand the user named, "" before one is parsed.
std::string commandName(CLI::App& app) {
  const std::vector<CLI::App*> used = app.get_subcommands();
  return used.empty() ? std::string() : used.front()->get_name();
}

}  // namespace

const std::string& commandLine() { return g_command_line; }

int runApp(CLI::App& app, int argc, char** argv, const InternalErrorText& internal_error_text) {
  // Each line as soon as it is written, also into a pipe (`acprof rewrite | tee log`),
  // where the C library would otherwise hold it until the command ends.
  std::cout << std::unitbuf;
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) g_command_line += ' ';
    g_command_line += i == 0 ? std::string("acprof") : std::string(argv[i]);
  }
  // Answered as soon as it is parsed: the app otherwise asks for a subcommand first.
  app.add_flag_callback("--version", [] { throw CLI::CallForVersion(ACPROF_VERSION_TEXT, 0); },
                        "Print acprof's version, the LibTorch it runs on and whether CUDA is compiled in")
      ->trigger_on_parse();
  // --outcome on every command this process parses itself (the front's
  // profile and rewrite hand their arguments on unparsed, --outcome included).
  std::string outcome_path;
  for (CLI::App* command : app.get_subcommands([](CLI::App* c) { return !c->get_prefix_command(); }))
    command->add_option("--outcome", outcome_path,
                        "also write the outcome as JSON: exit code, error kind and line, the floor's "
                        "composition when a budget cannot be met");
  const auto finish = [&](int exit_code, const std::string& kind, const std::string& line, const std::exception* e) {
    if (!outcome_path.empty()) writeOutcome(outcome_path, commandName(app), exit_code, kind, line, e);
    return exit_code;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help and --version print and succeed
    // One line like every other error, naming where the options are listed.
    const std::string command = commandName(app);
    const std::string line = printError(fmt::format("{}; see 'acprof{} --help'", e.what(),
                                                    command.empty() ? "" : " " + command));
    return finish(exitCodeOf(ErrorKind::Usage), errorKindName(ErrorKind::Usage), line, &e);
  } catch (const Error& e) {
    // Libraries throw one-line errors that already name the problem and the
    // fix; the few lines some add after it (Error::detail) follow it as given.
    const std::string line = printError(e.what());
    std::cerr << e.detail() << std::flush;
    return finish(exitCodeOf(e.kind()), errorKindName(e.kind()), line, &e);
  } catch (const std::exception& e) {
    // Anything else escaped a library that should have said what the user can
    // do: that is acprof's bug, and the message is all there is to report.
    if (std::getenv("ACPROF_FULL_ERRORS")) std::cerr << e.what() << std::endl;
    const std::string line =
        printError(internal_error_text(e) +
                   " (an internal error of acprof; please report it with the command line, and with "
                   "ACPROF_FULL_ERRORS=1 set for the whole message)");
    return finish(exitCodeOf(ErrorKind::Internal), errorKindName(ErrorKind::Internal), line, &e);
  }
  return finish(0, "", "", nullptr);
}

}  // namespace acprof::cli
