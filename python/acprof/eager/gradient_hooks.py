"""Which graph value each gradient of backward belongs to, as autograd says it: the eager twin of
profiler/recorder/src/gradient_hooks.h (the reasons are there).

Forward notes, per observed value that requires grad, the edge its gradient arrives on
(edge_key). Before backward, every autograd node reachable from the loss gets a post-hook that
marks each gradient it hands on with the edge it goes along, and a pre-hook that marks each
gradient it receives as the gradient of its own output of that number (a sum the engine made).
The marks go into the profiler's stream (event_stream.GRADIENT_MARKER) in the order they
happened, and profile_derivation.py names each storage's values from them.
"""

from typing import Optional

import torch
from torch.autograd.profiler import record_function

from . import event_stream


def _node_key(node, number: int) -> str:
    # A leaf's accumulator stands for the leaf (a parameter, alive all step); any other node
    # is told apart by its sequence number, unique within the step.
    variable = getattr(node, "variable", None)
    if isinstance(variable, torch.Tensor):
        return f"leaf:{id(variable)}"
    return f"{node._sequence_nr()}:{number}"


def edge_key(t: torch.Tensor) -> Optional[str]:
    """The edge `t`'s gradient arrives on, or None where it needs none."""
    if not t.requires_grad:
        return None
    if t.grad_fn is None:
        return f"leaf:{id(t)}"
    return _node_key(t.grad_fn, t.output_nr)


def _mark(gradient, target: str) -> None:
    if isinstance(gradient, torch.Tensor) and gradient.layout == torch.strided:
        # The storage's address from the tensor's own: a Python storage object made here would
        # outlive the hook (PyObject preservation) and keep the engine from summing into it in place.
        storage_ptr = gradient.data_ptr() - gradient.storage_offset() * gradient.element_size()
        with record_function(f"{event_stream.GRADIENT_MARKER}{storage_ptr}::{target}"):
            pass


def report_gradients_of_backward(loss: torch.Tensor) -> None:
    """Adds the marking hooks to every autograd node reachable from loss.grad_fn."""
    pending = [loss.grad_fn] if loss.grad_fn is not None else []
    # Every node seen gets hooks that hold its wrapper, so id() names one node all along.
    seen = {id(n) for n in pending}

    def hooks_of(node):
        def received(grad_outputs):
            for k, gradient in enumerate(grad_outputs):
                _mark(gradient, _node_key(node, k))

        def handed_on(grad_inputs, grad_outputs):
            for gradient, (next_node, number) in zip(grad_inputs, node.next_functions):
                if next_node is not None:
                    _mark(gradient, _node_key(next_node, number))

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
