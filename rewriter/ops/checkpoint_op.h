// acprof::checkpoint(Segment seg, Tensor[] inputs) -> Tensor[], the operator a
// rewritten model calls in place of a region of its forward graph.
//
// Forward runs the segment without recording autograd history and keeps only
// its inputs, the generator states and, for each input the segment writes in
// place (a buffer's running statistics), a snapshot taken before forward (one
// copy per storage, shared by the written inputs on it);
// backward re-runs the segment with grad enabled, under the generator and
// autocast state forward ran under, on detached inputs (the snapshots for
// written ones, so the recompute reads what forward read and writes to a
// copy), differentiates it with the incoming gradients and drops the
// recomputed tensors. What it keeps is released when its backward returns.
// Loss, gradients and buffers equal those of the unrewritten model bit for bit
// where the kernels are deterministic.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "acprof/checkpoint_operator.h"
#include "ops/segment.h"

namespace acprof {

// The operator's kernel; a model reaches it through the dispatcher as acprof::checkpoint.
std::vector<at::Tensor> checkpoint(c10::intrusive_ptr<Segment> segment, at::TensorList inputs);

inline constexpr const char* kCheckpointOpName = kCheckpointOperator;

}  // namespace acprof
