"""DistributedDataParallel around the user's module: what it adds to a rank's step, and the one
plan every rank runs.

Measured on torch 2.14 (gloo, CPU), with DDP's defaults: a DDP step's own allocations peak at the
plain step's bytes (the reducer copies each gradient into its bucket and back in place), and DDP
holds one more copy of the gradients for the whole step, in the flat buckets it all-reduces. DDP
allocates its buckets at construction and again, in the order the gradients arrived, at the
forward after its first backward (holding both sets while it swaps them); from then on they stay.
So acprof settles them first: one step of the DDP module, then DDP's own rebuild, seen by the
profiler, whose new buckets are the storages every later step holds. They enter the profile, and
every measured step, as statics of the communication category.

What this does not measure is refused rather than guessed: gradient_as_bucket_view (the gradients
are the buckets), find_unused_parameters and static_graph (buckets DDP does not rebuild, or other
work in forward and backward), broadcast_buffers on a module with buffers (a copy whose release
gloo's worker thread times), and a DDP module that has trained already (its buckets were rebuilt
where acprof could not see them).
"""

import weakref
from typing import Any, Callable, List, Optional

import torch

from ..errors import AcprofError, BadInput
from . import recorder

# The bucket statics measured for each DDP module: they stay its buckets once rebuilt, and a later
# fit (another budget) of the same module cannot see them made again.
_settled: "weakref.WeakKeyDictionary[torch.nn.Module, List[dict]]" = weakref.WeakKeyDictionary()


def wrapper_of(model: Any) -> Optional[torch.nn.parallel.DistributedDataParallel]:
    """`model` where it is a DistributedDataParallel, else None."""
    return model if isinstance(model, torch.nn.parallel.DistributedDataParallel) else None


def refuse_sharded(model: torch.nn.Module) -> None:
    """Raises BadInput where the model, or a module in it, is sharded by FSDP (fully_shard, or the
    FullyShardedDataParallel wrapper): FSDP gathers and frees the parameters in custom autograd
    functions and hooks around each unit, which the recorded ops cannot carry, so without this the
    refusal named a custom Function in the user's own block."""
    if not torch.distributed.is_available():
        return
    from torch.distributed.fsdp import FSDPModule, FullyShardedDataParallel
    sharded = next((name or "its root" for name, m in model.named_modules()
                    if isinstance(m, (FSDPModule, FullyShardedDataParallel))), None)
    if sharded is not None:
        if sharded == "its root" and isinstance(model, FSDPModule):
            raise BadInput(f"{type(model).__name__} is sharded by fully_shard, which acprof.fit fits (a plan inside each "
                           "unit) and this call does not yet; call acprof.fit on every rank")
        raise BadInput(f"{type(model).__name__} is sharded by FSDP ({sharded}) below an unsharded root, which acprof "
                       "does not fit: FSDP gathers and frees parameters in autograd functions of its own; apply "
                       "fully_shard to the root too and call acprof.fit, or fit the model unsharded")


def check_supported(ddp: torch.nn.parallel.DistributedDataParallel) -> None:
    """Raises BadInput, naming the setting, where the DDP module's memory is not the one measured."""
    for setting in ("gradient_as_bucket_view", "find_unused_parameters", "static_graph"):
        if getattr(ddp, setting, False):
            raise BadInput(f"DistributedDataParallel({setting}=True) is not measured by acprof yet; wrap the "
                           f"model with {setting}=False to fit it under DDP")
    if getattr(ddp, "broadcast_buffers", False) and any(b.numel() for b in ddp.module.buffers()):
        # Measured (gloo, CPU): the flat copy of the buffers DDP broadcasts at each forward is freed
        # when gloo's worker thread lets its work go, at once in most steps, at the first gradient or
        # after the step in others, so the step's peak is not one number (8,192 B apart on a small
        # decoder, in about one step of eight).
        raise BadInput(f"DistributedDataParallel(broadcast_buffers=True) broadcasts {type(ddp.module).__name__}'s "
                       "buffers at each forward through a copy whose release gloo times, so no peak can be "
                       "promised; wrap it with broadcast_buffers=False (forward_sync_buffers=False from torch 2.14) "
                       "where the buffers are the same on every rank (constants, or running statistics synchronized "
                       "otherwise)")
    if any(p.device.type != "cpu" for p in ddp.module.parameters()):
        raise BadInput("acprof fits DistributedDataParallel on CPU ranks only so far; fit the model on one "
                       "device without DDP")


def check_same_shapes(ddp: torch.nn.parallel.DistributedDataParallel, shapes_text: str) -> None:
    """Raises BadInput on every rank where the ranks' example inputs differ in shape: the first
    rank's plan runs on all of them, and its prediction is every rank's only where their steps have
    the same shapes (then their bytes are the same, measured on 2 and 4 ranks)."""
    every = [None] * torch.distributed.get_world_size(ddp.process_group)
    torch.distributed.all_gather_object(every, shapes_text, group=ddp.process_group)
    if len(set(every)) > 1:
        ranks = "; ".join(f"rank {r}: {text}" for r, text in enumerate(every))
        raise BadInput(f"the ranks' example inputs differ in shape ({ranks}); fit every rank at the same shapes, "
                       "the largest batch each trains at")


def settled_buckets(ddp: torch.nn.parallel.DistributedDataParallel, step: Callable[[], None]) -> List[dict]:
    """The statics of DDP's gradient buckets as every later step holds them. The first call for a
    module runs `step` (one training step through `ddp`, on every rank, which leaves the model as it
    was) and then DDP's own rebuild under the profiler: each storage it allocates and keeps is a
    bucket. Raises BadInput where DDP does not rebuild (the module trained under DDP already)."""
    if ddp in _settled:
        return _settled[ddp]
    step()
    rebuilt = []
    record = recorder.what_the_profiler_saw(lambda: rebuilt.append(ddp.reducer._rebuild_buckets()))
    if not rebuilt[0]:
        raise BadInput("the DistributedDataParallel module has trained already, so DDP rebuilt its gradient "
                       "buckets where acprof could not measure them; call acprof.fit before the first step "
                       "under DDP")
    kept = {}
    for event in record.events:
        if event["delta_bytes"] > 0:
            kept[event["ptr"]] = event["delta_bytes"]
        else:
            kept.pop(event["ptr"], None)
    # What the rebuild allocated and still held when it returned: the buckets, and now and then a
    # few bytes of the broadcast that agreed on their order, which the collective's work object
    # frees a moment later. DDP states its buckets' sizes (a zero tensor like each); each is one
    # storage the rebuild allocated.
    unmatched = list(kept.items())
    statics = []
    for i, bucket in enumerate(ddp.reducer._get_zeros_like_grad_buckets()):
        nbytes = bucket.buffer().numel() * bucket.buffer().element_size()
        found = next((k for k, (_, size) in enumerate(unmatched) if size == nbytes), None)
        if found is None:
            raise AcprofError(f"DDP's gradient bucket {i} ({nbytes} B) was not among the storages its rebuild "
                              "allocated; please report it with the model and the torch version")
        ptr, _ = unmatched.pop(found)
        # A bucket as the allocator saw it: bytes (a bucket holds the gradients of one dtype, flat).
        statics.append({"ptr": ptr, "bytes": nbytes, "category": "communication",
                        "name": f"DDP gradient bucket {i}", "shape": [nbytes], "dtype": "uint8"})
    _settled[ddp] = statics
    return statics


def same_plan(ddp: torch.nn.parallel.DistributedDataParallel, plan: dict) -> dict:
    """The plan of the group's first rank, on every rank: each rank plans its own profile, whose step
    times differ with the machine's noise, and one job runs one trade-off, whose prediction holds on
    every rank whose step has the same shapes."""
    group = ddp.process_group
    chosen = [plan]
    torch.distributed.broadcast_object_list(chosen, src=torch.distributed.get_global_rank(group, 0), group=group)
    return chosen[0]


def any_rank(ddp: torch.nn.parallel.DistributedDataParallel, flag: bool) -> bool:
    """Whether `flag` holds on any rank of the DDP module's group."""
    value = torch.tensor([int(flag)])
    torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.MAX, group=ddp.process_group)
    return bool(value.item())
