// acprof-torch: the subcommands that run a model (profile, rewrite), beside the
// torch-free ones, in the executable that links LibTorch. `acprof` (front_main.cpp)
// starts it for profile and rewrite, so that plan and view do not pay for loading
// LibTorch (0.7 s on the 2-core reference machine).
#include "acprof/model_file.h"
#include "acprof/run_modes.h"
#include "commands.h"
#include "run_app.h"

int main(int argc, char** argv) {
  acprof::keepFreedHostMemory();  // before any tensor: the op times must not depend on page faults
  CLI::App app{acprof::cli::kToolDescription};
  app.require_subcommand(1);
  acprof::cli::addProfileCommand(app);
  acprof::cli::addPlanCommand(app);
  acprof::cli::addRewriteCommand(app);
  acprof::cli::addViewCommand(app);
  // LibTorch's own messages start with a banner ("The following operation
  // failed in the TorchScript interpreter."); the cause is its last error line.
  return acprof::cli::runApp(app, argc, argv, [](const std::exception& e) { return acprof::oneLineTorchError(e); });
}
