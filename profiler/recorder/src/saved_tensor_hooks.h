// Which tensors autograd saves for backward, and when it lets them go.
//
// The allocator tells when a storage is freed, not who held it until then: a
// segment's output that only a node inside the segment saved dies right after
// forward once a checkpoint takes that node over, while one that a later node
// also saved lives on. LibTorch reports every save to the default engine's
// saved-variable hooks (the mechanism behind Python's
// torch.autograd.graph.saved_tensors_hooks). acprof's engine is the process's
// default engine from load time on; while a SavedTensorHooksScope lives, it
// gives every save a hook that reports the save and its release, and outside a
// scope it gives none, so that a backward there is LibTorch's own. A hook turns
// off autograd's check that a saved tensor was not written in place after it
// was saved, so the hook makes that check itself, in autograd's words. A hook
// holds the saved storage exactly as long as autograd would have held it, so
// memory is unchanged.
//
// Why from load time, not switched in by the scope: LibTorch starts the
// autograd device threads (one per GPU) once per process, for whichever engine
// runs the first backward (engine.cpp, initialize_device_threads_pool), so an
// engine switched in after a backward has run has no device threads, and its
// first CUDA backward fails an internal assert (device_ready_queues_).
#pragma once

#include <cstdint>
#include <functional>

namespace acprof {

struct SavedTensorReport {
  std::function<void(uint64_t save_id, const void* storage)> saved;
  std::function<void(uint64_t save_id)> released;
};

// The engine backward runs on: acprof's, in every process that links the
// recorder (for tests of that).
const void* defaultAutogradEngine();

class SavedTensorHooksScope {
 public:
  explicit SavedTensorHooksScope(SavedTensorReport report);
  ~SavedTensorHooksScope();
  SavedTensorHooksScope(const SavedTensorHooksScope&) = delete;
  SavedTensorHooksScope& operator=(const SavedTensorHooksScope&) = delete;
};

}  // namespace acprof
