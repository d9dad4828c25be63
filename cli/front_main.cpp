// acprof: plan and view run here, without LibTorch; profile and rewrite run a
// model, so this process becomes acprof-torch (main.cpp), built and installed
// beside it, with the same arguments: output, errors and exit code are that
// program's. Loading LibTorch takes 0.7 s on the 2-core reference machine,
// more than planning a 5,000-node profile.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "acprof/error.h"
#include "commands.h"
#include "run_app.h"

namespace {

namespace fs = std::filesystem;

fs::path torchProgram() {
  char self[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) return "acprof-torch";
  self[length] = '\0';
  return fs::path(self).parent_path() / "acprof-torch";
}

// Replaces this process; returns, with the reason, only if it could not.
std::string becomeTorchProgram(char** argv) {
  const fs::path program = torchProgram();
  execv(program.c_str(), argv);
  return fmt::format("cannot start {} ({}), which runs profile and rewrite: it belongs beside acprof; "
                     "rebuild or reinstall acprof",
                     program.string(), std::strerror(errno));
}

bool runsAModel(const std::string& command) { return command == "profile" || command == "rewrite"; }

// Stands in --help for a subcommand acprof-torch runs.
void addTorchCommand(CLI::App& app, const std::string& name, const std::string& description, char** argv) {
  CLI::App* command = app.add_subcommand(name, description);
  command->prefix_command();
  command->set_help_flag();
  command->callback([argv] { throw acprof::Error(acprof::ErrorKind::BadInput, becomeTorchProgram(argv)); });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && runsAModel(argv[1])) {
    const std::string failure = becomeTorchProgram(argv);  // before writing anything: it may not return
    std::cerr << "acprof: error: " << failure << std::endl;
    return 1;
  }
  CLI::App app{acprof::cli::kToolDescription};
  app.require_subcommand(1);
  addTorchCommand(app, "profile", acprof::cli::kProfileDescription, argv);
  acprof::cli::addPlanCommand(app);
  addTorchCommand(app, "rewrite", acprof::cli::kRewriteDescription, argv);
  acprof::cli::addViewCommand(app);
  return acprof::cli::runApp(app, argc, argv, [](const std::exception& e) { return std::string(e.what()); });
}
