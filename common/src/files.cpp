#include "acprof/files.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "acprof/error.h"

namespace acprof {
namespace {

// The temporary files alive now, for the signal handler: fixed slots of plain
// characters, because a handler may only call async-signal-safe functions.
constexpr int kTemporarySlots = 16;
constexpr size_t kPathBytes = 4096;
char g_temporary_paths[kTemporarySlots][kPathBytes];
std::atomic<bool> g_temporary_used[kTemporarySlots];

void removeTemporariesAndDie(int signal_number) {
  for (int slot = 0; slot < kTemporarySlots; ++slot)
    if (g_temporary_used[slot].load()) ::unlink(g_temporary_paths[slot]);
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void installSignalHandlersOnce() {
  static const bool installed = [] {
    for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) std::signal(signal_number, removeTemporariesAndDie);
    return true;
  }();
  (void)installed;
}

}  // namespace

TemporaryFile::TemporaryFile(std::string path) : path_(std::move(path)) {
  installSignalHandlersOnce();
  if (path_.size() >= kPathBytes) return;  // not removable on a signal; still removed at scope end
  for (int slot = 0; slot < kTemporarySlots; ++slot) {
    bool expected = false;
    if (!g_temporary_used[slot].load()) {
      std::memcpy(g_temporary_paths[slot], path_.c_str(), path_.size() + 1);
      if (g_temporary_used[slot].compare_exchange_strong(expected, true)) {
        slot_ = slot;
        return;
      }
    }
  }
}

TemporaryFile::~TemporaryFile() {
  if (slot_ >= 0) g_temporary_used[slot_].store(false);
  if (!released_) {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
}

std::string readWholeFile(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw Error(ErrorKind::BadInput, fmt::format("{}: is a directory, not a file; pass the file's path", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::BadInput, fmt::format("{}: cannot open the file; check that the path exists and is readable", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}


namespace {

// An output that exists and is not a regular file (a pipe, a terminal,
// /dev/stdout, a device) is written through, never replaced by a file.
void writeThrough(const std::string& path, const std::string& contents) {
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (!out)
    throw Error(ErrorKind::BadInput, fmt::format("{}: cannot open for writing ({}); choose a writable output path", path,
                                  std::strerror(errno)));
  const size_t written = std::fwrite(contents.data(), 1, contents.size(), out);
  const int write_error = written == contents.size() && std::fflush(out) == 0 ? 0 : errno;
  const int close_error = std::fclose(out) == 0 ? 0 : errno;
  if (write_error || close_error)
    throw Error(ErrorKind::BadInput, fmt::format("{}: writing failed ({}); free space or choose another output path", path,
                                  std::strerror(write_error ? write_error : close_error)));
}

}  // namespace

void writeFileAtomically(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code status_error;
  const fs::file_status status = fs::status(target, status_error);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    if (fs::is_directory(status))
      throw Error(ErrorKind::BadInput, fmt::format("{}: is a directory; pass a file path for the output", path));
    writeThrough(path, contents);
    return;
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (fs::exists(dir, status_error) && !fs::is_directory(dir, status_error))
    throw Error(ErrorKind::BadInput,
                fmt::format("{}: '{}' is a file, not a directory; choose another output path", path, dir.string()));
  if (!fs::is_directory(dir))
    throw Error(ErrorKind::BadInput, fmt::format("{}: the directory '{}' does not exist; create it or choose another output path",
                                  path, dir.string()));
  const fs::path temp = dir / fmt::format(".{}.tmp{}", target.filename().string(), ::getpid());
  TemporaryFile temporary(temp.string());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw Error(ErrorKind::BadInput, fmt::format("{}: cannot write in '{}'; choose a writable output path", path, dir.string()));
    out << contents;
    out.flush();
    if (!out)
      throw Error(ErrorKind::BadInput,
                  fmt::format("{}: writing failed (disk full?); free space or choose another path", path));
  }
  std::error_code error;
  fs::rename(temp, target, error);
  if (error)
    throw Error(ErrorKind::BadInput, fmt::format("{}: cannot replace the file ({}); choose a writable output path",
                                                 path, error.message()));
  temporary.release();
}

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

std::string absolutePath(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

}  // namespace acprof
