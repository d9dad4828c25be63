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

// profile and rewrite: listed in --help in their places; used, they take
// every argument after their name unparsed and start acprof-torch with argv.
void addTorchCommand(CLI::App& app, const std::string& name, const std::string& description, char** argv) {
  CLI::App* command = app.add_subcommand(name, description);
  command->prefix_command();
  command->set_help_flag();  // acprof-torch prints the command's help
  command->callback([argv] { throw acprof::Error(acprof::ErrorKind::BadInput, becomeTorchProgram(argv)); });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{acprof::cli::kToolDescription};
  app.require_subcommand(1);
  addTorchCommand(app, "profile", acprof::cli::kProfileDescription, argv);
  acprof::cli::addPlanCommand(app);
  addTorchCommand(app, "rewrite", acprof::cli::kRewriteDescription, argv);
  acprof::cli::addViewCommand(app);
  return acprof::cli::runApp(app, argc, argv, [](const std::exception& e) { return std::string(e.what()); });
}
