// Which tensors autograd saves for backward, and when it lets them go.
//
// The allocator tells when a storage is freed, not who held it until then: a
// segment's output that only a node inside the segment saved dies right after
// forward once a checkpoint takes that node over, while one that a later node
// also saved lives on. LibTorch reports every save to the default engine's
// saved-variable hooks (the mechanism behind Python's
// torch.autograd.graph.saved_tensors_hooks), so while a SavedTensorHooksScope
// lives, the default engine is one whose hooks report each save and each
// release. A hook holds the saved storage exactly as long as autograd would
// have held it, so memory is unchanged.
#pragma once

#include <cstdint>
#include <functional>

namespace acprof {

struct SavedTensorReport {
  std::function<void(uint64_t save_id, const void* storage)> saved;
  std::function<void(uint64_t save_id)> released;
};

class SavedTensorHooksScope {
 public:
  explicit SavedTensorHooksScope(SavedTensorReport report);
  ~SavedTensorHooksScope();
  SavedTensorHooksScope(const SavedTensorHooksScope&) = delete;
  SavedTensorHooksScope& operator=(const SavedTensorHooksScope&) = delete;
};

}  // namespace acprof
