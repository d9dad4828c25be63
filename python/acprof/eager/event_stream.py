"""One eager training step as the ordered stream the profile is derived from.

The CPU allocator reports every allocation and free to torch.profiler (profile_memory=True), as
it reports them to the C++ recorder's MemoryReportingInfoBase. The step marks what it runs with
record_function markers: a forward node (`acprof::node::<i>`), the loss (`acprof::loss`), a save
for backward and its release (`acprof::save::<id>`, `acprof::release::<id>`, from the
saved_tensors_hooks), a gradient autograd handed on or received (`acprof::gradient::<call>::<storage
pointer>::<edge>`, from hooks on the autograd nodes: gradient_hooks.py). The autograd engine marks each backward node itself
(`autograd::engine::evaluate_function: <name>`, carrying the node's sequence number). Walking the
profiler's event tree in order yields these and the allocations in the order they happened, the
IterationRecord of profiler/format/include/acprof/event_stream.h.
"""

from dataclasses import dataclass, field
from typing import List, Optional

import torch

NODE_MARKER = "acprof::node::"
LOSS_MARKER = "acprof::loss"
SAVE_MARKER = "acprof::save::"
RELEASE_MARKER = "acprof::release::"
GRADIENT_MARKER = "acprof::gradient::"
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "


@dataclass
class StepMark:
    phase: str                  # forward | loss | backward
    node: int = -1              # forward node for forward steps
    op: str = ""
    first_event: int = 0
    time_us: float = 0.0
    autograd_sequence_nr: int = -1   # backward steps: the autograd node's
    sequence_at_start: int = -1      # forward steps: the smallest sequence number its ops saw


@dataclass
class Allocation:
    ptr: int
    delta_bytes: int
    allocator_total: int
    step: int


@dataclass
class Observation:
    node: int
    event_index: int            # allocation events before it


@dataclass
class SaveEvent:
    save_id: int
    released: bool
    step: int
    event_index: int


@dataclass
class GradientReport:
    """profiler/format/include/acprof/event_stream.h GradientReport: a storage autograd handed on
    along the edge `target` (gradient_hooks.edge_key), or received as the gradient of it."""
    storage_ptr: int
    target: str
    event_index: int


@dataclass
class IterationRecord:
    events: List[Allocation] = field(default_factory=list)
    steps: List[StepMark] = field(default_factory=list)
    observations: List[Observation] = field(default_factory=list)
    saves: List[SaveEvent] = field(default_factory=list)
    gradients: List[GradientReport] = field(default_factory=list)


def _smallest_sequence_nr(event) -> int:
    found = -1
    stack = [event]
    while stack:
        e = stack.pop()
        sequence = getattr(e.extra_fields, "sequence_number", -1)
        if sequence is not None and sequence >= 0 and (found < 0 or sequence < found):
            found = sequence
        stack.extend(e.children)
    return found


def _backward_sequence_nr(event) -> int:
    """The sequence number of the autograd node an evaluate_function event ran: the event's own,
    or where that is -1, its first child's that has one (the node's own op). The profiler gives
    evaluate_function its first child's number, and where a hook marked a gradient first
    (gradient_hooks.py) that child is the mark, which has none."""
    own = getattr(event.extra_fields, "sequence_number", -1)
    if own is not None and own >= 0:
        return own
    for child in sorted(event.children, key=lambda e: e.start_time_ns):
        sequence = getattr(child.extra_fields, "sequence_number", -1)
        if sequence is not None and sequence >= 0:
            return sequence
    return -1


def _is_allocation(event) -> bool:
    return event.tag == torch._C._profiler._EventType.Allocation


def record_from_profiler(profiler: torch.profiler.profile, device: str = "cpu") -> IterationRecord:
    """The stream of one profiled step (markers and allocations of `device`), in order."""
    record = IterationRecord()
    roots = sorted(profiler.profiler.kineto_results.experimental_event_tree(), key=lambda e: e.start_time_ns)

    def current_step() -> int:
        return len(record.steps) - 1

    def visit(event) -> None:
        if _is_allocation(event):
            fields = event.extra_fields
            if str(fields.device.type) != device.split(":")[0]:
                return
            record.events.append(Allocation(fields.ptr, fields.alloc_size, fields.total_allocated,
                                            max(current_step(), 0)))
            return
        name = event.name
        duration_us = max(event.duration_time_ns, 0) / 1000.0
        node: Optional[int] = None
        if name.startswith(NODE_MARKER):
            node = int(name[len(NODE_MARKER):])
            record.steps.append(StepMark("forward", node, "", len(record.events), duration_us,
                                         sequence_at_start=_smallest_sequence_nr(event)))
        elif name == LOSS_MARKER:
            record.steps.append(StepMark("loss", -1, "loss", len(record.events), duration_us,
                                         sequence_at_start=_smallest_sequence_nr(event)))
        elif name.startswith(BACKWARD_PREFIX):
            record.steps.append(StepMark("backward", -1, name[len(BACKWARD_PREFIX):], len(record.events),
                                         duration_us, autograd_sequence_nr=_backward_sequence_nr(event)))
        elif name.startswith(SAVE_MARKER) or name.startswith(RELEASE_MARKER):
            released = name.startswith(RELEASE_MARKER)
            save_id = int(name[len(RELEASE_MARKER if released else SAVE_MARKER):])
            record.saves.append(SaveEvent(save_id, released, current_step(), len(record.events)))
            return
        elif name.startswith(GRADIENT_MARKER):
            ptr, target = name[len(GRADIENT_MARKER):].split("::", 1)
            record.gradients.append(GradientReport(int(ptr), target, len(record.events)))
            return
        for child in sorted(event.children, key=lambda e: e.start_time_ns):
            visit(child)
        if node is not None:
            record.observations.append(Observation(node, len(record.events)))

    for root in roots:
        visit(root)
    return record
