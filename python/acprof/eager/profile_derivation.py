"""profile.json from one recorded eager step: the Python twin of deriveProfile and
timelineFromTensors (profiler/format/src/event_stream.cpp, profile_format.cpp).

It applies the same rules to the same kind of stream, so the planner reads an eager profile as it
reads a TorchScript one: each storage's [alloc_event, free_event) and category, which forward
nodes read it, its first and last use, who saved it for backward and when that save was released,
whose gradient it holds (gradient_of, where the step was recorded with gradient_hooks.py),
the allocator's counters per step, and which backward steps belong to which forward node.
"""

import bisect
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set

from ..contract import CATEGORIES, PHASES, PROFILE_SCHEMA_VERSION
from .event_stream import IterationRecord


@dataclass
class StaticStorage:
    ptr: int
    bytes: int
    category: str
    name: str
    shape: List[int]
    dtype: str


@dataclass
class ObservedValue:
    """A node's output seen right after the node ran (list_index >= 0: an element of a tuple)."""
    node: int
    list_index: int
    storage_ptr: int
    shape: List[int]
    dtype: str
    requires_grad: bool
    bytes: int
    gradient_target: Optional[str] = None   # gradient_hooks.edge_key, where it requires grad


@dataclass
class MeasuredStep:
    record: IterationRecord
    observed: Dict[int, List[ObservedValue]]   # by node
    statics: List[StaticStorage]
    gradient_ptrs: Set[int]
    output_ptrs: Set[int]
    input_ptrs: List[int]
    input_bytes: List[int]
    device: str = "cpu"
    gradients_recorded: bool = False     # the step ran with gradient_hooks: tensors say gradient_of


def step_end_event(steps: Sequence[dict], step: int, event_count: int) -> int:
    """The end of a step's events (exclusive): the next step's first event, or event_count after
    the last step (profile_format.h's stepEndEvent)."""
    return steps[step + 1]["first_event"] if step + 1 < len(steps) else event_count


def _new_tensor(tensors: List[dict], nbytes: int, alloc_event: int, device: str) -> dict:
    t = {"id": len(tensors), "bytes": nbytes, "shape": [], "dtype": "", "device": device,
         "category": "temporary", "name": "", "producer_node": -1, "alloc_event": alloc_event,
         "free_event": -2, "alloc_step": -1, "free_step": -1, "users": [],
         "last_forward_use_step": -1, "first_backward_use_step": -1, "saved_by": []}
    tensors.append(t)
    return t


def tensors_of_step(step: MeasuredStep, nodes: List[dict], save_ptrs: Dict[int, int],
                    value_ids: Optional[Dict[str, int]] = None):
    """Replays the stream: the tensor records, which storage each value lived on, and the
    storages alive at the end by pointer (TensorBook in event_stream.cpp). `value_ids` (value
    name to id) names the values each gradient belongs to."""
    record = step.record
    tensors: List[dict] = []
    live: Dict[int, int] = {}

    def new_tensor(nbytes: int, alloc_event: int) -> dict:
        t = _new_tensor(tensors, nbytes, alloc_event, step.device)
        if step.gradients_recorded:
            t["gradient_of"] = []  # empty until a gradient report names it
        return t

    for s in step.statics:
        t = new_tensor(s.bytes, -1)
        t.update(category=s.category, name=s.name, shape=list(s.shape), dtype=s.dtype)
        live[s.ptr] = t["id"]
    value_tensor: Dict[str, int] = {}
    open_saves: Dict[int, tuple] = {}
    target_values: Dict[str, List[int]] = {}   # the values each autograd edge's gradient is
    observations = sorted(record.observations, key=lambda o: o.event_index)
    saves = record.saves
    gradients = record.gradients
    next_observed = next_saved = next_gradient = 0

    def observe(node: int) -> None:
        for seen in step.observed.get(node, []):
            tid = live.get(seen.storage_ptr)
            if tid is None or not nodes[node]["outputs"]:
                continue
            name = nodes[node]["outputs"][0]
            if seen.gradient_target is not None and value_ids is not None and name in value_ids:
                named = target_values.setdefault(seen.gradient_target, [])
                if value_ids[name] not in named:
                    named.append(value_ids[name])
            if seen.list_index >= 0:
                value_tensor.setdefault(f"{name}[{seen.list_index}]", tid)
            else:
                value_tensor.setdefault(name, tid)
            t = tensors[tid]
            if not t["shape"] and not t["dtype"]:
                t["shape"], t["dtype"] = list(seen.shape), seen.dtype
                if not t["name"]:
                    t["name"] = name if seen.list_index < 0 else f"{name}[{seen.list_index}]"

    def saved(event) -> None:
        if not event.released:
            tid = live.get(save_ptrs.get(event.save_id, -1))
            if tid is None:
                return
            mark = record.steps[event.step] if event.step >= 0 else None
            node = mark.node if mark is not None and mark.phase == "forward" else -1
            open_saves[event.save_id] = (tid, node)
            return
        opened = open_saves.pop(event.save_id, None)
        if opened is not None:
            tensors[opened[0]]["saved_by"].append({"node": opened[1], "release_step": event.step})

    def gradient(report) -> None:
        # TensorBook::gradient in event_stream.cpp: every hook call that reports a storage made
        # in the step for an edge that leads to a value names it as that value's gradient.
        tid = live.get(report.storage_ptr)
        if tid is None or "gradient_of" not in tensors[tid] or tensors[tid]["alloc_event"] < 0:
            return
        named = target_values.get(report.target)
        if named is None:
            return
        of = tensors[tid]["gradient_of"]
        of.extend(v for v in named if v not in of)

    def catch_up(events_done: int) -> None:
        nonlocal next_observed, next_saved, next_gradient
        while next_observed < len(observations) and observations[next_observed].event_index <= events_done:
            observe(observations[next_observed].node)
            next_observed += 1
        while next_saved < len(saves) and saves[next_saved].event_index <= events_done:
            saved(saves[next_saved])
            next_saved += 1
        while next_gradient < len(gradients) and gradients[next_gradient].event_index <= events_done:
            gradient(gradients[next_gradient])
            next_gradient += 1

    for e, event in enumerate(record.events):
        catch_up(e)
        if event.delta_bytes > 0:
            t = new_tensor(event.delta_bytes, e)
            t["alloc_step"] = event.step
            live[event.ptr] = t["id"]
        else:
            tid = live.pop(event.ptr, None)
            if tid is None:  # allocated before the step by something not enumerated
                tid = new_tensor(-event.delta_bytes, -1)["id"]
            tensors[tid]["free_event"] = e
            tensors[tid]["free_step"] = event.step
    catch_up(1 << 62)
    for tid, node in open_saves.values():
        tensors[tid]["saved_by"].append({"node": node, "release_step": -1})
    ptr_at_end = {tid: ptr for ptr, tid in live.items()}
    return tensors, value_tensor, ptr_at_end, live


def _link_backward_steps(steps: List[dict], nodes: List[dict], record: IterationRecord) -> None:
    """A backward step belongs to the forward node whose ops were numbered from the largest
    sequence number at or below its own (fillNodes in event_stream.cpp)."""
    starts = []
    for s, mark in enumerate(record.steps):
        if mark.phase == "loss" and mark.sequence_at_start >= 0:
            starts.append((mark.sequence_at_start, -1))
        if mark.phase != "forward" or mark.node < 0:
            continue
        node = nodes[mark.node]
        node["forward_step"] = s
        node["forward_time_us"] = mark.time_us
        if mark.sequence_at_start >= 0:
            starts.append((mark.sequence_at_start, mark.node))
    starts.sort()
    for s, mark in enumerate(record.steps):
        if mark.phase != "backward" or mark.autograd_sequence_nr < 0:
            continue
        at = bisect.bisect_right(starts, (mark.autograd_sequence_nr, 1 << 62))
        if at == 0:
            continue
        node = starts[at - 1][1]
        if node < 0:
            continue
        steps[s]["node"] = node
        steps[s]["scope"] = nodes[node]["scope"]
        nodes[node]["backward_steps"].append(s)


def derive_profile(meta: dict, nodes: List[dict], values: List[dict], graph_outputs: List[int],
                   step: MeasuredStep, save_ptrs: Dict[int, int]) -> dict:
    record = step.record
    event_count = len(record.events)
    steps = []
    for s, mark in enumerate(record.steps):
        node = mark.node if mark.phase == "forward" else -1
        steps.append({"index": s, "phase": mark.phase, "node": node,
                      "op": nodes[node]["kind"] if node >= 0 else mark.op,
                      "scope": nodes[node]["scope"] if node >= 0 else "",
                      "first_event": mark.first_event, "time_us": mark.time_us,
                      "allocator_bytes": 0, "allocator_peak_bytes": 0})
    _link_backward_steps(steps, nodes, record)

    at_start = record.events[0].allocator_total - record.events[0].delta_bytes if record.events else 0
    meta["allocator_bytes_at_start"] = at_start
    allocator_now = allocator_peak = at_start
    for s, st in enumerate(steps):
        end = step_end_event(steps, s, event_count)
        st["allocator_peak_bytes"] = allocator_now
        for e in range(st["first_event"], end):
            allocator_now = record.events[e].allocator_total
            st["allocator_peak_bytes"] = max(st["allocator_peak_bytes"], allocator_now)
        st["allocator_bytes"] = allocator_now
        allocator_peak = max(allocator_peak, st["allocator_peak_bytes"])

    tensors, value_tensor, ptr_at_end, live = tensors_of_step(step, nodes, save_ptrs,
                                                              {value["name"]: value["id"] for value in values})
    for value in values:
        if value["producer_node"] < 0:
            i = value["id"] - 1
            if 0 <= i < len(step.input_bytes):
                value["bytes"] = step.input_bytes[i]
                if step.input_ptrs[i] in live:
                    value_tensor.setdefault(value["name"], live[step.input_ptrs[i]])
    # Which storage each value was (deriveProfile's GraphValue::tensor).
    for value in values:
        value["tensor"] = value_tensor.get(value["name"], -1)

    for t in tensors:
        if t["free_event"] == -2:
            t["free_event"], t["free_step"] = event_count, -1
        if t["alloc_event"] < 0:
            continue
        alloc_phase = steps[t["alloc_step"]]["phase"]
        if alloc_phase == "forward":
            t["producer_node"] = steps[t["alloc_step"]]["node"]
        alive_at_end = t["free_event"] == event_count
        ptr = ptr_at_end.get(t["id"]) if alive_at_end else None
        free_phase = "optimizer" if alive_at_end else steps[t["free_step"]]["phase"]
        if ptr is not None and ptr in step.gradient_ptrs:
            t["category"] = "gradient"
        elif ptr is not None and ptr in step.output_ptrs:
            t["category"] = "output"
        elif alive_at_end and alloc_phase == "optimizer":
            t["category"] = "optimizer_state"
        elif alloc_phase == "forward" and (alive_at_end or free_phase != "forward"):
            t["category"] = "activation"
        else:
            t["category"] = "temporary"

    def tensors_of_value(name: str) -> List[int]:
        if name in value_tensor:
            return [value_tensor[name]]
        elements = []
        i = 0
        while f"{name}[{i}]" in value_tensor:
            elements.append(value_tensor[f"{name}[{i}]"])
            i += 1
        return elements

    for node in nodes:
        if node["role"] == "duplicable":
            continue
        read = set()
        for v in node["reads"]:
            read.update(tensors_of_value(values[v]["name"]))
        for tid in sorted(read):
            tensors[tid]["users"].append(node["id"])
    for t in tensors:
        for user in t["users"]:
            t["last_forward_use_step"] = max(t["last_forward_use_step"], nodes[user]["forward_step"])
        related = list(t["users"]) + ([t["producer_node"]] if t["producer_node"] >= 0 else [])
        for n in related:
            for s in nodes[n]["backward_steps"]:
                if t["first_backward_use_step"] < 0 or s < t["first_backward_use_step"]:
                    t["first_backward_use_step"] = s

    profile = {"format": "acprof-profile", "schema_version": PROFILE_SCHEMA_VERSION, "meta": meta,
               "event_count": event_count, "summary": {"allocator_peak_bytes": allocator_peak},
               "nodes": nodes, "values": values, "graph_outputs": graph_outputs, "steps": steps,
               "tensors": tensors}
    timeline_from_tensors(profile)
    return profile


def live_bytes_from_start(tensors: Sequence[dict], event_count: int) -> List[List[int]]:
    """Live bytes per category before the first event (index 0) and after each event e (e + 1)."""
    live = [[0] * len(CATEGORIES) for _ in range(event_count + 1)]
    for t in tensors:
        c = CATEGORIES.index(t["category"])
        if t["alloc_event"] >= event_count:
            continue
        live[max(t["alloc_event"], -1) + 1][c] += t["bytes"]
        if 0 <= t["free_event"] < event_count:
            live[t["free_event"] + 1][c] -= t["bytes"]
    for e in range(1, event_count + 1):
        for c in range(len(CATEGORIES)):
            live[e][c] += live[e - 1][c]
    return live


def timeline_from_tensors(profile: dict) -> None:
    live = live_bytes_from_start(profile["tensors"], profile["event_count"])
    summary = profile["summary"]
    steps = profile["steps"]
    peak, peak_breakdown, peak_step = sum(live[0]), live[0], 0 if steps else -1
    event = 0
    for i, step in enumerate(steps):
        end = step_end_event(steps, i, profile["event_count"])
        step_peak = sum(live[event])
        while event < end:
            total = sum(live[event + 1])
            step_peak = max(step_peak, total)
            if total > peak:
                peak, peak_breakdown, peak_step = total, live[event + 1], i
            event += 1
        step["bytes_at_end"] = dict(zip(CATEGORIES, live[event]))
        step["peak_bytes"] = step_peak
    summary["peak_bytes"] = peak
    summary["peak_step"] = peak_step
    summary["peak_breakdown"] = dict(zip(CATEGORIES, peak_breakdown))
    phase_time = {p: 0.0 for p in PHASES}
    for step in steps:
        phase_time[step["phase"]] += step["time_us"]
    summary["phase_time_us"] = phase_time


def peak_bytes(step: MeasuredStep) -> int:
    """The peak of a step's replay (statics, then every event): summary.peak_bytes of its profile,
    also for a step run without a graph (a cut model, measured the way its profile was)."""
    tensors = tensors_of_step(step, [], {})[0]
    event_count = len(step.record.events)
    for t in tensors:
        if t["free_event"] == -2:
            t["free_event"] = event_count
    return max(sum(row) for row in live_bytes_from_start(tensors, event_count))
