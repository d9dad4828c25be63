// libacprof_ops.so, the runtime that a model written by `acprof rewrite` calls:
// loading the library registers the operator acprof::checkpoint and the
// TorchScript class acprof.Segment, so it must be loaded before the model.
//
// C++: link it. With CMake, after `cmake --install` of acprof:
//
//   find_package(acprof REQUIRED)
//   target_link_libraries(train PRIVATE acprof::ops)
//
// then torch::jit::load the rewritten model and train it as the original.
// Python: torch.ops.load_library("libacprof_ops.so") before torch.jit.load.
#pragma once

namespace acprof {

// Whether acprof::checkpoint is registered with LibTorch's dispatcher, that is,
// whether libacprof_ops.so is loaded in this process. Call it once before
// torch::jit::load: the call references the library, so a linker that drops
// unreferenced shared libraries (--as-needed) keeps it and its registrations.
bool checkpointOperatorRegistered();

}  // namespace acprof
