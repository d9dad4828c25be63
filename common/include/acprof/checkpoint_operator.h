// The name of the operator a rewritten model calls for each checkpoint
// segment, defined once for the runtime that registers it (rewriter/ops) and
// the readers that recognise its steps in a profile (viz). Torch-free.
#pragma once

namespace acprof {

inline constexpr const char* kCheckpointOperator = "acprof::checkpoint";

}  // namespace acprof
