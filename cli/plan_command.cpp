// Placeholder until the plan stage lands; replaced by its owner.
#include <stdexcept>
#include "commands.h"
namespace acprof::cli {
void addPlanCommand(CLI::App& app) {
  app.add_subcommand("plan", "not built yet")->callback([] { throw std::runtime_error("'plan' is not built yet"); });
}
}  // namespace acprof::cli
