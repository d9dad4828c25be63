// Files acprof reads and writes (torch-free). Every output is written whole
// or not at all: a temporary file beside the target, renamed into place. An
// existing output that is not a regular file (a pipe, /dev/stdout, a device)
// is written through instead, never replaced. A failed write throws.
#pragma once

#include <string>
#include <vector>

namespace acprof {

// Throws acprof::Error (bad input) naming the path and the fix.
std::string readWholeFile(const std::string& path);
void writeFileAtomically(const std::string& path, const std::string& contents);

// `path` made absolute against the working directory and lexically normal
// ("a/../b" is "b"): how profiles, plans and outcomes record the files they
// name, so that a later command finds them from any directory.
std::string absolutePath(const std::string& path);

// Checks made before any work starts, so that a bad output path fails fast
// and an input is never overwritten. Each throws a one-line Error (bad input).
// `output` must not be one of `inputs`, a directory, or in a missing or
// unwritable directory.
void checkOutputPath(const std::string& output, const std::vector<std::string>& inputs);
// `directory` exists or can be created (its nearest existing ancestor is a
// writable directory). Creates nothing.
void checkOutputDirectory(const std::string& directory);

// A temporary file that is removed when the scope ends unless released (it
// was renamed into place), and also when SIGINT, SIGTERM or SIGHUP ends the
// process while it lives: an interrupted run leaves nothing behind. The
// signal handlers are installed on first use.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  const std::string& path() const { return path_; }
  void release() { released_ = true; }

 private:
  std::string path_;
  int slot_ = -1;
  bool released_ = false;
};

}  // namespace acprof
