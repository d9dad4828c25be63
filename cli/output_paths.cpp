#include "output_paths.h"
#include "acprof/error.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace acprof::cli {

}  // namespace acprof::cli
