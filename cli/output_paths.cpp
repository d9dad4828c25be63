#include "output_paths.h"
#include "acprof/error.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace acprof::cli {

void checkOutputDirectory(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path existing = fs::absolute(directory, error);
  while (!existing.empty() && !fs::exists(existing, error)) existing = existing.parent_path();
  if (!fs::is_directory(existing, error))
    throw Error(ErrorKind::BadInput, fmt::format("{}: '{}' is not a directory; choose another directory", directory,
                                                 existing.string()));
  if (::access(existing.c_str(), W_OK) != 0)
    throw Error(ErrorKind::BadInput, fmt::format("{}: the directory '{}' is not writable; choose another directory",
                                                 directory, existing.string()));
}

void checkOutputPath(const std::string& output, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code error;
  for (const std::string& input : inputs) {
    if (fs::exists(input, error) && fs::exists(output, error) && fs::equivalent(input, output, error))
      throw Error(ErrorKind::BadInput, fmt::format("{}: the output would overwrite an input; choose another output path",
                                           output));
  }
  if (fs::is_directory(output, error))
    throw Error(ErrorKind::BadInput, fmt::format("{}: is a directory; give a file path for the output", output));
  const fs::path parent = fs::path(output).has_parent_path() ? fs::path(output).parent_path() : fs::path(".");
  if (fs::exists(parent, error) && !fs::is_directory(parent, error))
    throw Error(ErrorKind::BadInput, fmt::format("{}: '{}' is a file, not a directory; choose another output path",
                                                 output, parent.string()));
  if (!fs::is_directory(parent, error))
    throw Error(ErrorKind::BadInput, fmt::format("{}: the directory '{}' does not exist; create it or choose another "
                                         "output path",
                                         output, parent.string()));
  if (::access(parent.c_str(), W_OK) != 0)
    throw Error(ErrorKind::BadInput, fmt::format("{}: the directory '{}' is not writable; choose another output path",
                                         output, parent.string()));
}

}  // namespace acprof::cli
