"""One eager training step as the ordered stream the profile is derived from.

The CPU allocator reports every allocation and free to torch.profiler (profile_memory=True), as
it reports them to the C++ recorder's MemoryReportingInfoBase. The step marks what it runs with
record_function markers: a forward node (`acprof::node::<i>`), the loss (`acprof::loss`), the optimizer's step
(`acprof::optimizer`), a save
for backward and its release (`acprof::save::<id>`, `acprof::release::<id>`, from the
saved_tensors_hooks), a gradient autograd handed on or received (`acprof::gradient::<storage
pointer>::<target>`, from hooks on the autograd nodes: gradient_hooks.py). The autograd engine marks
each backward node itself (`autograd::engine::evaluate_function: <name>`, carrying the node's
sequence number). Walking the profiler's event tree in order yields these and the allocations in
the order they happened: the iteration of an event-stream document
(profiler/format/include/acprof/event_stream_format.h), whose field names these dicts use. The
C++ engine derives the profile from it (acprof.engine); nothing here interprets the stream.
"""

import collections
from dataclasses import dataclass, field
from typing import List, Tuple

import torch

from . import gradient_hooks

NODE_MARKER = "acprof::node::"
LOSS_MARKER = "acprof::loss"
OPTIMIZER_MARKER = "acprof::optimizer"
SAVE_MARKER = "acprof::save::"
RELEASE_MARKER = "acprof::release::"
GRADIENT_MARKER = gradient_hooks.GRADIENT_MARKER
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "


@dataclass
class ProfiledStep:
    """What the profiler's tree holds of one step, in order, in the stream's field names:
    `steps`, `events` (allocations), `saved_tensors` (a save's storage_ptr is filled by the
    recorder, which knows it; a release has none), `gradients`, and `node_ends`: (node, number of
    events before the end of its step), where the recorder's observations of that node's outputs
    happened."""
    steps: List[dict] = field(default_factory=list)
    events: List[dict] = field(default_factory=list)
    saved_tensors: List[dict] = field(default_factory=list)
    gradients: List[dict] = field(default_factory=list)
    node_ends: List[Tuple[int, int]] = field(default_factory=list)


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


def record_from_profiler(profiler: torch.profiler.profile, device: str = "cpu",
                         other_threads_by_time: bool = False) -> ProfiledStep:
    """The stream of one profiled step (markers and allocations of `device`), in order. The profiler
    gives each thread's events a tree of their own; by default a tree is walked whole where it
    starts. With `other_threads_by_time`, the allocations of threads other than the step's own (the
    one with the most events) enter the stream where they happened among the step's own: a
    communication backend's worker thread allocates scratch space while the step's thread waits on
    its collective (gloo, sharded.py), and walked whole where its tree starts that scratch would land
    after the wait's whole subtree, beside what the step allocated after the wait."""
    record = ProfiledStep()
    roots = sorted(profiler.profiler.kineto_results.experimental_event_tree(), key=lambda e: e.start_time_ns)
    foreign: List = []
    if other_threads_by_time and roots:
        threads = collections.Counter(root.start_tid for root in roots)
        own_thread = threads.most_common(1)[0][0]
        stack = [root for root in roots if root.start_tid != own_thread]
        while stack:
            event = stack.pop()
            if _is_allocation(event):
                foreign.append(event)
            stack.extend(event.children)
        foreign.sort(key=lambda e: e.start_time_ns)
        roots = [root for root in roots if root.start_tid == own_thread]
    next_foreign = [0]

    def current_step() -> int:
        return len(record.steps) - 1

    def step(phase: str, event, **fields) -> None:
        record.steps.append(dict(phase=phase, first_event=len(record.events),
                                 time_us=max(event.duration_time_ns, 0) / 1000.0, **fields))

    def allocation(event) -> None:
        fields = event.extra_fields
        if str(fields.device.type) == device.split(":")[0]:
            record.events.append({"ptr": fields.ptr, "delta_bytes": fields.alloc_size,
                                  "allocator_total": fields.total_allocated, "step": max(current_step(), 0)})

    def other_threads_until(time_ns: int) -> None:
        while next_foreign[0] < len(foreign) and foreign[next_foreign[0]].start_time_ns <= time_ns:
            allocation(foreign[next_foreign[0]])
            next_foreign[0] += 1

    def visit(event) -> None:
        other_threads_until(event.start_time_ns)
        if _is_allocation(event):
            allocation(event)
            return
        name = event.name
        node = None
        if name.startswith(NODE_MARKER):
            node = int(name[len(NODE_MARKER):])
            step("forward", event, node=node, sequence_at_start=_smallest_sequence_nr(event))
        elif name == LOSS_MARKER:
            step("loss", event, op="loss", sequence_at_start=_smallest_sequence_nr(event))
        elif name == OPTIMIZER_MARKER:
            step("optimizer", event, op="optimizer.step")
        elif name.startswith(BACKWARD_PREFIX):
            step("backward", event, op=name[len(BACKWARD_PREFIX):], autograd_sequence_nr=_backward_sequence_nr(event))
        elif name.startswith(SAVE_MARKER) or name.startswith(RELEASE_MARKER):
            released = name.startswith(RELEASE_MARKER)
            save_id = int(name[len(RELEASE_MARKER if released else SAVE_MARKER):])
            record.saved_tensors.append({"save_id": save_id, "storage_ptr": None, "released": released,
                                         "step": current_step(), "event_index": len(record.events)})
            return
        elif name.startswith(GRADIENT_MARKER):
            ptr, target = name[len(GRADIENT_MARKER):].split("::", 1)
            record.gradients.append({"storage_ptr": int(ptr), "target": gradient_hooks.target_of_marker(target),
                                     "event_index": len(record.events)})
            return
        for child in sorted(event.children, key=lambda e: e.start_time_ns):
            visit(child)
        if node is not None:
            record.node_ends.append((node, len(record.events)))

    for root in roots:
        visit(root)
    other_threads_until(float("inf"))
    return _with_unrecorded_frees(record) if other_threads_by_time else record


def _with_unrecorded_frees(record: ProfiledStep) -> ProfiledStep:
    """The stream with the frees the profiler did not record put back where the allocator's own
    total says they happened. The CPU allocator keeps one total for every thread and every event
    carries it (`allocator_total`), but the profiler records an event only on a thread it profiles:
    gloo's worker thread, which profiles the collective it runs, destroys the work object after it,
    and where the step's thread has let the work go by then, the storages the work held (gloo's copy
    of a reduce-scatter input) are freed there unrecorded, and the stream holds them for the rest
    of the step. Where an event's total is lower than the one before plus its own delta, the
    difference was freed in between: the storage alive in the stream with exactly that many bytes,
    the latest allocated, is freed there; a difference no live storage matches is left as it is."""
    events, live = [], {}
    moved = []  # old index -> new index
    for i, event in enumerate(record.events):
        if events and "allocator_total" in event and "allocator_total" in events[-1]:
            gap = events[-1]["allocator_total"] + event["delta_bytes"] - event["allocator_total"]
            if gap > 0:
                matching = [ptr for ptr, (nbytes, _) in live.items() if nbytes == gap]
                if matching:
                    ptr = max(matching, key=lambda p: live[p][1])
                    del live[ptr]
                    events.append({"ptr": ptr, "delta_bytes": -gap, "step": event["step"],
                                   "allocator_total": events[-1]["allocator_total"] - gap})
        moved.append(len(events))
        events.append(event)
        if event["delta_bytes"] > 0:
            live[event["ptr"]] = (event["delta_bytes"], i)
        else:
            live.pop(event["ptr"], None)
    if len(events) == len(record.events):
        return record
    moved.append(len(events))  # an index one past the last event stays one past it

    def at(index: int) -> int:
        return moved[index]
    for step in record.steps:
        step["first_event"] = at(step["first_event"])
    for mark in record.saved_tensors + record.gradients:
        mark["event_index"] = at(mark["event_index"])
    record.node_ends = [(node, at(end)) for node, end in record.node_ends]
    record.events = events
    return record
