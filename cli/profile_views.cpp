// Temporary until viz lands: the optional views of 'acprof profile'.
#include <stdexcept>

#include "output_paths.h"

namespace acprof::cli {

void writeViews(const Profile&, const std::string& html_path, const std::string& trace_path) {
  if (!html_path.empty() || !trace_path.empty()) throw std::runtime_error("--html/--trace are not built yet");
}

}  // namespace acprof::cli
