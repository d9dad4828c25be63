// Placeholder until the view stage lands; replaced by its owner.
#include <stdexcept>
#include "commands.h"
namespace acprof::cli {
void addViewCommand(CLI::App& app) {
  app.add_subcommand("view", "not built yet")->callback([] { throw std::runtime_error("'view' is not built yet"); });
}
}  // namespace acprof::cli
