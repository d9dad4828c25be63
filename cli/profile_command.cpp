// Placeholder until the recorder lands.
#include <stdexcept>
#include "commands.h"
namespace acprof::cli {
void addProfileCommand(CLI::App& app) {
  app.add_subcommand("profile", "not built yet")->callback([] { throw std::runtime_error("not built yet"); });
}
}  // namespace acprof::cli
