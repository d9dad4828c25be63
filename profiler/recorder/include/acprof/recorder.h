// The recorder: measures one training iteration of a TorchScript model and
// fills the profile format.
//
// It runs warm-up iterations, then measured ones, of forward, loss, backward
// and (optionally) an optimizer step. Memory comes from the allocator itself:
// a c10::MemoryReportingInfoBase installed as the thread's profiler-state debug
// info sees every allocation and free. The forward graph runs instrumented:
// a marker op before each top-level node tells which node allocates, and an
// observer after it maps the node's output values to storages. Backward work is
// seen through RecordFunction callbacks and linked to forward nodes through
// autograd sequence numbers. Times are medians over the measured iterations.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "acprof/error.h"
#include "acprof/profile_format.h"

namespace acprof {

struct RecordOptions {
  std::string model_path;
  RunConfig run;                          // as requested: see RunConfig
  bool measure_other_executor_mode = true;
  // One plain training step before the recorded ones, under autograd's own
  // checks (an in-place write to a tensor backward needs fails there), which the
  // recorded steps' saved-tensor hooks skip. Off only where the caller has just
  // run that very step plainly: the rewrite's verification.
  bool check_plain_step = true;
  std::string command_line;               // recorded in the profile's meta
  std::function<void(const std::string&)> progress;  // optional, one short line per stage
};

// Thrown for problems the user can fix (bad spec, unloadable model, spec that
// does not fit the model). The message is one line naming the problem and the fix.
class RecordError : public Error {
 public:
  explicit RecordError(const std::string& message) : Error(ErrorKind::BadInput, message) {}
};

Profile recordProfile(const RecordOptions& options);

// sha256 of a file's bytes, hex.
std::string sha256OfFile(const std::string& path);

}  // namespace acprof
