#include <cstdlib>
#include <iostream>
#include <string>

#include "commands.h"

namespace acprof::cli {
namespace {
std::string g_command_line;
}
const std::string& commandLine() { return g_command_line; }
}  // namespace acprof::cli

int main(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (i > 0) acprof::cli::g_command_line += ' ';
    acprof::cli::g_command_line += i == 0 ? std::string("acprof") : std::string(argv[i]);
  }
  CLI::App app{"acprof: measure a training step, plan activation recomputation under a memory budget, "
               "and rewrite the TorchScript model to fit"};
  app.require_subcommand(1);
  acprof::cli::addProfileCommand(app);
  acprof::cli::addPlanCommand(app);
  acprof::cli::addRewriteCommand(app);
  acprof::cli::addViewCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    // Libraries throw one-line errors that already name the problem and the fix.
    // Some LibTorch messages start with a newline: print the first line that says something.
    std::string message = e.what();
    // For bug reports: LibTorch's whole message, backtrace included.
    if (std::getenv("ACPROF_FULL_ERRORS")) std::cerr << message << std::endl;
    const auto start = message.find_first_not_of(" \n\t");
    message = start == std::string::npos ? std::string("unknown error") : message.substr(start);
    if (const auto newline = message.find('\n'); newline != std::string::npos) message.resize(newline);
    std::cerr << "acprof: error: " << message << std::endl;
    return 1;
  }
  return 0;
}
