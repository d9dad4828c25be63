"""The checkpoint a planned segment runs under: the Python twin of the C++ operator
acprof::checkpoint (rewriter/ops/checkpoint_op.cpp), so that the memory the planner's simulator
assumes (docs/memory-model.md) is the memory an eager step uses.

Forward runs the segment below autograd (torch._C._AutoDispatchBelowAutograd), so nothing inside
records history or is kept, on detached inputs that keep their requires_grad, because kernels choose
their arithmetic by it (ATen's matmul folds a transposed input into one mm only when the weight
requires grad), as the C++ operator does; it keeps only the inputs
(a snapshot in place of each input the segment writes in place, taken before forward), the CPU
generator state and the autocast state. Backward puts the generator state back (keeping a copy of
the current one while it runs), re-runs the segment with grad enabled on detached inputs (the
snapshots for written ones, so a batch norm's running statistics are updated once, by forward),
differentiates it with the gradients it received, and returns one gradient per input. Each use
of an outside tensor that needs grad is an input of its own, latest use first, so the engine adds
the uses' gradients in the order the unsplit backward did (bit for bit).
"""

from typing import Any, Callable, List, Sequence

import torch

from . import autocast_state


class SegmentRun:
    """What a checkpoint needs of its segment: how to run it on its inputs, which inputs it
    writes in place, and which outputs may carry a gradient."""

    def __init__(self, run: Callable[[List[torch.Tensor]], List[Any]], written_inputs: Sequence[int],
                 outputs_may_need_grad: Sequence[bool]):
        self.run = run
        self.written_inputs = set(written_inputs)
        self.outputs_may_need_grad = list(outputs_may_need_grad)


class _AutocastReplay:
    """Forward's autocast state for the recompute, as a region of its own: casts of the
    recompute's leaf inputs that autocast caches (a weight's lower-precision copy) are cached
    while it runs and the cache is cleared when it ends, as forward's was when its region ended
    and as the C++ operator's AutocastStateScope does. A cast that nothing else holds then dies
    with the recompute, and one a node saved lives until that node's backward releases it, which
    is what the simulator assumes (docs/memory-model.md, [held-copy] and [internal-activation]). Held until
    the checkpoint's backward returned instead, a weight's cast that addmm saved outlived its
    release by the gradient computation in between (32 KiB over the predicted peak of a GPT-2
    floor plan under bfloat16)."""

    def __init__(self, state: tuple):
        self.state = state
        self.previous = None

    def __enter__(self):
        self.previous = autocast_state.current()
        autocast_state.set_state(self.state)
        torch.autocast_increment_nesting()
        return self

    def __exit__(self, *exc):
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        autocast_state.set_state(self.previous)


def _private_outputs_unviewed(outputs: List[Any], inputs: Sequence[torch.Tensor]) -> List[Any]:
    """A Function's view outputs may not be written in place later; an output that views a
    tensor made inside the segment, sharing storage with no input and no other output, is the
    only holder of that storage and is returned as a plain tensor on it (unviewPrivateOutputs)."""
    def storage_of(t):
        return t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) else None

    input_storages = {storage_of(t) for t in inputs}
    result = list(outputs)
    for o, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor) or not out._is_view():
            continue
        storage = storage_of(out)
        shared = storage in input_storages or any(storage_of(other) == storage
                                                  for k, other in enumerate(outputs) if k != o)
        if shared:
            continue
        plain = torch.empty(0, dtype=out.dtype, device=out.device)
        plain.set_(out.untyped_storage(), out.storage_offset(), out.size(), out.stride())
        result[o] = plain
    return result


def _detached_keeping_requires_grad(inputs: Sequence[torch.Tensor], leaves_only: bool) -> List[torch.Tensor]:
    """Detached inputs, one per tensor object, each needing grad where its input does (with
    `leaves_only`, only where its input is a leaf that needs grad)."""
    first = {}
    detached = []
    for x in inputs:
        if id(x) not in first:
            first[id(x)] = x.detach().requires_grad_(x.requires_grad and (x.is_leaf or not leaves_only))
        detached.append(first[id(x)])
    return detached


def _snapshot_on_storage_copy(copies: dict, x: torch.Tensor) -> torch.Tensor:
    """A written input as a view on a copy of its storage, one copy per storage (shared by every
    written input on it), as acprof::checkpoint's snapshotOnStorageCopy keeps it and the planner
    counts it."""
    storage = x.untyped_storage()
    copy = copies.get(storage.data_ptr())
    if copy is None:
        copy = copies[storage.data_ptr()] = storage.clone()
    view = torch.empty(0, dtype=x.dtype, device=x.device)
    view.set_(copy, x.storage_offset(), x.size(), x.stride())
    return view


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, segment: SegmentRun, caller_grad_enabled: bool, *inputs: torch.Tensor):
        copies = {}
        saved = [_snapshot_on_storage_copy(copies, x) if i in segment.written_inputs else x for i, x in enumerate(inputs)]
        del copies
        saved.append(torch.get_rng_state())
        ctx.segment = segment
        ctx.input_count = len(inputs)
        ctx.autocast = autocast_state.current()
        cache = torch.is_autocast_cache_enabled()
        torch.set_autocast_cache_enabled(False)
        autocasting = any(enabled for _, enabled, _ in ctx.autocast[:-1])
        try:
            if autocasting:
                # Autocast caches the casts of leaves that need grad (a weight's lower-precision
                # copy) until its region ends, as it did for the original forward, so the cache
                # is on here too; a detached input is a leaf, so only inputs that were leaves
                # needing grad keep the flag, or the casts of activations would be cached as well.
                torch.set_autocast_cache_enabled(cache)
            detached = _detached_keeping_requires_grad(inputs, leaves_only=autocasting)
            # Grad mode stays the caller's (apply turned it off), so code that asks
            # torch.is_grad_enabled() takes the branch the original took, as the recompute will.
            with torch.set_grad_enabled(caller_grad_enabled), torch._C._AutoDispatchBelowAutograd():
                outputs = segment.run(detached)
            del detached
            outputs = _private_outputs_unviewed(outputs, inputs)
        finally:
            torch.set_autocast_cache_enabled(cache)
        ctx.save_for_backward(*saved)
        del saved
        ctx.set_materialize_grads(False)
        without_grad = [o for o, may in zip(outputs, segment.outputs_may_need_grad) if not may]
        if without_grad:
            ctx.mark_non_differentiable(*without_grad)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        segment: SegmentRun = ctx.segment
        count = ctx.input_count
        saved = list(ctx.saved_tensors)
        replayed_state = saved[count]
        inputs = []
        for i in range(count):
            x = saved[i].detach()
            if i not in segment.written_inputs and saved[i].requires_grad:
                x.requires_grad_(True)
            inputs.append(x)
        del saved
        current_state = torch.get_rng_state()
        torch.set_rng_state(replayed_state)
        try:
            with torch.enable_grad(), _AutocastReplay(ctx.autocast):
                outputs = segment.run(inputs)
        finally:
            torch.set_rng_state(current_state)
            del current_state, replayed_state
        # Comprehensions, not a loop: a loop's variable would hold the last output (one the outer
        # forward keeps without a gradient, graph.held_values) until backward returns.
        pairs = [(out, grad) for out, grad in zip(outputs, grad_outputs)
                 if isinstance(out, torch.Tensor) and out.requires_grad and grad is not None]
        differentiated, output_grads = [out for out, _ in pairs], [grad for _, grad in pairs]
        del outputs, grad_outputs, pairs
        wanted = [i for i, x in enumerate(inputs) if x.requires_grad]
        input_grads: List[Any] = [None] * (2 + count)
        if differentiated and wanted:
            grads = torch.autograd.grad(differentiated, [inputs[i] for i in wanted], output_grads,
                                        allow_unused=True)
            for i, grad in zip(wanted, grads):
                input_grads[2 + i] = grad
        return tuple(input_grads)


def checkpoint(segment: SegmentRun, inputs: Sequence[torch.Tensor]) -> tuple:
    return CheckpointFunction.apply(segment, torch.is_grad_enabled(), *inputs)
