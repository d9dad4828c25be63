// acprof-torch: the subcommands that run a model (profile, rewrite), beside the
// torch-free ones, in the executable that links LibTorch. `acprof` (front_main.cpp)
// starts it for profile and rewrite, so that plan and view do not pay for loading
// LibTorch (0.7 s on the 2-core reference machine).
#include <cstdio>
#include <cstdlib>

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
  const int code = acprof::cli::runApp(app, argc, argv, [](const std::exception& e) { return acprof::oneLineTorchError(e); });
  // Every file acprof writes is closed by now. What is left is the static
  // destructors of LibTorch and the CUDA libraries, 0.21 s at every exit on the
  // 2-core machine (strace: the profile's rename to exit_group), which free
  // nothing the system would not: the process ends without them, as clang
  // with -disable-free does.
  std::fflush(nullptr);
  std::_Exit(code);
}
