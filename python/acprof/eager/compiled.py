"""A plan carried out inside torch.compile: the module's own forward under one selective
checkpoint whose policy is the plan, so AOTAutograd's partitioner saves what the plan saves and
recomputes, fused by inductor, what the plan recomputes (issue 63).

The plan's unit is a node of the recorded op stream (graph.py): the aten ops eager ran, in order.
The compiler traces the module's forward again, and not always through the same ops: transformers
builds its causal mask another way under tracing (unsqueeze, expand, index, bitwise_and where eager
ran none), and an `.item()` check eager ran is not traced. So the ops the compiler's trace calls the
policy with are first recorded once (a trace by the `aot_eager` backend, which calls the policy with
the same ops as inductor's: the policy sees ops before the backend's decompositions), aligned with
the profiled forward's ops (the longest matching blocks, difflib), and each traced op takes the
decision of the node it aligns with.

A segment recomputes every compute node inside it but its outputs, which the eager checkpoint hands
to the rest of the forward and so holds: those the plan saves. What the plan recomputes is
MUST_RECOMPUTE; what it saves, and an op the profile did not run, PREFER_SAVE, which leaves the
partitioner its own choice, as in the uncheckpointed compiled step (MUST_SAVE there measured a peak
1.04 of that step's on a Llama at a budget 0.7 of the way from floor to peak: it forbade recomputing
the fused pointwise chains inductor recomputes for free). A random op is MUST_SAVE: the recompute
must not draw another mask.

What this does not promise: the compiled step's memory is inductor's (its buffer reuse, its fusion,
its placement of the recompute), not the eager plan's prediction; the step is measured.
"""

import difflib
import functools
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from .apply import CheckpointedModule
from .training_state import training_state_kept


def recomputed_nodes(checkpointed: CheckpointedModule) -> set:
    """The indices of the nodes a planned segment holds and does not hand on as an output."""
    recomputed = set()
    for segment in checkpointed.segments:
        leaving = set(segment.outputs)
        recomputed.update(n.index for n in segment.nodes if n.value not in leaving)
    return recomputed


def op_nodes(checkpointed: CheckpointedModule) -> list:
    """The aten op nodes of the profiled forward, in order: the ops a policy is asked about."""
    return [node for node in checkpointed.graph.nodes
            if node.role == "compute" and isinstance(node.fx_node.target, torch._ops.OpOverload)]


def profiled_ops(checkpointed: CheckpointedModule) -> List[tuple]:
    """(op, recomputed) of each aten op node of the profiled forward, in order: recomputed where a
    planned segment holds it and it is not among the segment's outputs."""
    recomputed = recomputed_nodes(checkpointed)
    return [(node.fx_node.target, node.index in recomputed) for node in op_nodes(checkpointed)]


def aligned_decisions(profiled: Sequence[tuple], traced: Sequence[Any]) -> List[Optional[bool]]:
    """For each traced op, the decision (recomputed or not) of the profiled op it aligns with, None
    where it aligns with none."""
    matcher = difflib.SequenceMatcher(None, [str(op) for op, _ in profiled], [str(op) for op in traced],
                                      autojunk=False)
    decisions: List[Optional[bool]] = [None] * len(traced)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            decisions[block.b + k] = profiled[block.a + k][1]
    return decisions


class RecordingPolicy:
    """Saves everything and records the ops it was asked about, in order."""

    def __init__(self):
        self.ops: List[Any] = []

    def __call__(self, ctx, op, *args, **kwargs) -> CheckpointPolicy:
        if not ctx.is_recompute:
            self.ops.append(op)
        return CheckpointPolicy.PREFER_SAVE


class PlanPolicy:
    """The plan's decision for the i-th op the compiler's trace calls the policy with, where that
    op is the one recorded at i (else: unmatched, saved where the partitioner can). Counts are kept
    apart for a recompute (eager calls the policy again while it recomputes; the compiler does
    not). `recomputed` and `unmatched` count the forward's ops, which a test reads."""

    def __init__(self, traced: Sequence[Any], decisions: Sequence[Optional[bool]]):
        self.traced, self.decisions = list(traced), list(decisions)
        self.position = {False: 0, True: 0}
        self.recomputed = self.unmatched = 0

    def __call__(self, ctx, op, *args, **kwargs) -> CheckpointPolicy:
        i = self.position[ctx.is_recompute]
        self.position[ctx.is_recompute] += 1
        decision = self.decisions[i] if i < len(self.traced) and self.traced[i] == op else None
        forward = not ctx.is_recompute
        if decision is None:
            self.unmatched += forward
            return CheckpointPolicy.PREFER_SAVE
        if torch.Tag.nondeterministic_seeded in op.tags:
            return CheckpointPolicy.MUST_SAVE
        if not decision:
            return CheckpointPolicy.PREFER_SAVE
        self.recomputed += forward
        return CheckpointPolicy.MUST_RECOMPUTE


def _contexts(make_policy: Callable[[], Any]):
    return create_selective_checkpoint_contexts(make_policy())


def _own_code(function):
    """`function` with a code object of its own. Dynamo keeps its compiled entries on the code
    object, at most torch._dynamo.config.recompile_limit (8) for one: every CompiledPlan compiles
    the same few lines again (a plan fit tries, an aot_eager trace, a budget sweep), and past the
    limit Dynamo would run the forward uncompiled without an error."""
    function.__code__ = function.__code__.replace()
    return function


def checkpointed_forward(module: torch.nn.Module, make_policy: Callable[[], Any]):
    """The module's class forward under one selective checkpoint, a fresh policy per trace (Dynamo
    takes a context_fn that is a module-level function or a partial of one, not a closure)."""
    own_forward = functools.partial(type(module).forward, module)
    context = functools.partial(_contexts, make_policy)

    def forward(*args, **kwargs):
        return checkpoint(own_forward, *args, use_reentrant=False, context_fn=context, **kwargs)
    return _own_code(forward)


def _uncheckpointed(module: torch.nn.Module):
    def forward(*args, **kwargs):
        return type(module).forward(module, *args, **kwargs)
    return _own_code(forward)


def traced_ops(module: torch.nn.Module, args: Sequence[Any], kwargs: Dict[str, Any]) -> List[Any]:
    """The ops the compiler's trace of the module's forward calls a selective checkpoint's policy
    with, in order: one forward compiled by aot_eager, its state (buffers, generator) put back."""
    policies: List[RecordingPolicy] = []

    def make_policy():
        policies.append(RecordingPolicy())
        return policies[-1]
    with training_state_kept(module):
        torch.compile(checkpointed_forward(module, make_policy), backend="aot_eager")(*args, **kwargs)
    return policies[-1].ops


class CompiledPlan(torch.nn.Module):
    """`torch.compile` of the module's own forward (its class's, not an installed plan's) under a
    selective checkpoint whose policy is the plan, given `traced` (traced_ops' answer at the call
    compiled, which no plan changes); with no plan, of the forward alone, as a user compiles the
    model. It shares the module's parameters and buffers. `policies` holds the policy of every
    trace the compiler made, the latest last."""

    def __init__(self, module: torch.nn.Module, checkpointed: Optional[CheckpointedModule] = None,
                 traced: Optional[List[Any]] = None, **compile_options):
        super().__init__()
        self.module = module
        self.policies: List[PlanPolicy] = []
        if checkpointed is None:
            self._compiled = torch.compile(_uncheckpointed(module), **compile_options)
            return
        decisions = aligned_decisions(profiled_ops(checkpointed), traced)

        def make_policy():
            self.policies.append(PlanPolicy(traced, decisions))
            return self.policies[-1]
        self._compiled = torch.compile(checkpointed_forward(module, make_policy), **compile_options)

    def forward(self, *args, **kwargs):
        if not (self.training and torch.is_grad_enabled()):
            return self.module(*args, **kwargs)
        return self._compiled(*args, **kwargs)
