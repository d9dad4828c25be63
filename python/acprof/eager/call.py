"""How a forward is called: its positional and keyword arguments as one pytree, whose tensor leaves
are the recorded graph's inputs and whose other leaves (a flag, `return_dict=False`) are part of
the call, as Python code sees them.

acprof records, profiles and verifies a forward that takes its input tensors positionally (the
graph's placeholders, `EagerGraph`). A model called as transformers' models are, by name
(`model(input_ids=x, labels=y)`), is made one while acprof works on it: `positional` gives the
model, for that while, a forward of the tensor leaves that calls its own forward with the
arguments rebuilt. The fitted model's forward flattens each call the same way and runs the plan on
its tensors (fit.install).
"""

import contextlib
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Sequence, Tuple

import torch
from torch.utils import _pytree

# Leaves that are part of a call's identity by value; any other object by identity.
_VALUE_LEAVES = (bool, int, float, str, type(None), torch.dtype, torch.device)


@dataclass(frozen=True)
class Call:
    """One call's arguments: the pytree's structure, its leaves with each tensor as None, where
    the tensors are, and the tensors in leaf order."""
    spec: Any
    others: Tuple[Any, ...]
    tensor_at: Tuple[bool, ...]
    tensors: Tuple[torch.Tensor, ...]

    @staticmethod
    def of(args: Sequence[Any], kwargs: Mapping[str, Any]) -> "Call":
        leaves, spec = _pytree.tree_flatten((tuple(args), dict(kwargs)))
        tensor_at = tuple(isinstance(leaf, torch.Tensor) for leaf in leaves)
        return Call(spec, tuple(None if t else leaf for leaf, t in zip(leaves, tensor_at)), tensor_at,
                    tuple(leaf for leaf, t in zip(leaves, tensor_at) if t))

    @property
    def structure(self) -> tuple:
        """What identifies the call apart from its tensors' shapes: the pytree's structure, where
        its tensors are and its other leaves (plain values by value, other objects by identity)."""
        return (repr(self.spec), self.tensor_at) + tuple(
            leaf if isinstance(leaf, _VALUE_LEAVES) else ("object", id(leaf)) for leaf in self.others)

    @property
    def shapes(self) -> tuple:
        return tuple((tuple(t.shape), t.dtype) for t in self.tensors)

    @property
    def signature(self) -> tuple:
        return self.structure + self.shapes

    def rebuild(self, tensors: Sequence[torch.Tensor]) -> Tuple[tuple, Dict[str, Any]]:
        """The arguments with these tensors in place of the call's own."""
        given = iter(tensors)
        return _pytree.tree_unflatten([next(given) if t else leaf for leaf, t in zip(self.others, self.tensor_at)],
                                      self.spec)

    def text(self) -> str:
        return tensors_text(self.tensors)


def tensors_text(tensors: Sequence[torch.Tensor]) -> str:
    """Tensors as the one-line errors and warnings show them: float32[4, 64], int64[4, 64]."""
    return ", ".join(f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}" for t in tensors)


@contextlib.contextmanager
def positional(model: torch.nn.Module, call: Call):
    """The model, while inside, with a forward of the call's tensors positionally (an instance
    attribute, as fit.install's; whatever forward it had is put back after)."""
    own = model.__dict__.pop("forward", None)
    forward = own if own is not None else type(model).forward.__get__(model)

    def of_tensors(*tensors):
        args, kwargs = call.rebuild(tensors)
        return forward(*args, **kwargs)

    model.forward = of_tensors
    try:
        yield model
    finally:
        del model.__dict__["forward"]
        if own is not None:
            model.forward = own
