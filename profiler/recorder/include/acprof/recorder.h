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
#include <optional>
#include <string>
#include <vector>

#include "acprof/error.h"
#include "acprof/profile_format.h"

namespace torch::jit {
struct Module;
}

namespace acprof {

class Optimizer;

struct RecordOptions {
  std::string model_path;
  RunConfig run;                          // as requested: see RunConfig
  // One more iteration in the other executor mode, for
  // meta.other_executor_mode_peak_bytes (-1 where not measured). Off by
  // default: it costs about two steps, and the plan holds in the recorded mode.
  bool measure_other_executor_mode = false;
  // One forward without grad, for meta.forward_without_grad_ratio (-1 where
  // not measured). Off by default: half a step of a decoder, and no plan reads it.
  bool measure_forward_without_grad = false;
  // What the probes add to a forward step, where already known (the
  // re-profile of a rewrite takes the original profile's meta.probe_cost_us):
  // no plain forward is timed to measure it again.
  std::optional<double> probe_cost_us;
  // Holds the measured iterations beyond the fewest to the profile's budget of
  // kProfileStepBudget training steps, counted from this process's start
  // (command_budget.h): `acprof profile` does; a library caller's process age
  // says nothing of what its profile cost.
  bool keep_to_step_budget = false;
  // Whose gradient each storage is (tensors[].gradient_of, gradient_hooks.h).
  // Off only to show that the hooks change nothing else a profile says.
  bool record_gradients = true;
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

// The same for a model already loaded from options.model_path and trained in
// this process (the rewrite's timed pair): no second load, and its optimizer's
// state exists already, as after a warm-up iteration (options.run.warmup_iters
// still run first if asked for). `optimizer` must be of options.run.optimizer's kind.
Profile recordTrainedModel(const RecordOptions& options, torch::jit::Module& module, Optimizer& optimizer);

// sha256 of a file's bytes, hex.
std::string sha256OfFile(const std::string& path);

}  // namespace acprof
