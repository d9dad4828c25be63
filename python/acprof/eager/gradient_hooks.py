"""Which graph value each gradient of backward belongs to, as autograd says it: the eager
collector of what profiler/recorder/src/gradient_hooks.h collects in C++ (the reasons are there).

Forward notes, per observed value that requires grad, the edge its gradient arrives on
(edge_target). Before backward, every autograd node reachable from the loss gets a post-hook that
marks each gradient it hands on with the edge it goes along, and a pre-hook that marks each
gradient it receives as the gradient of its own output of that number (a sum the engine made).
The marks go into the profiler's stream (GRADIENT_MARKER) in the order they happened, and the
engine's derivation (event_stream.cpp) names each storage's values from them.
"""

from typing import Optional

import torch
from torch.autograd.profiler import record_function

# The marker's prefix; event_stream.py reads the marks back.
GRADIENT_MARKER = "acprof::gradient::"


def _node_target(node, number: int) -> dict:
    """The event stream's GradientTarget of an edge into `node`. A leaf's accumulator stands for
    the leaf (a parameter, alive all step), known by the leaf's id; any other node is told apart
    by its sequence number, unique within the step (its Python wrapper's id is not: one node may
    get several wrappers)."""
    variable = getattr(node, "variable", None)
    if isinstance(variable, torch.Tensor):
        return {"node": id(variable), "sequence_nr": 0, "input_nr": 0}
    return {"node": 0, "sequence_nr": node._sequence_nr(), "input_nr": number}


def edge_target(t: torch.Tensor) -> Optional[dict]:
    """The edge `t`'s gradient arrives on, or None where it needs none."""
    if not t.requires_grad:
        return None
    if t.grad_fn is None:
        return {"node": id(t), "sequence_nr": 0, "input_nr": 0}
    return _node_target(t.grad_fn, t.output_nr)


def target_of_marker(text: str) -> dict:
    """The target a gradient marker names (_mark writes it as node:sequence_nr:input_nr)."""
    node, sequence_nr, input_nr = (int(part) for part in text.split(":"))
    return {"node": node, "sequence_nr": sequence_nr, "input_nr": input_nr}


def _mark(gradient, target: dict) -> None:
    if isinstance(gradient, torch.Tensor) and gradient.layout == torch.strided:
        # The storage's address from the tensor's own: a Python storage object made here would
        # outlive the hook (PyObject preservation) and keep the engine from summing into it in place.
        storage_ptr = gradient.data_ptr() - gradient.storage_offset() * gradient.element_size()
        marker = f"{target['node']}:{target['sequence_nr']}:{target['input_nr']}"
        with record_function(f"{GRADIENT_MARKER}{storage_ptr}::{marker}"):
            pass


def report_gradients_of_backward(loss: torch.Tensor) -> None:
    """Adds the marking hooks to every autograd node reachable from loss.grad_fn."""
    pending = [loss.grad_fn] if loss.grad_fn is not None else []
    # Every node seen gets hooks that hold its wrapper, so id() names one node all along.
    seen = {id(n) for n in pending}

    def hooks_of(node):
        def received(grad_outputs):
            for k, gradient in enumerate(grad_outputs):
                _mark(gradient, _node_target(node, k))

        def handed_on(grad_inputs, grad_outputs):
            for gradient, (next_node, number) in zip(grad_inputs, node.next_functions):
                if next_node is not None:
                    _mark(gradient, _node_target(next_node, number))

        return received, handed_on

    while pending:
        node = pending.pop()
        received, handed_on = hooks_of(node)
        node.register_prehook(received)
        if node.next_functions:  # a leaf's accumulator hands nothing on
            node.register_hook(handed_on)
        for next_node, _ in node.next_functions:
            if next_node is not None and id(next_node) not in seen:
                seen.add(id(next_node))
                pending.append(next_node)
