"""Recording one eager training step into profile.json, and measuring a step the same way.

The step is the one the C++ recorder runs (profiler/recorder): the module in train mode, fresh
gradients, the generator seeded before forward, forward through the captured graph node by node,
the loss, backward; one warm-up step first, which is never measured. What autograd saves for
backward is seen by saved_tensors_hooks: each save's holder marks the stream when it is made and
when autograd lets it go, so the profile says which node's step saved a storage and which step
released it.
"""

import contextlib
import gc
import json
import os
import tempfile
from typing import Any, Dict, List, Optional, Sequence

import torch
from torch.autograd.profiler import record_function

from ..contract import LOSSES
from . import event_stream, gradient_hooks
from .graph import EagerGraph
from .profile_derivation import MeasuredStep, ObservedValue, StaticStorage, derive_profile, peak_bytes
from .program import Instruction, run_program



def compute_loss(output: Any, loss: str, target: Optional[torch.Tensor]) -> torch.Tensor:
    """The recorder's loss (models/training_step.py compute_loss): cross entropy of the first
    output tensor against the target (classes last when the target has one element per row), or
    the sum over the floating-point output tensors of each one's mean or sum."""
    tensors = [t for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]
    if not tensors:
        raise ValueError("the model's output holds no tensor")
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


def _storage(t: torch.Tensor) -> tuple:
    storage = t.untyped_storage()
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
             target: Optional[torch.Tensor]) -> List[StaticStorage]:
    """Storages alive when the step starts, once each: parameters and buffers (and the graph's
    lifted constants) as weights, inputs and target as inputs."""
    statics: Dict[int, StaticStorage] = {}

    def add(t: torch.Tensor, category: str, name: str) -> None:
        ptr, nbytes = _storage(t)
        if ptr not in statics and nbytes > 0:
            statics[ptr] = StaticStorage(ptr, nbytes, category, name, list(t.shape),
                                         str(t.dtype).replace("torch.", ""))

    for name, t in list(module.named_parameters()) + list(module.named_buffers()):
        add(t, "weight", name)
    if graph is not None:
        for node in graph.nodes:
            attribute = graph.attribute(node.fx_node.target) if node.kind == "get_attr" else None
            if isinstance(attribute, torch.Tensor):
                add(attribute, "weight", node.fx_node.target)
    for i, t in enumerate(inputs):
        add(t, "input", f"input {i}")
    if target is not None:
        add(target, "input", "target")
    return list(statics.values())


def _observed(node: int, output: Any) -> List[ObservedValue]:
    elements = [(-1, output)] if isinstance(output, torch.Tensor) else \
        list(enumerate(output)) if isinstance(output, (tuple, list)) else []
    seen = []
    for list_index, t in elements:
        if isinstance(t, torch.Tensor) and t.layout == torch.strided:
            seen.append(ObservedValue(node, list_index, _storage(t)[0], list(t.shape),
                                      str(t.dtype).replace("torch.", ""), t.requires_grad,
                                      t.numel() * t.element_size(), gradient_hooks.edge_key(t)))
    return seen


def graph_forward(graph: EagerGraph, inputs: Sequence[torch.Tensor],
                  observed: Optional[Dict[int, List[ObservedValue]]] = None):
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
                observed[node.index] = _observed(node.index, result)
            return {node.value: result}
        return Instruction([v for v in node.reads if v != 0], run)

    run_program([instruction(n) for n in graph.nodes], env, keep=graph.graph_outputs)
    flat = [env[v] for v in graph.graph_outputs]
    env.clear()
    return graph.unflatten_output(flat)


def autocast_context(autocast: str, device: str = "cpu"):
    """torch.autocast for a dtype name ("bfloat16"), or no context for ""."""
    if not autocast:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=getattr(torch, autocast))


def _clear_gradients(module: torch.nn.Module) -> None:
    for p in module.parameters():
        p.grad = None


def _profiled(step_fn) -> event_stream.IterationRecord:
    # Kineto, which torch.profiler runs on, prints "profiler_start"/"profiler_stop" lines on every
    # profile and, in a CUDA build on a machine without a GPU, "ERROR ... gpuGetDeviceCount failed":
    # noise between acprof's own lines that reads like a failure. It reads its level when it first
    # starts; a level the user set is kept.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        held = step_fn()
    record = event_stream.record_from_profiler(prof)
    del held
    return record


def _step_ends(module, output, loss) -> tuple:
    gradient_ptrs = {_storage(p.grad)[0] for p in module.parameters() if p.grad is not None}
    leaves = [t for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]
    output_ptrs = {_storage(t)[0] for t in leaves + [loss]}
    return gradient_ptrs, output_ptrs


def record_profile(module: torch.nn.Module, inputs: Sequence[torch.Tensor], loss: str = "mean",
                   target: Optional[torch.Tensor] = None, path: Optional[str] = None, seed: int = 0,
                   graph: Optional[EagerGraph] = None, command: str = "", autocast: str = "") -> dict:
    """Records one training step of `module` on `inputs` (warm-up first) and returns profile.json's
    content; writes it to `path` (whole or not at all) when given. `autocast` names the dtype
    forward and loss run under ("bfloat16"), "" for none. The module is left as it was: its
    buffers (running statistics the two steps update), mode and gradients, and the generator."""
    with _module_state_kept(module):
        return _record_profile(module, inputs, loss, target, path, seed, graph, command, autocast)


@contextlib.contextmanager
def _module_state_kept(module: torch.nn.Module):
    buffers = [(b, b.detach().clone()) for b in module.buffers()]
    gradients = [(p, p.grad) for p in module.parameters()]
    training, generator = module.training, torch.get_rng_state()
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, kept in buffers:
                buffer.copy_(kept)
        for parameter, gradient in gradients:
            parameter.grad = gradient
        module.train(training)
        torch.set_rng_state(generator)


def _record_profile(module, inputs, loss, target, path, seed, graph, command, autocast) -> dict:
    module.train()
    graph = graph or EagerGraph(module, inputs)
    inputs = list(inputs)
    torch.manual_seed(seed)
    with autocast_context(autocast):
        warm_loss = compute_loss(graph_forward(graph, inputs), loss, target)
    warm_loss.backward()  # warm-up
    del warm_loss
    _clear_gradients(module)
    gc.collect()
    statics = _statics(module, graph, inputs, target)
    observed: Dict[int, List[ObservedValue]] = {}
    marks = _SavedTensorMarks()
    ends: Dict[str, Any] = {}

    def step():
        torch.manual_seed(seed)
        with marks.hooks(), autocast_context(autocast):
            output = graph_forward(graph, inputs, observed)
            with record_function(event_stream.LOSS_MARKER):
                step_loss = compute_loss(output, loss, target)
        gradient_hooks.report_gradients_of_backward(step_loss)
        step_loss.backward()
        ends["loss"] = step_loss.detach()
        ends["gradient_ptrs"], ends["output_ptrs"] = _step_ends(module, output, step_loss)
        return output, step_loss

    record = _profiled(step)
    gc.collect()
    measured = MeasuredStep(record, observed, statics, ends["gradient_ptrs"], ends["output_ptrs"],
                            [_storage(x)[0] for x in inputs], [x.numel() * x.element_size() for x in inputs],
                            gradients_recorded=True)
    _clear_gradients(module)
    return _write(graph, measured, marks.storage_ptr, inputs, loss, target, seed, command, path, autocast)


def _write(graph, measured, save_ptrs, inputs, loss, target, seed, command, path, autocast) -> dict:
    for seen in (s for values in measured.observed.values() for s in values if s.list_index < 0):
        graph.values[graph.nodes[seen.node].value].requires_grad = seen.requires_grad
    nodes = [{"id": n.index, "kind": n.kind, "scope": n.scope,
              "inputs": [graph.values[v].name for v in n.reads],
              "outputs": [graph.values[n.value].name] if n.value is not None else [],
              "role": n.role, "barrier_reason": n.barrier_reason, "reads": list(n.reads),
              "writes": list(n.writes), "forward_step": -1, "forward_time_us": 0.0, "backward_steps": []}
             for n in graph.nodes]
    # Only tensors enter a segment as checkpoint inputs here (GraphValue.entry), so each as itself.
    values = [{"id": v.id, "name": v.name, "producer_node": v.producer_node, "type": v.type,
               "entry": v.entry, "input_form": "tensor", "can_leave": v.can_leave, "is_tensor": v.is_tensor,
               "requires_grad": v.requires_grad, "needs_grad": v.requires_grad, "bytes": v.bytes}
              for v in graph.values]
    meta = {"model_path": f"eager:{type(graph.module).__module__}.{type(graph.module).__qualname__}",
            "model_sha256": "", "torch_version": torch.__version__.split("+")[0], "device": "cpu",
            "executor_optimize": False, "time_source": "cpu_wall", "command": command,
            "input_specs": [tensor_spec(x) for x in inputs],
            "target_spec": tensor_spec(target) if target is not None else "", "loss": loss, "autocast": autocast,
            "optimizer": "none", "warmup_iters": 1, "measured_iters": 1, "allocator_bytes_at_start": 0,
            "other_executor_mode_peak_bytes": -1,
            "checkpoint_rng_state_bytes": torch.get_rng_state().numel(),
            "forward_without_grad_ratio": -1.0, "probe_cost_us": -1.0, "seed": seed, "intra_op_threads": torch.get_num_threads()}
    profile = derive_profile(meta, nodes, values, list(graph.graph_outputs), measured, save_ptrs)
    if path is not None:
        write_json_atomically(profile, path)
    return profile


def write_json_atomically(content: dict, path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".acprof-", suffix=".json")
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(content, out, indent=1)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def measure_step(module: torch.nn.Module, inputs: Sequence[torch.Tensor], loss: str = "mean",
                 target: Optional[torch.Tensor] = None, seed: int = 0, autocast: str = "",
                 profile_meta: Optional[dict] = None) -> dict:
    """One training step of any module, measured as record_profile measures (warm-up, statics,
    the allocator's events): its peak bytes, loss, gradients and buffers afterwards. With
    `profile_meta` (the module is an apply.CheckpointedModule), also the step as profile.json's
    content under "profile": its forward's instructions as nodes (instruction_nodes), the same
    timeline and peak, and that meta with the measured fields filled, for report.html's after
    side."""
    module.train()
    inputs = list(inputs)
    torch.manual_seed(seed)
    with autocast_context(autocast):
        warm_loss = compute_loss(module(*inputs), loss, target)
    warm_loss.backward()  # warm-up
    del warm_loss
    _clear_gradients(module)
    gc.collect()
    statics = _statics(module, getattr(module, "graph", None), inputs, target)
    ends: Dict[str, Any] = {}

    def step():
        torch.manual_seed(seed)
        with autocast_context(autocast):
            output = module(*inputs)
            with record_function(event_stream.LOSS_MARKER):
                step_loss = compute_loss(output, loss, target)
        step_loss.backward()
        ends["loss"] = step_loss.detach()
        ends["gradient_ptrs"], ends["output_ptrs"] = _step_ends(module, output, step_loss)
        return output, step_loss

    marking = module.marking_instructions() if profile_meta is not None else contextlib.nullcontext()
    with marking:
        record = _profiled(step)
    measured = MeasuredStep(record, {}, statics, ends["gradient_ptrs"], ends["output_ptrs"], [], [])
    result = {"peak_bytes": peak_bytes(measured), "loss": ends["loss"],
              "gradients": {n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None},
              "buffers": {n: b.detach().clone() for n, b in module.named_buffers()}}
    if profile_meta is not None:
        meta = dict(profile_meta, warmup_iters=1, measured_iters=1, intra_op_threads=torch.get_num_threads())
        result["profile"] = derive_profile(meta, module.instruction_nodes(), [], [], measured, {})
    _clear_gradients(module)
    return result
