// Placeholder until the rewrite stage lands; replaced by its owner.
#include <stdexcept>
#include "commands.h"
namespace acprof::cli {
void addRewriteCommand(CLI::App& app) {
  app.add_subcommand("rewrite", "not built yet")->callback([] { throw std::runtime_error("'rewrite' is not built yet"); });
}
}  // namespace acprof::cli
