"""FSDP2 (`fully_shard`) around the user's module: its units, its collectives made to finish where
the step can see them, and a plan carried out inside each unit as a selective checkpoint (issue 62).

A unit is a module fully_shard was applied to below the root (a block, as torchtitan shards them).
FSDP all-gathers a unit's parameters in hooks around the unit's call and reduce-scatters its
gradients in hooks on its backward, so a plan runs inside the unit's own forward, as users write
it (checkpoint inside each block, then shard): the unit's class forward under one non-reentrant
selective checkpoint whose policy is the unit's plan (compiled.PlanPolicy, as under torch.compile),
installed as an instance `forward` that FSDP's hooks still call around. Ops outside the units (the
root's embedding, head and loss) are not checkpointed.

Measured on torch 2.14 (gloo, CPU): gloo runs each collective on a worker thread, which allocates
its own scratch (one unit's gathered bytes for an all-gather) and, holding the tensors of the work,
frees a buffer the step has let go of when it finishes with it. Both happen when the worker gets
there, so the same step peaked 793,088 B (one block's gathered parameters) apart from one step to
the next on a small decoder. So acprof gives every FSDP module of the model collectives that finish
before the step goes on (FinishedAllGather, FinishedReduceScatter): the same all_gather_into_tensor
and reduce_scatter_tensor FSDP's defaults call, waited on at once, and returned only once the worker
has let go of the tensors. The worker's scratch then lives while the step's own thread waits, and
every buffer is freed by the step's thread: the peak is one number (equal over 8 steps, 2 ranks).
What it costs is the overlap of a prefetched all-gather with the compute before it, on CPU ranks.
"""

import contextlib
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
import torch.distributed as dist

from ..errors import AcprofError, BadInput
from .call import Call
from .compiled import PlanPolicy, RecordingPolicy, checkpointed_forward, op_nodes, recomputed_nodes
from .recorder import local_tensor

# How long a finished collective's worker may keep its tensors before acprof calls it a hang.
RELEASE_TIMEOUT_S = 60.0


def is_sharded_root(model: Any) -> bool:
    """Whether `model` is a module fully_shard was applied to (FSDP2)."""
    if not dist.is_available():
        return False
    from torch.distributed.fsdp import FSDPModule
    return isinstance(model, FSDPModule)


@dataclass
class Unit:
    """One FSDP unit below the root: its name in the model, the module, and whether FSDP frees its
    gathered parameters after its forward (reshard_after_forward) or keeps them for backward."""
    name: str
    module: torch.nn.Module
    reshard_after_forward: bool


def _param_group(module: torch.nn.Module):
    groups = module._get_fsdp_state()._fsdp_param_groups
    return groups[0] if groups else None


def units_of(model: torch.nn.Module) -> List[Unit]:
    """The FSDP units below the root, in the model's order, checked to be what acprof measures."""
    from torch.distributed.fsdp import FSDPModule, FullyShardedDataParallel
    from torch.distributed.fsdp._fully_shard._fsdp_collectives import DefaultAllGather, DefaultReduceScatter
    units: List[Unit] = []
    for name, module in model.named_modules():
        if isinstance(module, FullyShardedDataParallel):
            raise BadInput(f"{type(model).__name__} holds a FullyShardedDataParallel wrapper ({name}), which acprof "
                           "does not fit; shard it with fully_shard (FSDP2)")
        if not isinstance(module, FSDPModule):
            continue
        state = module._get_fsdp_state()
        if len(state._fsdp_param_groups) > 1:
            raise BadInput(f"{name or 'the root'} has {len(state._fsdp_param_groups)} FSDP parameter groups (a "
                           "shard_placement_fn's meshes); acprof fits units of one group")
        group = _param_group(module)
        if group is not None:
            if any(p.device.type != "cpu" for p in module.parameters()):
                raise BadInput("acprof fits FSDP2 on CPU (gloo) ranks only so far; fit the model on one device")
            for comm, default in ((group._all_gather_comm, DefaultAllGather),
                                  (group._reduce_scatter_comm, DefaultReduceScatter)):
                if not isinstance(comm, (default, FinishedAllGather, FinishedReduceScatter)):
                    raise BadInput(f"{name or 'the root'} has a custom FSDP collective ({type(comm).__name__}), "
                                   "whose memory acprof does not measure; fit it with FSDP's own")
        if module is model:
            continue
        if any(name.startswith(u.name + ".") for u in units):
            raise BadInput(f"FSDP unit {name} is inside unit {next(u.name for u in units if name.startswith(u.name + '.'))}; "
                           "acprof checkpoints inside units that hold no other unit: shard the blocks, then the root")
        units.append(Unit(name, module, group is not None and group.post_forward_mesh_info is not None))
    if not units:
        raise BadInput(f"{type(model).__name__} is sharded by fully_shard at its root only, so no unit holds the "
                       "blocks acprof checkpoints inside; apply fully_shard to each block, then to the root")
    return units


# -- collectives that finish where the step sees them -------------------------------------------

def _use_count(storage) -> int:
    return torch._C._storage_Use_Count(storage._cdata)


def _finished(collective: Callable[[torch.Tensor, torch.Tensor], Any], output: torch.Tensor,
              input: torch.Tensor) -> None:
    """Runs `collective(output view, input view)` (async), waits for it, and returns once the
    backend holds neither tensor: each storage's use count back where it was before the views."""
    storages = {}
    for t in (output, input):
        storage = t.untyped_storage()
        storages.setdefault(storage.data_ptr(), (storage, _use_count(storage)))
    views = [output.view(output.shape), input.view(input.shape)]
    work = collective(*views)
    views.clear()
    work.wait()
    del work
    deadline = time.monotonic() + RELEASE_TIMEOUT_S
    for storage, before in storages.values():
        while _use_count(storage) > before:
            if time.monotonic() > deadline:
                raise AcprofError(f"the process group kept a finished collective's tensors for {RELEASE_TIMEOUT_S:.0f} s; "
                                  "please report it with the torch version")
            time.sleep(0)


def _allocate(size, *, dtype, device) -> torch.Tensor:
    return torch.empty(*size, dtype=dtype, device=device)


def _comm_classes():
    from torch.distributed.fsdp._fully_shard._fsdp_api import AllGather, ReduceScatter

    class FinishedAllGather(AllGather):
        """FSDP's all-gather (all_gather_into_tensor), finished before it returns (module docstring)."""

        def allocate(self, size, *, dtype, device):
            return _allocate(size, dtype=dtype, device=device)

        def __call__(self, output_tensor, input_tensor, group, async_op=False):
            _finished(lambda o, i: dist.all_gather_into_tensor(o, i, group=group, async_op=True),
                      output_tensor, input_tensor)
            return None  # finished: FSDP waits on no work (and records no event on CPU)

    class FinishedReduceScatter(ReduceScatter):
        """FSDP's reduce-scatter (reduce_scatter_tensor), finished before it returns."""

        def allocate(self, size, *, dtype, device):
            return _allocate(size, dtype=dtype, device=device)

        def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
            _finished(lambda o, i: dist.reduce_scatter_tensor(o, i, op=op, group=group, async_op=True),
                      output_tensor, input_tensor)
            return None

    return FinishedAllGather, FinishedReduceScatter


if dist.is_available():
    FinishedAllGather, FinishedReduceScatter = _comm_classes()
else:  # pragma: no cover - a torch without distributed has no FSDP to fit
    FinishedAllGather = FinishedReduceScatter = type(None)


def finish_collectives(model: torch.nn.Module) -> None:
    """Gives the root and every unit collectives that finish before the step goes on."""
    from torch.distributed.fsdp import FSDPModule
    for module in model.modules():
        if isinstance(module, FSDPModule) and _param_group(module) is not None:
            module.set_custom_all_gather(FinishedAllGather())
            module.set_custom_reduce_scatter(FinishedReduceScatter())


# -- the plan inside each unit -------------------------------------------------------------------

def _checkpointed_forward(module: torch.nn.Module, make_policy: Callable[[], Any]):
    """The module's class forward under one selective checkpoint (compiled.checkpointed_forward) in
    training with grad, and the class forward alone otherwise: nothing to recompute."""
    checkpointed = checkpointed_forward(module, make_policy)

    def forward(*args, **kwargs):
        if not (module.training and torch.is_grad_enabled()):
            return type(module).forward(module, *args, **kwargs)
        return checkpointed(*args, **kwargs)
    forward.acprof_unit_policy = make_policy
    return forward


def install_policy(unit: Unit, make_policy: Callable[[], Any]) -> None:
    """Makes the unit's forward its class forward under a selective checkpoint with a fresh
    `make_policy()` per call (FSDP's hooks stay around the unit's call)."""
    _remove_policy(unit.module)
    unit.module.forward = _checkpointed_forward(unit.module, make_policy)


def _remove_policy(module: torch.nn.Module) -> None:
    if hasattr(module.__dict__.get("forward"), "acprof_unit_policy"):
        del module.__dict__["forward"]


def remove_policies(model: torch.nn.Module) -> None:
    """Takes every unit's plan out of the model: each unit's forward is its class's again."""
    for module in model.modules():
        _remove_policy(module)


def plan_policies(units: Sequence[Unit], traced: Dict[str, List[Any]],
                  decisions: Dict[str, List[Optional[bool]]]) -> Dict[str, List[PlanPolicy]]:
    """Installs each unit's plan (the decision of each traced op); returns the policies each unit's
    calls made, the latest last, which a caller reads for what was recomputed."""
    made: Dict[str, List[PlanPolicy]] = {}
    for unit in units:
        made[unit.name] = []

        def make_policy(name=unit.name):
            made[name].append(PlanPolicy(traced[name], decisions[name]))
            return made[name][-1]
        install_policy(unit, make_policy)
    return made


def eager_ops(checkpointed, profile: dict) -> List[tuple]:
    """(op, recomputed) of each aten op node of a unit's profiled forward, for an eager selective
    checkpoint. Eager keeps the output of every op its policy saves until the recompute, whether or
    not autograd would have saved it (on the decoder, saving every op the plan does not recompute
    peaked 1.6 times higher than no checkpoint at all). So an op is saved only where the plan keeps
    it (not recomputed inside a segment) and autograd saved its output's storage in the profile; any
    other op is recomputed, which costs time and holds nothing."""
    values, tensors = profile["values"], profile["tensors"]

    def saved(node) -> bool:
        if node.value is None or node.value >= len(values):
            return False
        storage = values[node.value].get("tensor", -1)
        return storage >= 0 and bool(tensors[storage].get("saved_by"))

    recomputed = recomputed_nodes(checkpointed)
    return [(node.fx_node.target, node.index in recomputed or not saved(node)) for node in op_nodes(checkpointed)]


def _kept(value: Any) -> Any:
    """A captured argument kept past the step: tensors detached and cloned, needing grad where they did."""
    if isinstance(value, torch.Tensor):
        kept = value.detach().clone()
        return kept.requires_grad_(value.requires_grad) if kept.is_floating_point() else kept
    return value


@contextlib.contextmanager
def recording_units(units: Sequence[Unit]):
    """Within it, each unit's forward records the call it receives (its arguments, kept) and the ops
    a selective checkpoint's policy is asked about, in order; yields {name: [call, ops]}."""
    seen: Dict[str, list] = {}
    handles = []
    for unit in units:
        def make_policy(name=unit.name):
            recording = RecordingPolicy()
            seen.setdefault(name, [None, None])[1] = recording.ops
            return recording

        def keep_call(module, args, kwargs, name=unit.name):
            seen.setdefault(name, [None, None])[0] = Call.of(torch.utils._pytree.tree_map(_kept, args),
                                                            torch.utils._pytree.tree_map(_kept, kwargs))
        install_policy(unit, make_policy)
        handles.append(unit.module.register_forward_pre_hook(keep_call, with_kwargs=True))
    try:
        yield seen
    finally:
        for handle in handles:
            handle.remove()
        for unit in units:
            _remove_policy(unit.module)


class ClassForward(torch.nn.Module):
    """The unit's class forward alone, without FSDP's hooks around it, for profiling the unit while
    its parameters are gathered (FSDPModule.unshard): the ops and bytes a plan of it trades."""

    def __init__(self, unit: torch.nn.Module):
        super().__init__()
        self.unit = unit

    def forward(self, *args, **kwargs):
        return type(self.unit).forward(self.unit, *args, **kwargs)


class UnitChain(torch.nn.Module):
    """The unit's class forward called `times` times in a row, each call's output (its first tensor)
    the next call's first argument, the other arguments the recorded call's: for planning, a stand-in
    for the model's alike units, whose saved activations stack up across the forward as theirs do
    (a unit planned alone keeps what costs its own step nothing). Without FSDP's hooks, like
    ClassForward."""

    def __init__(self, unit: torch.nn.Module, call: Call, times: int):
        super().__init__()
        self.unit, self.call, self.times = unit, call, times

    def forward(self, *tensors):
        args, kwargs = self.call.rebuild(tensors)
        hidden, rest = args[0], tuple(args[1:])
        for _ in range(self.times):
            out = type(self.unit).forward(self.unit, hidden, *rest, **kwargs)
            hidden = out if isinstance(out, torch.Tensor) else out[0]
        return hidden


def alike(units: Sequence[Unit], calls: Dict[str, Call]) -> bool:
    """Whether every unit is the first's kind: one class, the same parameters' shapes, called with the
    same structure and shapes, its first argument a tensor (the hidden state a chain hands on)."""
    def parameters(module):
        return [(name, tuple(p.shape), p.dtype) for name, p in module.named_parameters()]
    first = units[0]
    call = calls[first.name]
    args, _ = call.rebuild(call.tensors)
    return bool(args) and isinstance(args[0], torch.Tensor) and all(
        type(u.module) is type(first.module) and parameters(u.module) == parameters(first.module)
        and repr(calls[u.name].spec) == repr(call.spec) and calls[u.name].shapes == call.shapes for u in units)


def local_step(step: dict) -> dict:
    """A measured step with each DTensor (a sharded gradient or parameter) as this rank's shard."""
    return {key: ({name: local_tensor(t) for name, t in value.items()} if isinstance(value, dict)
                  else local_tensor(value)) for key, value in step.items()}


def all_ranks_max(value: int) -> int:
    """The largest of `value` over the default group's ranks."""
    tensor = torch.tensor([value], dtype=torch.int64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return int(tensor.item())


def same_on_every_rank(value: Any) -> Any:
    """Rank 0's `value` on every rank of the default group."""
    chosen = [value]
    dist.broadcast_object_list(chosen, src=0)
    return chosen[0]
