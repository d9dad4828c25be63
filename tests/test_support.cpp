#include "test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace acprof::testing {
namespace {

// The scratch directories this process made, removed when it exits unless a
// test failed (then they are kept for a look, and the failure names them).
class ScratchDirs {
 public:
  ~ScratchDirs() {
    if (::testing::UnitTest::GetInstance()->Failed()) return;
    std::error_code ignored;
    for (const std::filesystem::path& dir : dirs_) std::filesystem::remove_all(dir, ignored);
  }
  void add(const std::filesystem::path& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(dir);
  }

 private:
  std::mutex mutex_;
  std::vector<std::filesystem::path> dirs_;
};

ScratchDirs& scratchDirs() {
  static ScratchDirs dirs;
  return dirs;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

CommandResult runCommand(const std::string& command, const std::string& working_dir) {
  const std::string scratch = makeScratchDir("cmd");
  const std::string out_path = scratch + "/out", err_path = scratch + "/err";
  std::string full = command + " >" + out_path + " 2>" + err_path;
  if (!working_dir.empty()) full = "cd '" + working_dir + "' && " + full;
  const int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  std::filesystem::remove_all(scratch);
  return result;
}

CommandResult runAcprof(const std::string& arguments, const std::string& working_dir) {
  return runCommand(std::string("'") + ACPROF_BINARY + "' " + arguments, working_dir);
}

std::string makeScratchDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() /
                   ("acprof-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  scratchDirs().add(dir);
  return dir.string();
}

std::string testModel(const std::string& file_name) {
  const std::string path = std::string(ACPROF_TEST_MODELS_DIR) + "/" + file_name;
  if (!std::filesystem::exists(path))
    throw std::runtime_error(path + " is missing; the export_test_models CTest fixture exports it");
  return path;
}

int lineCount(const std::string& text) {
  int lines = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' || i + 1 == text.size()) ++lines;
  return lines;
}

}  // namespace acprof::testing
