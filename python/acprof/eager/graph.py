"""The forward of an eager module as a graph acprof can profile, plan and cut.

The graph is the op stream of one forward of the module itself (op_stream.py): the aten ops eager
ran, in order, with the arguments they got, so a step through it runs the very kernels the module
runs (same ops, same order, same random draws) and equals a step of the module bit for bit. Each
node of that graph is one node of profile.json, the unit the planner reasons in and a checkpoint cuts:
  - get_attr (a parameter, buffer or constant) is Duplicable: it allocates nothing, runs in the
    outer program and its tensor enters a segment as a checkpoint input, as a TorchScript GetAttr's
    does;
  - an aten op or getitem is Compute;
  - anything else is a Barrier.
What a node writes comes from its op's schema (arguments marked `(a!)`), widened to every value
that aliases the written one through views and in-place results, as TorchScript's AliasDb answers it.
Each node makes at most one value, its FX node; a node that returns a tuple (split, native ops)
makes one value that cannot cross a segment boundary, so its getitems stay in its segment.
"""

import operator
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import torch
import torch.fx

from . import autocast_state, op_stream
from .autocast_state import autocast_context
from .call import tensors_text
from ..errors import StepDeparts
from .training_state import training_state_kept


@dataclass
class GraphNode:
    """One node of the profile's graph (profile_format.h ForwardNode) and how to run it."""
    index: int
    fx_node: torch.fx.Node
    kind: str
    scope: str
    role: str                     # compute | duplicable | barrier
    barrier_reason: str = ""
    reads: List[int] = field(default_factory=list)    # value ids, once per argument occurrence
    writes: List[int] = field(default_factory=list)   # value ids whose memory it may write
    value: Optional[int] = None   # the value it makes, None if it makes none


@dataclass
class GraphValue:
    """One value of the graph (profile_format.h GraphValue): value 0 is the module, 1..k the inputs."""
    id: int
    name: str
    producer_node: int
    type: str
    is_tensor: bool
    requires_grad: bool = False
    bytes: int = 0

    @property
    def can_leave(self) -> bool:
        return self.is_tensor

    @property
    def entry(self) -> str:
        """How it reaches a segment that reads it (profile_format.h ValueEntry): a tensor as a
        checkpoint input; nothing else crosses a boundary (every get_attr of the op stream is a tensor)."""
        return "input" if self.is_tensor else "blocked"


def _tensor_bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _schema(fx_node: torch.fx.Node):
    target = fx_node.target
    return target._schema if isinstance(target, torch._ops.OpOverload) else None


def _running_statistics_written(schema, given_args) -> List[str]:
    """Batch norm's kernels update their running statistics in training though their schemas do not
    say so (aten::native_batch_norm, cudnn_batch_norm and miopen_batch_norm, which eager's
    batch_norm dispatches to); TorchScript's AliasDb special-cases them the same way
    (torch/csrc/jit/ir/alias_analysis.cpp, analyzeBatchNorm and analyzeInstanceNorm). Any op with
    running_mean/running_var arguments and its training flag ("training", "use_input_stats") on
    writes them."""
    names = [a.name for a in schema.arguments]
    flags = [name for name in ("training", "use_input_stats") if name in names]
    if not flags or given_args[names.index(flags[0])] is False:
        return []
    return [name for name in ("running_mean", "running_var") if name in names]


def _argument_nodes(fx_node: torch.fx.Node) -> List[torch.fx.Node]:
    """The FX nodes a node reads, once per occurrence, in argument order (lists looked through)."""
    found: List[torch.fx.Node] = []
    torch.fx.node.map_arg((fx_node.args, fx_node.kwargs), lambda n: found.append(n) or n)
    return found


def _scope(fx_node: torch.fx.Node) -> str:
    return fx_node.meta.get("scope", "")


def _value_type(example: Any) -> str:
    if isinstance(example, torch.Tensor):
        return "Tensor"
    if isinstance(example, (tuple, list)):
        return "List[Tensor]" if all(isinstance(e, torch.Tensor) for e in example) else "Tuple"
    if example is None:
        return "NoneType"
    return type(example).__name__


class EagerGraph:
    """A module's forward as profile nodes and values, runnable node by node."""

    def __init__(self, module: torch.nn.Module, example_inputs: Sequence[torch.Tensor], seed: int = 0,
                 autocast: str = "", keep_output: bool = False):
        """With `keep_output`, the recorded forward's own output is `self.output` (for its loss to be
        checked; the caller drops it), else it dies here: a graph that lives with an installed plan
        holds none of the model's output tensors."""
        self.module = module
        # One forward of the module as a training step runs it: train mode (dropout on, batch norm on
        # batch statistics), grad on, the step's seed and autocast (the casts it makes are ops of the
        # graph); its running statistics and the generator are put back after.
        with training_state_kept(module), torch.enable_grad(), autocast_context(autocast):
            module.train()
            torch.manual_seed(seed)
            self.stream, output = op_stream.record(module, tuple(example_inputs))
        self.output = output if keep_output else None
        del output
        self.fx_graph = self.stream.graph
        self._module_tensors = dict(module.named_parameters(remove_duplicate=False))
        self._module_tensors.update(dict(module.named_buffers(remove_duplicate=False)))
        self.placeholders = [n for n in self.fx_graph.nodes if n.op == "placeholder"]
        self.output_node = next(n for n in self.fx_graph.nodes if n.op == "output")
        self.nodes: List[GraphNode] = []
        self.values: List[GraphValue] = [GraphValue(0, "self", -1, type(module).__name__, False)]
        self.value_of_fx: Dict[torch.fx.Node, int] = {}
        for placeholder in self.placeholders:
            self._add_value(placeholder, -1, placeholder.meta.get("val"))
        for fx_node in self.fx_graph.nodes:
            if fx_node.op in ("placeholder", "output"):
                continue
            self._add_node(fx_node)
        self._fill_writes()
        self.graph_outputs = [self.value_of_fx[n] for n in _argument_nodes(self.output_node)]
        # Values something outside the dataflow held past the forward (op_stream.py `held`): the
        # runner keeps them until its forward ends, as that holder did.
        self.held_values = [self.value_of_fx[n] for n in self.fx_graph.nodes if n.meta.get("held")
                            and self.value_of_fx[n] not in self.graph_outputs]

    @staticmethod
    def running():
        """Where the graph's nodes run: autocast off, since the casts autocast made are nodes of the
        graph (recorded below it), and an op it left in float32 would be cast again otherwise."""
        return autocast_state.off()

    def attribute(self, target: str) -> torch.Tensor:
        """A get_attr's tensor: the module's own parameter or buffer (so the cut model trains the
        module's parameters), else a constant of the recorded forward."""
        if target in self._module_tensors:
            return self._module_tensors[target]
        return self.stream.constants[target]

    def _add_value(self, fx_node: torch.fx.Node, producer: int, example: Any) -> int:
        value_id = len(self.values)
        is_tensor = isinstance(example, torch.Tensor)
        self.values.append(GraphValue(value_id, fx_node.name, producer, _value_type(example), is_tensor,
                                      requires_grad=bool(is_tensor and example.requires_grad),
                                      bytes=_tensor_bytes(example) if is_tensor else 0))
        self.value_of_fx[fx_node] = value_id
        return value_id

    def _add_node(self, fx_node: torch.fx.Node) -> None:
        index = len(self.nodes)
        node = GraphNode(index, fx_node, "", _scope(fx_node), "compute")
        node.reads = [self.value_of_fx[n] for n in _argument_nodes(fx_node)]
        if fx_node.op == "get_attr":
            node.kind, node.role, node.reads = "get_attr", "duplicable", [0]
            node.scope = fx_node.target
            example = self.attribute(fx_node.target)
        elif fx_node.op == "call_function" and isinstance(fx_node.target, torch._ops.OpOverload):
            node.kind = fx_node.target.name().replace(".default", "")
            example = fx_node.meta.get("val")
        elif fx_node.op == "call_function" and fx_node.target is operator.getitem:
            node.kind = "getitem"
            example = fx_node.meta.get("val")
        else:
            node.kind, node.role = str(fx_node.target), "barrier"
            node.barrier_reason = f"{fx_node.op} {fx_node.target} is not an aten op"
            example = fx_node.meta.get("val")
        node.value = self._add_value(fx_node, index, example)
        self.nodes.append(node)

    def _fill_writes(self) -> None:
        """Alias classes from the schemas (views and in-place results alias their input; a
        getitem aliases its tuple), then each node writes every value of the classes it writes."""
        root = list(range(len(self.values)))

        def find(v: int) -> int:
            while root[v] != v:
                v = root[v]
            return v

        written: Dict[int, List[int]] = {}
        for node in self.nodes:
            fx_node = node.fx_node
            args = list(fx_node.args)
            schema = _schema(fx_node)
            if node.kind == "getitem" and isinstance(args[0], torch.fx.Node):
                root[find(node.value)] = find(self.value_of_fx[args[0]])
            if schema is None:
                continue
            by_name = dict(fx_node.kwargs)
            given_args = [args[i] if i < len(args) else by_name.get(a.name) for i, a in enumerate(schema.arguments)]
            for name in _running_statistics_written(schema, given_args):
                given = given_args[[a.name for a in schema.arguments].index(name)]
                if isinstance(given, torch.fx.Node):
                    written.setdefault(node.index, []).append(self.value_of_fx[given])
            for argument, given in zip(schema.arguments, given_args):
                if not isinstance(given, torch.fx.Node) or argument.alias_info is None:
                    continue
                source = self.value_of_fx[given]
                if argument.alias_info.is_write:
                    written.setdefault(node.index, []).append(source)
                # A return sharing the argument's alias set is a view of it or the argument itself.
                for returned in schema.returns:
                    if returned.alias_info is not None and \
                            set(returned.alias_info.before_set) & set(argument.alias_info.before_set):
                        root[find(node.value)] = find(source)
        for node in self.nodes:
            classes = {find(v) for v in written.get(node.index, [])}
            node.writes = [v.id for v in self.values if v.id != 0 and find(v.id) in classes]

    # Running ---------------------------------------------------------------------------------

    def node_arguments(self, node: GraphNode, value_for_use):
        """The node's args and kwargs with each FX node replaced by value_for_use(fx_node, use),
        use counting the node's argument occurrences in _argument_nodes order."""
        counter = [0]

        def substitute(fx_arg: torch.fx.Node):
            use = counter[0]
            counter[0] += 1
            return value_for_use(fx_arg, use)

        return torch.fx.node.map_arg((node.fx_node.args, node.fx_node.kwargs), substitute)

    def run_node(self, node: GraphNode, value_for_use):
        """The node's op on its arguments, under the grad mode it ran in; raises StepDeparts where
        it returns another shape than it did in the recorded forward, or another value that the
        module's Python read."""
        fx_node = node.fx_node
        if fx_node.op == "get_attr":
            return self.attribute(fx_node.target)
        args, kwargs = self.node_arguments(node, value_for_use)
        if fx_node.meta.get("grad_enabled", True) or not torch.is_grad_enabled():
            result = fx_node.target(*args, **kwargs)
        else:
            with torch.no_grad():
                result = fx_node.target(*args, **kwargs)
        if not op_stream.same_result(fx_node.meta.get("val"), result, fx_node.meta.get("read_by_python", False)):
            where = f"{node.kind} in {node.scope}" if node.scope else node.kind
            raise StepDeparts(f"this step runs other ops than the profiled one from node {node.index} ({where}: "
                              f"{_result_text(result)}, profiled {_result_text(fx_node.meta.get('val'))}); fit "
                              "the model on inputs that take this path, or acprof.uninstall(model)")
        return result

    def unflatten_output(self, flat: List[Any]):
        """The module's output from the graph outputs' values (the recorded output's structure)."""
        leaves = [flat[k] if kind == "value" else k for kind, k in self.stream.output_leaves]
        return torch.utils._pytree.tree_unflatten(leaves, self.stream.output_spec)


def _result_text(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return tensors_text([value])
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_result_text(v) for v in value) + ")"
    return repr(value)
