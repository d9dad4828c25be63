"""Recording one eager training step into profile.json, and measuring a step the same way.

The step is the one the C++ recorder runs (profiler/recorder): the module in train mode, fresh
gradients, the generator seeded before forward, forward through the captured graph node by node,
the loss, backward, and the optimizer's step where one is given (the user's own torch.optim
optimizer: its state, made by the warm-up step, is alive when the measured step starts, and the
temporaries of its step are the step's); one warm-up step first, which is never measured. The
module, its optimizer and the generator are left as they were. What autograd saves for
backward is seen by saved_tensors_hooks: each save's holder marks the stream when it is made and
when autograd lets it go, so the profile says which node's step saved a storage and which step
released it.
"""

import contextlib
import gc
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
from torch.autograd.profiler import record_function

from .. import engine
from ..contract import EVENT_STREAM_SCHEMA_VERSION, LOSSES
from . import event_stream, gradient_hooks
from .autocast_state import autocast_context
from .graph import EagerGraph
from .training_state import training_state_kept
from .program import Instruction, run_program


def compute_loss(output: Any, loss, target: Optional[torch.Tensor]) -> torch.Tensor:
    """The step's loss: `loss(output)` where loss is a callable (the user's own), else the
    recorder's loss of that name (models/training_step.py compute_loss): cross entropy of the first
    output tensor against the target (classes last when the target has one element per row), or
    the sum over the floating-point output tensors of each one's mean or sum."""
    if callable(loss):
        value = loss(output)
        if not isinstance(value, torch.Tensor) or value.numel() != 1 or not value.is_floating_point():
            raise ValueError(f"the loss function returned {type(value).__name__}"
                             f"{list(value.shape) if isinstance(value, torch.Tensor) else ''}, not a scalar "
                             "floating-point tensor; return the loss to call backward() on")
        return value
    tensors = [t for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]
    if not tensors or (loss != "cross_entropy" and not any(t.is_floating_point() for t in tensors)):
        raise ValueError(f"the model's output ({type(output).__name__}) holds no floating-point tensor to take a "
                         "loss of; return the output tensors, or pass a loss function")
    if loss == "cross_entropy":
        logits = tensors[0]
        if target.numel() * logits.size(-1) == logits.numel():
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))
        return torch.nn.functional.cross_entropy(logits, target)
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")
    parts = [t.sum() if loss == "sum" else t.mean() for t in tensors if t.is_floating_point()]
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def loss_name(loss) -> str:
    """The loss as profile.json's meta names it: a rule's name, or `python:` and the callable's."""
    return f"python:{getattr(loss, '__qualname__', type(loss).__name__)}" if callable(loss) else loss


def optimizer_name(optimizer: Optional[torch.optim.Optimizer]) -> str:
    """The optimizer as meta names it: "none", or its class's name as `acprof profile
    --optimizer` spells the kinds it knows ("adamw")."""
    return "none" if optimizer is None else type(optimizer).__name__.lower()


def _optimizer_state_tensors(optimizer: Optional[torch.optim.Optimizer], module: torch.nn.Module):
    """(name, tensor) of what the optimizer keeps between steps, named after the parameter as the
    C++ recorder names it ("fc.weight.exp_avg")."""
    if optimizer is None:
        return []
    names = {id(p): n for n, p in module.named_parameters()}
    return [(f"{names.get(id(p), 'parameter')}.{key}", value) for p, state in optimizer.state.items()
            for key, value in state.items() if isinstance(value, torch.Tensor)]


def local_tensor(t: torch.Tensor) -> torch.Tensor:
    """The tensor whose storage this process holds: a DTensor's local shard (FSDP2's parameters,
    gradients and optimizer state are DTensors), any other tensor itself."""
    if torch.distributed.is_available() and isinstance(t, torch.distributed.tensor.DTensor):
        return t.to_local()
    return t


def _storage(t: torch.Tensor) -> tuple:
    storage = local_tensor(t).untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def tensor_spec(t: torch.Tensor) -> str:
    return f"{str(t.dtype).replace('torch.', '')}[{','.join(str(s) for s in t.shape)}]"


class _SavedTensorMarks:
    """saved_tensors_hooks that mark each save and its release in the profiler's stream."""

    class Holder:
        def __init__(self, marks, tensor):
            marks.count += 1
            self.save_id, self.tensor = marks.count, tensor
            marks.storage_ptr[self.save_id] = _storage(tensor)[0]
            with record_function(f"{event_stream.SAVE_MARKER}{self.save_id}"):
                pass

        def __del__(self):
            with record_function(f"{event_stream.RELEASE_MARKER}{self.save_id}"):
                pass

    def __init__(self):
        self.count = 0
        self.storage_ptr: Dict[int, int] = {}

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(lambda t: self.Holder(self, t), lambda h: h.tensor)


def _statics(module: torch.nn.Module, graph: Optional[EagerGraph], inputs: Sequence[torch.Tensor],
             target: Optional[torch.Tensor], optimizer: Optional[torch.optim.Optimizer]) -> List[dict]:
    """Storages alive when the step starts, once each (the stream's statics): parameters and
    buffers (and the graph's lifted constants) as weights, the optimizer's state, inputs and target
    as inputs."""
    statics: Dict[int, dict] = {}

    def add(t: torch.Tensor, category: str, name: str) -> None:
        ptr, nbytes = _storage(t)
        if ptr not in statics and nbytes > 0:
            statics[ptr] = {"ptr": ptr, "bytes": nbytes, "category": category, "name": name,
                            "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}

    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        add(t, "weight", name)
    if graph is not None:
        for node in graph.nodes:
            attribute = graph.attribute(node.fx_node.target) if node.kind == "get_attr" else None
            if isinstance(attribute, torch.Tensor):
                add(attribute, "weight", node.fx_node.target)
    for name, t in _optimizer_state_tensors(optimizer, module):
        add(t, "optimizer_state", name)
    for i, t in enumerate(inputs):
        add(t, "input", f"input {i}")
    if target is not None:
        add(target, "input", "target")
    return list(statics.values())


def _observed(output: Any) -> List[dict]:
    """A node's outputs as the stream's observed values (list_index >= 0: an element of a tuple),
    but for the node and the event index, which the stream adds where the node's step ended."""
    elements = [(-1, output)] if isinstance(output, torch.Tensor) else \
        list(enumerate(output)) if isinstance(output, (tuple, list)) else []
    seen = []
    for list_index, t in elements:
        if isinstance(t, torch.Tensor) and t.layout == torch.strided:
            seen.append({"list_index": list_index, "storage_ptr": _storage(t)[0], "shape": list(t.shape),
                         "dtype": str(t.dtype).replace("torch.", ""), "requires_grad": t.requires_grad,
                         "bytes": t.numel() * t.element_size(), "gradient_target": gradient_hooks.edge_target(t)})
    return seen


def graph_forward(graph: EagerGraph, inputs: Sequence[torch.Tensor],
                  observed: Optional[Dict[int, List[dict]]] = None):
    """The module's forward through the graph, node by node; with `observed`, each node runs
    under its step marker and its outputs are noted."""
    env: Dict[int, Any] = {graph.value_of_fx[p]: x for p, x in zip(graph.placeholders, inputs)}

    def instruction(node):
        def run(env):
            value = lambda fx_node, use: env[graph.value_of_fx[fx_node]]
            if observed is None:
                return {node.value: graph.run_node(node, value)}
            with record_function(f"{event_stream.NODE_MARKER}{node.index}"):
                result = graph.run_node(node, value)
                observed[node.index] = _observed(result)
            return {node.value: result}
        return Instruction([v for v in node.reads if v != 0], run)

    with graph.running():
        run_program([instruction(n) for n in graph.nodes], env, keep=graph.graph_outputs + graph.held_values)
    flat = [env[v] for v in graph.graph_outputs]
    env.clear()
    return graph.unflatten_output(flat)


def _clear_gradients(module: torch.nn.Module) -> None:
    for p in module.parameters():
        p.grad = None


# Whether what_the_profiler_saw places other threads' allocations by time (event_stream's
# other_threads_by_time): inside other_threads_by_time(), as a sharded step's measurements are.
_other_threads_by_time = [False]


@contextlib.contextmanager
def other_threads_by_time():
    """Within it, the steps measured place the allocations of other threads (a communication
    backend's workers) where they happened (event_stream.record_from_profiler)."""
    _other_threads_by_time.append(True)
    try:
        yield
    finally:
        _other_threads_by_time.pop()


def what_the_profiler_saw(step_fn) -> event_stream.ProfiledStep:
    """What the profiler saw of `step_fn()` (its allocations, steps and marks), as the stream reads it."""
    # Kineto, which torch.profiler runs on, prints "profiler_start"/"profiler_stop" lines on every
    # profile and, in a CUDA build on a machine without a GPU, "ERROR ... gpuGetDeviceCount failed":
    # noise between acprof's own lines that reads like a failure. It reads its level when it first
    # starts; a level the user set is kept.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        held = step_fn()
    record = event_stream.record_from_profiler(prof, other_threads_by_time=_other_threads_by_time[-1])
    del held
    return record


def _step_ends(module, output, loss) -> tuple:
    gradient_ptrs = {_storage(p.grad)[0] for p in module.parameters() if p.grad is not None}
    leaves = [t for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]
    output_ptrs = {_storage(t)[0] for t in leaves + [loss]}
    return gradient_ptrs, output_ptrs


_frozen_depth = [0]


@contextlib.contextmanager
def collections_of_new_objects_only():
    """Within it, gc.collect() looks only at objects made since it was entered: one full collection
    first, then gc.freeze() sets every older object aside until it ends. The steps collect their
    own garbage (an autograd graph's cycles) before the next is measured, and in a process holding
    torch and a model library a full collection took a training step's time per iteration."""
    if _frozen_depth[0] == 0:
        gc.collect()
        gc.freeze()
    _frozen_depth[0] += 1
    try:
        yield
    finally:
        _frozen_depth[0] -= 1
        if _frozen_depth[0] == 0:
            gc.unfreeze()


@dataclass
class TrainingStep:
    """One training step as acprof runs it on a module: the inputs, the loss (a rule's name or
    the user's callable) and its target, the seed drawn before forward, autocast, and the
    optimizer that steps after backward (None: no step)."""
    inputs: Sequence[torch.Tensor]
    loss: Any = "mean"
    target: Optional[torch.Tensor] = None
    seed: int = 0
    autocast: str = ""
    optimizer: Optional[torch.optim.Optimizer] = None
    measured_iterations: int = 1  # how many the profile measured (meta.measured_iters)

    def run(self, module: torch.nn.Module, forward: Callable[[], Any], hooks=contextlib.nullcontext,
            before_backward: Callable[[torch.Tensor], None] = lambda loss: None) -> tuple:
        """One step: forward() under the seed and autocast (and `hooks`), the loss under its marker,
        backward, the optimizer's step under its marker. Returns (output, loss, gradient storages,
        output storages) as they were at the end of the step."""
        torch.manual_seed(self.seed)
        with hooks(), autocast_context(self.autocast):
            output = forward()
            with record_function(event_stream.LOSS_MARKER):
                step_loss = compute_loss(output, self.loss, self.target)
        before_backward(step_loss)
        step_loss.backward()
        if self.optimizer is not None:
            with record_function(event_stream.OPTIMIZER_MARKER):
                self.optimizer.step()
        return (output, step_loss) + _step_ends(module, output, step_loss)

    def warm_up(self, module: torch.nn.Module, forward: Callable[[], Any]) -> None:
        """The step once, never measured: kernels' first-call costs, and the optimizer's state."""
        module.train()
        self.run(module, forward)
        _clear_gradients(module)
        gc.collect()


def print_progress(line: str) -> None:
    """A progress line on stderr as the acprof binary prints them ("acprof: measured iteration 2")."""
    print(f"acprof: {line}", file=sys.stderr, flush=True)


@dataclass
class ProfileCost:
    """Where a profile's cost stands when one more measured iteration is considered, in the terms
    of the engine's rule (measured_iterations.h ProfileCost): the time since `started` (the command
    or the fit call), one plain training step (the warm-up's, once it ran), and the steps that run
    after the last measured iteration (fit's verification)."""
    started: float = field(default_factory=time.perf_counter)
    step_seconds: float = 0.0
    steps_after: float = 0.0

    def spent_seconds(self) -> float:
        return time.perf_counter() - self.started

    def after_seconds(self) -> float:
        return self.steps_after * self.step_seconds


def record_profile(module: torch.nn.Module, inputs: Sequence[torch.Tensor], loss: Any = "mean",
                   target: Optional[torch.Tensor] = None, path: Optional[str] = None, seed: int = 0,
                   graph: Optional[EagerGraph] = None, command: str = "", autocast: str = "",
                   optimizer: Optional[torch.optim.Optimizer] = None, cost: Optional[ProfileCost] = None,
                   progress: Callable[[str], None] = lambda line: None,
                   most_iterations: Optional[int] = None, extra_statics: Sequence[dict] = ()) -> dict:
    """Records one training step of `module` on `inputs` (warm-up first) and returns profile.json's
    content; writes it to `path` (whole or not at all) when given. `loss` is a rule's name or a
    callable of the output; `autocast` names the dtype forward and loss run under ("bfloat16"), ""
    for none; `optimizer` (over the module's parameters) steps after backward; `cost` says where the
    profile's budget of steps stands (ProfileCost, from the call by default); `progress` is told each
    measured iteration as it starts (print_progress prints it); `most_iterations` caps the measured
    iterations below `acprof profile --iters`'s default (1: a caller that reads only bytes, which
    the first iteration alone records; later ones add step times); `extra_statics` are storages
    alive through the step that none of the module, its optimizer or the inputs hold (DDP's
    buckets, data_parallel.py), as the stream's statics. The module and the optimizer are
    left as they were (training_state_kept)."""
    with training_state_kept(module, optimizer), collections_of_new_objects_only():
        step = TrainingStep(list(inputs), loss, target, seed, autocast, optimizer)
        return _record_profile(module, step, path, graph or EagerGraph(module, inputs, seed, autocast), command, cost or ProfileCost(), progress,
                               most_iterations, extra_statics)


def _record_profile(module, step: TrainingStep, path, graph, command, cost: ProfileCost, progress,
                    most_iterations: Optional[int], extra_statics: Sequence[dict]) -> dict:
    inputs = step.inputs
    warm_up_start = time.perf_counter()
    step.warm_up(module, lambda: graph_forward(graph, inputs))
    cost.step_seconds = time.perf_counter() - warm_up_start
    statics = _statics(module, graph, inputs, step.target, step.optimizer) + list(extra_statics)

    def measured_iteration():
        observed: Dict[int, List[dict]] = {}
        marks = _SavedTensorMarks()
        ends: Dict[str, Any] = {}

        def run():
            output, loss, ends["gradient_ptrs"], ends["output_ptrs"] = step.run(
                module, lambda: graph_forward(graph, inputs, observed), hooks=marks.hooks,
                before_backward=gradient_hooks.report_gradients_of_backward)
            return output, loss

        start = time.perf_counter()
        profiled = what_the_profiler_saw(run)
        gc.collect()
        _clear_gradients(module)
        return profiled, observed, marks, ends, (time.perf_counter() - start) * 1e6

    # The first measured iteration is the profile's record; each later one, measured the same way,
    # adds its step times, and each step's time is the median over them (the LibTorch recorder's
    # rule, which the engine holds: measured_iterations.h): one iteration slowed by the machine
    # does not move the op times a plan's extra time is weighed by.
    # At most as many as `acprof profile --iters` defaults to; fewer where two agree or the
    # profile's budget of steps is spent.
    most = engine.default_measured_iterations()
    if most_iterations:
        most = min(most, most_iterations)
    progress("measured iteration 1")
    profiled, observed, marks, ends, first_us = measured_iteration()
    iteration_us, later_step_time_us = [first_us], []
    while engine.more_iterations_wanted(iteration_us, most, cost.spent_seconds(), cost.step_seconds,
                                        cost.after_seconds()):
        progress(f"measured iteration {len(iteration_us) + 1} (at most {most})")
        later, _, _, _, later_us = measured_iteration()
        iteration_us.append(later_us)
        later_step_time_us.append([s["time_us"] for s in later.steps])
    iteration = _iteration(profiled, statics, ends, inputs, observed, marks.storage_ptr)
    iteration["later_step_time_us"] = later_step_time_us
    step.measured_iterations = len(iteration_us)
    # What the run saw of each value's grad is what the checkpoint decides by (apply.py reads it
    # back from the profile's values); the engine keeps a value's requires_grad as given.
    for node, seen in observed.items():
        for value in seen:
            if value["list_index"] < 0 and graph.nodes[node].value is not None:
                graph.values[graph.nodes[node].value].requires_grad = value["requires_grad"]
    profile = engine.profile_from_event_stream(_stream(_graph_part(graph, step, command), iteration))
    if path is not None:
        engine.write_json(profile, path)
    return profile


def _iteration(profiled: event_stream.ProfiledStep, statics: List[dict], ends: Dict[str, Any],
               inputs: Sequence[torch.Tensor], observed: Optional[Dict[int, List[dict]]] = None,
               save_ptrs: Optional[Dict[int, int]] = None) -> dict:
    """The event-stream document's iteration: what the profiler's tree held of the step, the
    outputs each node was seen to make (at the end of its step), and what the recorder knew of the
    run around it. A step recorded through the graph has `observed` and `save_ptrs` (with the
    gradients' marks and the inputs' storages); a step measured without one has neither."""
    through_graph = observed is not None
    observed, save_ptrs = observed or {}, save_ptrs or {}
    seen = [dict(value, node=node, event_index=event_index)
            for node, event_index in sorted(profiled.node_ends, key=lambda end: end[1])
            for value in observed.get(node, [])]
    saved_tensors = [{"save_id": e["save_id"], "storage_ptr": None if e["released"] else save_ptrs.get(e["save_id"]),
                      "step": e["step"], "event_index": e["event_index"]} for e in profiled.saved_tensors]
    return {"time_source": "cpu_wall", "steps": profiled.steps, "events": profiled.events, "observed": seen,
            "saved_tensors": saved_tensors, "gradients": profiled.gradients,
            "gradients_recorded": through_graph, "statics": statics,
            "gradient_ptrs": sorted(ends["gradient_ptrs"]), "output_ptrs": sorted(ends["output_ptrs"]),
            "input_ptrs": [_storage(x)[0] for x in inputs] if through_graph else [],
            "input_bytes": [x.numel() * x.element_size() for x in inputs] if through_graph else []}


def _stream(graph_part: dict, iteration: dict) -> dict:
    return {"format": "acprof-event-stream", "schema_version": EVENT_STREAM_SCHEMA_VERSION,
            "graph": graph_part, "iteration": iteration}


def _meta(module: torch.nn.Module, step: TrainingStep, command: str) -> dict:
    return {"model_path": f"eager:{type(module).__module__}.{type(module).__qualname__}",
            "model_sha256": "", "torch_version": torch.__version__.split("+")[0], "device": "cpu",
            "executor_optimize": False, "time_source": "cpu_wall", "command": command,
            "input_specs": [tensor_spec(x) for x in step.inputs],
            "target_spec": tensor_spec(step.target) if step.target is not None else "",
            "loss": loss_name(step.loss), "autocast": step.autocast, "optimizer": optimizer_name(step.optimizer),
            "warmup_iters": 1, "measured_iters": step.measured_iterations, "allocator_bytes_at_start": 0,
            "other_executor_mode_peak_bytes": -1,
            "checkpoint_rng_state_bytes": torch.get_rng_state().numel(),
            "forward_without_grad_ratio": -1.0, "probe_cost_us": -1.0, "seed": step.seed,
            "intra_op_threads": torch.get_num_threads()}


def _graph_part(graph: EagerGraph, step: TrainingStep, command: str) -> dict:
    """The event-stream document's graph: the captured graph's nodes and values, with the cut
    facts graph.py found, as profile.json states them."""
    nodes = [{"id": n.index, "kind": n.kind, "scope": n.scope,
              "inputs": [graph.values[v].name for v in n.reads],
              "outputs": [graph.values[n.value].name] if n.value is not None else [],
              "role": n.role, "barrier_reason": n.barrier_reason, "reads": list(n.reads),
              "writes": list(n.writes), "forward_step": -1, "forward_time_us": 0.0, "backward_steps": []}
             for n in graph.nodes]
    # Only tensors enter a segment as checkpoint inputs here (GraphValue.entry), so each as itself.
    values = [{"id": v.id, "name": v.name, "producer_node": v.producer_node, "type": v.type,
               "entry": v.entry, "input_form": "tensor", "can_leave": v.can_leave, "is_tensor": v.is_tensor,
               "requires_grad": v.requires_grad, "needs_grad": v.requires_grad, "bytes": v.bytes, "tensor": -1}
              for v in graph.values]
    return {"meta": _meta(graph.module, step, command), "nodes": nodes, "values": values,
            "graph_outputs": list(graph.graph_outputs)}


def measure_step(module: torch.nn.Module, inputs: Sequence[torch.Tensor], loss: Any = "mean",
                 target: Optional[torch.Tensor] = None, seed: int = 0, autocast: str = "",
                 profile_meta: Optional[dict] = None, optimizer: Optional[torch.optim.Optimizer] = None,
                 graph: Optional[EagerGraph] = None, warm_up: bool = True,
                 extra_statics: Sequence[dict] = ()) -> dict:
    """One training step of any module, measured as record_profile measures (warm-up, statics,
    the allocator's events): its peak bytes, loss, gradients and buffers afterwards (and the
    parameters the optimizer stepped, where one is given). The captured graph the module runs
    (an apply.CheckpointedModule's own, or `graph` for a model whose forward runs one) holds
    constants that are statics too. With `profile_meta` (the module is an
    apply.CheckpointedModule), also the step as profile.json's content under "profile": its
    forward's instructions as nodes (instruction_nodes), the same timeline and peak, and that meta
    with the measured fields filled, for report.html's after side. With `warm_up=False` the step
    is measured at once, for a caller that warmed the module up itself (TrainingStep.warm_up) and
    measures several steps from that one state. `extra_statics` as record_profile's. The module
    and the optimizer are left as they were."""
    step = TrainingStep(list(inputs), loss, target, seed, autocast, optimizer)
    if graph is None and isinstance(getattr(module, "graph", None), EagerGraph):
        graph = module.graph
    with training_state_kept(module, optimizer), collections_of_new_objects_only():
        return _measure_step(module, step, profile_meta, graph, warm_up, extra_statics)


def _measure_step(module, step: TrainingStep, profile_meta: Optional[dict], graph: Optional[EagerGraph],
                  warm_up: bool, extra_statics: Sequence[dict]) -> dict:
    inputs = step.inputs
    if warm_up:
        step.warm_up(module, lambda: module(*inputs))
    statics = _statics(module, graph, inputs, step.target, step.optimizer) + list(extra_statics)
    ends: Dict[str, Any] = {}

    def run():
        output, loss, ends["gradient_ptrs"], ends["output_ptrs"] = step.run(module, lambda: module(*inputs))
        ends["loss"] = loss.detach()
        return output, loss

    marking = module.marking_instructions() if profile_meta is not None else contextlib.nullcontext()
    with marking:
        profiled = what_the_profiler_saw(run)
    # The step's own profile: its instructions as nodes where it was marked, else none; the
    # engine replays the statics and every event as it does for a profile.
    meta = dict(profile_meta if profile_meta is not None else _meta(module, step, ""),
                warmup_iters=1, measured_iters=1, intra_op_threads=torch.get_num_threads())
    graph_part = {"meta": meta, "nodes": module.instruction_nodes() if profile_meta is not None else [],
                  "values": [], "graph_outputs": []}
    profile = engine.profile_from_event_stream(_stream(graph_part, _iteration(profiled, statics, ends, inputs)))
    result = {"peak_bytes": profile["summary"]["peak_bytes"], "loss": ends["loss"],
              "gradients": {n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None},
              "buffers": {n: b.detach().clone() for n, b in module.named_buffers()}}
    if step.optimizer is not None:
        result["parameters"] = {n: p.detach().clone() for n, p in module.named_parameters()}
    if profile_meta is not None:
        result["profile"] = profile
    _clear_gradients(module)
    return result
