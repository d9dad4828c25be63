// Which graph value each gradient of backward belongs to, as autograd says it.
//
// The planner must know which tensors a node's backward made are gradients of
// which of its inputs (docs/memory-model.md, [held-use-gradient] to
// [return-sums]: what a checkpoint holds until it returns, and which sums it makes there). Sizes cannot tell them apart (an
// LSTM cell's input slice and its bias are both 2048 B); autograd's edges can.
// Forward records, per observed value that requires grad, the autograd edge its
// gradient arrives on (gradientTargetOf). Before backward, every autograd node
// reachable from the loss gets two hooks: a post-hook that reports each output
// with the edge it goes along, and a pre-hook that reports each input, the
// whole gradient of the node's forward output of that number (a sum the engine
// made where several uses handed one on). The reports go to the active
// RecordingSession, and event_stream.cpp names each storage's value.
//
// The hooks read pointers and change no tensor's life: LibTorch's engine keeps
// a node's inputs until the node and its post-hooks have run whether or not it
// has post-hooks (generated backward functions read their inputs and do not
// move them), and the pre-hook returns the list it was given. Every end-to-end
// test's predicted peak (from a profile recorded with the hooks) equals the
// peak measured again, and the hooks are on for every recorded iteration.
#pragma once

#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "acprof/event_stream.h"
#include "acprof/torch_compat.h"

namespace acprof {

// The edge `value`'s gradient arrives on, or nullopt where it needs none. A
// leaf's is its gradient accumulator, which LibTorch caches weakly: `keep`
// holds it to the iteration's end, so that the op that reads the leaf finds
// the same accumulator rather than a new one at another address.
std::optional<GradientTarget> gradientTargetOf(const at::Tensor& value,
                                               std::vector<compat::AutogradNodePtr>& keep);

// Adds the reporting hooks to every autograd node reachable from loss's
// grad_fn. Reports go to RecordingSession::active() while one is active.
void reportGradientsOfBackward(const at::Tensor& loss);

}  // namespace acprof
