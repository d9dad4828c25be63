#include "eager_front_end.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "acprof/error.h"
#include "acprof/unreproducible_step.h"
#include "outcome.h"

extern char** environ;

namespace acprof::cli {
namespace {

namespace fs = std::filesystem;

// Run with `python -c`: it imports torch and acprof.eager itself, so that a
// Python without them is reported as such (exit 7) rather than as whatever the
// command would have failed with. argv[1] is the result file, the rest the command's.
constexpr const char* kBootstrap = R"(import json, sys
result = sys.argv[1]
def fail(message):
    with open(result, "w") as out:
        json.dump({"error": {"kind": "python_import", "message": message}, "result": None}, out)
    sys.exit(7)
try:
    import torch
except BaseException as e:
    fail(f"{sys.executable} cannot import torch ({type(e).__name__}: {e}); set ACPROF_PYTHON to a Python that has "
         "the torch you train with, or install torch into this one")
try:
    from acprof.eager import command_line
except BaseException as e:
    fail(f"{sys.executable} cannot import acprof.eager ({type(e).__name__}: {e}); pip install the acprof repository's "
         "python/ into it, or set PYTHONPATH to that python/ directory")
try:
    from acprof import engine
    engine.require()
except BaseException as e:
    fail(str(e))
sys.argv = ["acprof"] + sys.argv[2:]
sys.exit(command_line.main(sys.argv[1:] + ["--result", result]))
)";

std::string pythonInterpreter() {
  const char* configured = std::getenv("ACPROF_PYTHON");
  return configured != nullptr && *configured != '\0' ? configured : "python3";
}

// The interpreter's exit status; throws PythonImport when it cannot be started.
int runInterpreter(const std::string& python, const std::vector<std::string>& words) {
  std::vector<char*> argv;
  for (const std::string& word : words) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  pid_t child = 0;
  const int failed = ::posix_spawnp(&child, python.c_str(), nullptr, nullptr, argv.data(), environ);
  if (failed != 0)
    throw Error(ErrorKind::PythonImport,
                fmt::format("cannot start Python '{}' ({}), which runs the eager front end (--module): set "
                            "ACPROF_PYTHON to the Python you train with (it needs torch and `pip install` of "
                            "acprof's python/), or put python3 on PATH",
                            python, std::strerror(failed)));
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw Error(ErrorKind::Internal, fmt::format("waiting for {}: {}", python, std::strerror(errno)));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

TemporaryFile::TemporaryFile(const std::string& purpose) {
  std::string pattern = (fs::temp_directory_path() / "acprof-eager-XXXXXX").string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    throw Error(ErrorKind::BadInput, fmt::format("cannot make a file in {} for {} ({}); set TMPDIR to a writable "
                                                 "directory",
                                                 fs::temp_directory_path().string(), purpose, std::strerror(errno)));
  ::close(fd);
  path = pattern;
}

TemporaryFile::~TemporaryFile() {
  std::error_code ignored;
  fs::remove(path, ignored);
}

EagerOutcome runEagerCommandOutcome(const std::vector<std::string>& arguments) {
  const std::string python = pythonInterpreter();
  const TemporaryFile result_file("the eager front end's result");
  std::vector<std::string> words = {python, "-c", kBootstrap, result_file.path};
  words.insert(words.end(), arguments.begin(), arguments.end());
  const int exit_code = runInterpreter(python, words);
  std::ifstream in(result_file.path);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json reported = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!reported.is_object()) {
    throw Error(ErrorKind::Internal,
                fmt::format("the eager front end ({} -m acprof.eager) exited {} without a result; run it with "
                            "ACPROF_FULL_ERRORS=1 for its traceback",
                            python, exit_code));
  }
  EagerOutcome outcome;
  outcome.result = reported.value("result", nlohmann::json());
  const nlohmann::json& error = reported.value("error", nlohmann::json());
  if (error.is_object()) {
    const ErrorKind kind = errorKindNamed(error.value("kind", ""));
    const std::string message = error.value("message", "the eager front end failed");
    const nlohmann::json& difference = error.value("difference", nlohmann::json());
    if (difference.is_number()) {
      const UnreproducibleStep unreproducible(message, difference.get<double>());
      outcome.error_kind = unreproducible.kind();
      outcome.error = std::make_exception_ptr(unreproducible);
    } else {
      outcome.error_kind = kind;
      outcome.error = std::make_exception_ptr(Error(kind, message));
    }
  }
  return outcome;
}

nlohmann::json runEagerCommand(const std::vector<std::string>& arguments) {
  EagerOutcome outcome = runEagerCommandOutcome(arguments);
  if (!outcome.result.is_null()) setOutcomeResult(outcome.result);
  if (outcome.error) std::rethrow_exception(outcome.error);
  return outcome.result;
}

}  // namespace acprof::cli
