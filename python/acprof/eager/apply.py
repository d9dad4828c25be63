"""A plan applied to an eager module: a module whose forward runs the recorded graph with each
planned segment under a checkpoint (checkpoint.py).

The plan names each segment's node range and its boundary (input, output and replayed values),
computed once by the planner from the profile's cut facts; this reads them and does not decide
them again. Nodes outside segments, and attribute reads inside them, run in order; a segment runs
as one instruction where its last node stood, so every value it reads is made by then. Inside a
segment, each use of an outside tensor that may need grad is a checkpoint input of its own
(graph_surgery.cpp does the same for TorchScript), and inputs are passed latest use first.
"""

import contextlib
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.autograd.profiler import record_function

from .checkpoint import SegmentRun, checkpoint
from .event_stream import NODE_MARKER
from .graph import EagerGraph
from .program import Instruction, run_program


# The kind of a checkpointed segment's node (common/include/acprof/checkpoint_operator.h).
CHECKPOINT_KIND = "acprof::checkpoint"


def _marked(index: int, instruction: Instruction) -> Instruction:
    def run(env):
        with record_function(f"{NODE_MARKER}{index}"):
            return instruction.run(env)
    return Instruction(instruction.reads, run)


class PlanMismatch(ValueError):
    """The plan does not fit this graph (made for another model or another capture)."""


class _Segment:
    def __init__(self, graph: EagerGraph, plan_segment: dict):
        self.graph = graph
        first, last = plan_segment["first_node"], plan_segment["last_node"]
        if not (0 <= first <= last < len(graph.nodes)):
            raise PlanMismatch(f"plan segment [{first}, {last}] is not a range of the graph's {len(graph.nodes)} nodes")
        by_name = {v.name: v.id for v in graph.values}
        try:
            boundary_inputs = [by_name[name] for name in plan_segment["input_values"]]
            self.outputs = [by_name[name] for name in plan_segment["output_values"]]
            replayed = {by_name[name] for name in plan_segment.get("replayed_inputs", [])}
        except KeyError as missing:
            raise PlanMismatch(f"plan segment [{first}, {last}] names value {missing}, which this graph does not "
                               "have; make the plan from a profile of this model") from None
        self.first, self.last = first, last
        self.nodes = [n for n in graph.nodes[first:last + 1] if n.role == "compute"]
        made_inside = {n.value for n in self.nodes}
        boundary = set(boundary_inputs)
        # slot_of_use[(node, use)] -> input slot; values read once per slot otherwise.
        slots: List[int] = []
        self.slot_of_use: Dict[Tuple[int, int], int] = {}
        shared_slot: Dict[int, int] = {}
        for node in self.nodes:
            for use, v in enumerate(node.reads):
                if v in made_inside:
                    continue
                if v not in boundary:
                    raise PlanMismatch(f"plan segment [{first}, {last}]: node {node.index} reads {graph.values[v].name}, "
                                       "which is not among the plan's inputs; make the plan from a profile of this model")
                value = graph.values[v]
                per_use = value.is_tensor and value.requires_grad and v not in replayed
                if per_use or v not in shared_slot:
                    slots.append(v)
                    if not per_use:
                        shared_slot[v] = len(slots) - 1
                self.slot_of_use[(node.index, use)] = shared_slot[v] if not per_use else len(slots) - 1
        # Latest use first: the engine adds returned gradients in input order, the unsplit
        # backward reached the later use first.
        count = len(slots)
        self.input_values = list(reversed(slots))
        self.slot_of_use = {key: count - 1 - slot for key, slot in self.slot_of_use.items()}
        written = [count - 1 - s for s, v in enumerate(slots) if v in replayed]
        # What a holder outside the dataflow kept past the forward (graph.held_values) leaves the
        # segment too, without a gradient, so that the outer forward keeps it as long as that holder did.
        differentiable = [graph.values[v].requires_grad for v in self.outputs]
        held = [v for v in graph.held_values if v in made_inside and v not in self.outputs]
        self.outputs += held
        self.run = SegmentRun(self._run, written, differentiable + [False] * len(held))

    def _run(self, inputs: List[torch.Tensor]) -> List[Any]:
        graph = self.graph

        def instruction(node):
            def run(env):
                def value(fx_node, use):
                    slot = self.slot_of_use.get((node.index, use))
                    return inputs[slot] if slot is not None else env[graph.value_of_fx[fx_node]]
                return {node.value: graph.run_node(node, value)}
            return Instruction([v for use, v in enumerate(node.reads) if (node.index, use) not in self.slot_of_use], run)

        env: Dict[int, Any] = {}
        run_program([instruction(n) for n in self.nodes], env, keep=self.outputs)
        return [env[v] for v in self.outputs]

    def instruction(self) -> Instruction:
        def run(env):
            results = checkpoint(self.run, [env[v] for v in self.input_values])
            return dict(zip(self.outputs, results))
        return Instruction(list(self.input_values), run)


class CheckpointedModule(torch.nn.Module):
    """The module with the plan's segments checkpointed; it shares the module's parameters and
    buffers, so training it trains the module. In eval mode it runs the module itself: the graph is
    the training step's, and without a backward there is nothing to recompute."""

    def __init__(self, module: torch.nn.Module, graph: EagerGraph, plan: dict, profile: Optional[dict] = None):
        super().__init__()
        self.module = module
        self.graph = graph
        # What it was made from: the plan and its profile apply again to a capture at other shapes.
        self.plan, self.profile = plan, profile
        self._marking = False
        self.segments = sorted((_Segment(graph, s) for s in plan["segments"]), key=lambda s: s.first)
        for a, b in zip(self.segments, self.segments[1:]):
            if b.first <= a.last:
                raise PlanMismatch(f"plan segments [{a.first}, {a.last}] and [{b.first}, {b.last}] overlap")

    def _layout(self) -> List[Tuple[str, str, Any]]:
        """Forward's instructions in order as (kind, scope, what runs): a node of the graph where it
        runs alone; a segment, kind `acprof::checkpoint` with its first node's scope, where one runs
        (the TorchScript rewrite's operator has the same kind, so report.html marks its forward and
        recompute alike). The kind and scope are those of its node in a profile of this module's step."""
        segment_at_last = {s.last: s for s in self.segments}
        inside = {n.index for s in self.segments for n in s.nodes}
        layout = []
        for node in self.graph.nodes:
            if node.index not in inside:
                layout.append((node.kind, node.scope, node))
            if node.index in segment_at_last:
                segment = segment_at_last[node.index]
                layout.append((CHECKPOINT_KIND, segment.nodes[0].scope if segment.nodes else "", segment))
        return layout

    def _instructions(self) -> List[Instruction]:
        graph = self.graph

        def instruction(what) -> Instruction:
            if isinstance(what, _Segment):
                return what.instruction()

            def run(env, node=what):
                return {node.value: graph.run_node(node, lambda fx, use: env[graph.value_of_fx[fx]])}
            return Instruction([v for v in what.reads if v != 0], run)

        program = [instruction(what) for _, _, what in self._layout()]
        if self._marking:
            return [_marked(i, step) for i, step in enumerate(program)]
        return program

    def instruction_nodes(self) -> List[dict]:
        """The nodes of a profile of this module's step recorded under marking_instructions(), as
        profile.json lists nodes (no values: the report reads the timeline, not the graph)."""
        return [{"id": i, "kind": kind, "scope": scope, "inputs": [], "outputs": [], "role": "compute",
                 "barrier_reason": "", "reads": [], "writes": [], "forward_step": -1, "forward_time_us": 0.0,
                 "backward_steps": []} for i, (kind, scope, _) in enumerate(self._layout())]

    @contextlib.contextmanager
    def marking_instructions(self):
        """Within it, forward runs each instruction under the profiler's node marker of its index
        in instruction_nodes(), so a recorded step of this module is a profile with those nodes."""
        self._marking = True
        try:
            yield self
        finally:
            self._marking = False

    def forward(self, *inputs: torch.Tensor):
        if not self.training:
            return self.module(*inputs)
        graph = self.graph
        env: Dict[int, Any] = {graph.value_of_fx[p]: x for p, x in zip(graph.placeholders, inputs)}
        with graph.running():
            run_program(self._instructions(), env, keep=graph.graph_outputs + graph.held_values)
        flat = [env[v] for v in graph.graph_outputs]
        env.clear()
        return graph.unflatten_output(flat)


def _read_json(path_or_content):
    if isinstance(path_or_content, dict):
        return path_or_content
    with open(path_or_content) as handle:
        return json.load(handle)


def take_profile_facts(graph: EagerGraph, profile: dict) -> None:
    """The profile's facts of the values (whether each may need grad, as the profiled step saw
    it) onto a graph captured again, after checking it is the graph that was profiled."""
    kinds = [n["kind"] for n in profile["nodes"]]
    if kinds != [n.kind for n in graph.nodes] or len(profile["values"]) != len(graph.values):
        raise PlanMismatch("the plan's profile was recorded from another graph (its nodes differ from this "
                           "module's); profile this module and plan again")
    for value, recorded in zip(graph.values, profile["values"]):
        value.requires_grad = recorded["requires_grad"]


def apply_plan(module: torch.nn.Module, plan, profile=None, graph: EagerGraph = None,
               example_inputs: Sequence[torch.Tensor] = None) -> CheckpointedModule:
    """`module` with `plan` (plan.json's path or content) applied. The plan's profile (its
    profile_path unless given, path or content) supplies the graph's facts. Pass the EagerGraph
    of `module`, or example inputs to record it the way the profile did (its seed and autocast)."""
    plan = _read_json(plan)
    profile = _read_json(profile if profile is not None else plan["profile_path"])
    if graph is None:
        meta = profile.get("meta", {})
        graph = EagerGraph(module, example_inputs, int(meta.get("seed", 0)), meta.get("autocast", ""))
    take_profile_facts(graph, profile)
    return CheckpointedModule(module, graph, plan, profile)
