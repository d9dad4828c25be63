"""The forward of an eager module as the ops it runs: one forward of the module itself, on the real
inputs, with a TorchDispatchMode that writes each aten op it dispatches into an FX graph.

Why not torch.export: export runs the forward on fake tensors and tells the model's code it is
being compiled, and model code takes another path there. transformers materializes the causal mask
and repeats the key/value heads of grouped-query attention under export, where eager passes
`enable_gqa` and no mask, so the captured graph of Llama did not train like Llama (gradients 1e-9 to
3e-8 apart). A Python branch on a tensor's value cannot be exported at all. The dispatch mode sees
what eager runs, below autograd and autocast: the very kernels, in order, with the arguments they
got, including the casts autocast made and the ops of branches on values, which Python decided on
real data.

What the graph keeps of each op, so that running its nodes in order trains like the module:
  - the op (an OpOverload) and its arguments, tensors as the nodes that made them (the module's
    parameters and buffers as get_attr of their names, the inputs as placeholders, any other tensor
    as a constant of the graph); an op returning several tensors is one node and a getitem each;
  - whether grad mode was on (`grad_enabled`), since a no_grad region is below the mode's sight
    otherwise, and the module scope it ran in (`scope`, from module forward hooks);
  - what it returned (`val`): a tensor's shape, strides, dtype and whether it needed grad (as a meta
    tensor, holding no memory), or a value read out of a tensor (`item()`, a branch's bool), and
    whether that value reached the module's Python (`read_by_python`): a torch call that returned
    no tensor (`item`, `__bool__`, `__index__`, `equal`) handed it over. A value a torch op reads
    inside itself (one_hot checks its classes with min().item()) decides nothing in the module's
    code; a later step may read another value there and still run the same ops;
  - whether something outside the dataflow still held its result when the forward returned (`held`:
    autocast's cache of a weight's cast, a tensor the module keeps).
A step whose values lead the module's Python elsewhere (another branch, another routing) runs other
ops than these; the graph's runner compares each result with `val` (a value only where Python read
it) and raises StepDeparts where one differs (graph.py run_node), rather than train on the profiled
path silently.
"""

import operator
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


class CustomFunctionInForward(RuntimeError):
    """The forward calls a custom torch.autograd.Function, whose backward the op stream cannot carry."""


def described(value: Any) -> Any:
    """What a result is, without its memory: a tensor as a meta tensor of its shape, strides and dtype
    (needing grad where it does), a tuple or list of them element by element, anything else itself."""
    if isinstance(value, torch.Tensor):
        meta = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device="meta")
        return meta.requires_grad_(value.requires_grad) if meta.is_floating_point() or meta.is_complex() else meta
    if isinstance(value, (tuple, list)):
        return type(value)(described(v) for v in value)
    return value


_PYTHON_SCALARS = (bool, int, float, complex)


def same_result(recorded: Any, result: Any, values_matter: bool = True) -> bool:
    """Whether a result is the recorded one as far as the rest of the forward can tell: tensors of the
    same shape and dtype, other values of the same type and, where `values_matter`, equal."""
    if isinstance(recorded, torch.Tensor):
        return isinstance(result, torch.Tensor) and result.shape == recorded.shape and result.dtype == recorded.dtype
    if isinstance(recorded, (tuple, list)):
        return isinstance(result, (tuple, list)) and len(result) == len(recorded) and \
            all(same_result(a, b, values_matter) for a, b in zip(recorded, result))
    if isinstance(recorded, _PYTHON_SCALARS):
        return type(result) is type(recorded) and (result == recorded or not values_matter)
    return True


@dataclass
class OpStream:
    """A recorded forward: the graph, what its get_attr targets name (the module's parameters and
    buffers by their names, constants by theirs), and how the output is rebuilt from the graph's
    outputs (a pytree spec over its leaves; a leaf that is no tensor is kept as it was)."""
    graph: torch.fx.Graph
    constants: Dict[str, Any]
    output_spec: Any
    output_leaves: List[Tuple[str, Any]] = field(default_factory=list)   # ("value", k) | ("constant", obj)


class _Recorder(TorchDispatchMode):
    def __init__(self, graph: torch.fx.Graph, names: Dict[int, str]):
        super().__init__()
        self.graph = graph
        self.names = names                      # id(tensor) -> the module's name of it
        self.node_of: Dict[int, Tuple[Any, torch.fx.Node]] = {}
        self.attribute_nodes: Dict[str, torch.fx.Node] = {}
        self.constants: Dict[str, Any] = {}
        self.scopes: List[str] = [""]
        self.custom_function_scope: Optional[str] = None
        self.scalar_nodes: List[torch.fx.Node] = []   # nodes that returned a Python value, in order

    def track(self, t: torch.Tensor, node: torch.fx.Node) -> None:
        self.node_of[id(t)] = (weakref.ref(t), node)

    def node_for(self, t: torch.Tensor) -> torch.fx.Node:
        entry = self.node_of.get(id(t))
        if entry is not None and entry[0]() is t:
            node = entry[1]
            recorded = node.meta.get("val")
            if isinstance(recorded, torch.Tensor) and t.requires_grad != recorded.requires_grad:
                # Autograd marks an op's result as needing grad after the op returned; a result made
                # without grad that needs it now was handed back by a custom Function's apply.
                if not node.meta.get("grad_enabled", True) and t.requires_grad and self.custom_function_scope is None:
                    self.custom_function_scope = node.meta.get("scope", "")
                node.meta["val"] = recorded.detach().requires_grad_(t.requires_grad) \
                    if recorded.is_floating_point() or recorded.is_complex() else recorded
            return node
        name = self.names.get(id(t))
        if name is None:
            name = f"_tensor_constant{len(self.constants)}"
            self.constants[name] = t
        node = self.attribute_nodes.get(name)
        if node is None:
            node = self.attribute_nodes[name] = self.graph.get_attr(name)
            node.meta["val"] = described(t)
        self.track(t, node)
        return node

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        grad_enabled = torch.is_grad_enabled()
        result = func(*args, **kwargs)
        node_args, node_kwargs = torch.utils._pytree.tree_map_only(torch.Tensor, self.node_for, (args, kwargs))
        node = self.graph.call_function(func, tuple(node_args), dict(node_kwargs))
        node.meta.update(val=described(result), grad_enabled=grad_enabled, scope=self.scopes[-1])
        if isinstance(result, _PYTHON_SCALARS):
            self.scalar_nodes.append(node)
        if isinstance(result, torch.Tensor):
            self.track(result, node)
        elif isinstance(result, (tuple, list)):
            for i, element in enumerate(result):
                if isinstance(element, torch.Tensor):
                    item = self.graph.call_function(operator.getitem, (node, i))
                    item.meta.update(val=described(element), grad_enabled=grad_enabled, scope=self.scopes[-1])
                    self.track(element, item)
        return result


class _PythonReads(TorchFunctionMode):
    """Marks the values a torch call hands to Python: the outermost call (a mode is off inside its own
    handler) that returned no tensor gave the module's code every value its ops read."""

    def __init__(self, recorder: _Recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        first = len(self.recorder.scalar_nodes)
        result = func(*args, **(kwargs or {}))
        if not any(isinstance(leaf, torch.Tensor) for leaf in torch.utils._pytree.tree_leaves(result)):
            for node in self.recorder.scalar_nodes[first:]:
                node.meta["read_by_python"] = True
        return result


def record(module: torch.nn.Module, inputs: Sequence[torch.Tensor]) -> Tuple[OpStream, Any]:
    """One forward of `module` on `inputs` as it runs in eager, recorded, and that forward's own
    output (the stream holds no tensor of it); the caller keeps the module's state (this forward
    updates running statistics and draws random numbers). Raises
    CustomFunctionInForward (its scope) where a custom autograd Function's result is read."""
    graph = torch.fx.Graph()
    names = {id(t): n for n, t in list(module.named_parameters(remove_duplicate=False)) +
             list(module.named_buffers(remove_duplicate=False))}
    recorder = _Recorder(graph, names)
    for i, x in enumerate(inputs):
        placeholder = graph.placeholder(f"input_{i}")
        placeholder.meta["val"] = described(x)
        recorder.track(x, placeholder)
    module_names = {id(m): n for n, m in module.named_modules(remove_duplicate=False)}

    def entered(m, args):
        recorder.scopes.append(module_names.get(id(m), recorder.scopes[-1]))

    def left(m, args, output):
        if len(recorder.scopes) > 1:
            recorder.scopes.pop()

    pre = torch.nn.modules.module.register_module_forward_pre_hook(entered)
    post = torch.nn.modules.module.register_module_forward_hook(left)
    try:
        # Autograd records the graph as in training (grad mode and requires_grad choose kernels and
        # decompositions) but saves nothing for a backward that never runs, so recording costs the
        # forward's temporaries, not its activations: fit records again at a new shape in the middle
        # of training.
        with _PythonReads(recorder), recorder, torch.autograd.graph.saved_tensors_hooks(lambda t: None, lambda nothing: None):
            output = module(*inputs)
    finally:
        pre.remove()
        post.remove()
    # What is still alive when the forward returns, besides what it returns, is held by
    # something outside the dataflow: autocast's cache of a weight's cast (cleared when its
    # region ends), a tensor the module keeps as an attribute. Measured, not guessed: the graph's
    # runner keeps these until its forward ends (graph.py held_values).
    returned = {id(t) for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor)}
    for key, (ref, node) in recorder.node_of.items():
        if node.op == "call_function" and key not in returned and ref() is not None:
            node.meta["held"] = True
    leaves, spec = torch.utils._pytree.tree_flatten(output)
    outputs, template = [], []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            template.append(("value", len(outputs)))
            outputs.append(recorder.node_for(leaf))
        else:
            template.append(("constant", leaf))
    if recorder.custom_function_scope is not None:
        raise CustomFunctionInForward(recorder.custom_function_scope)
    graph.output(tuple(outputs))
    return OpStream(graph, recorder.constants, spec, template), output
