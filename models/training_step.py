"""One training step of an exported model the way acprof runs it: inputs and target from
the specs stored in the archive (seed 0, target drawn right after the inputs), forward
and the stored loss (under the stored autocast, if any), backward. Mirrors
profiler/recorder/src/training_step.cpp so Python checks agree with what acprof measures."""

import contextlib
from dataclasses import dataclass
from typing import List

import torch

from . import specs


@dataclass(frozen=True)
class StoredSpecs:
    inputs: List[str]
    target: str
    loss: str
    autocast: str = ""  # empty: no autocast; else the dtype, e.g. "bfloat16"


def load_with_specs(path: str, device: str = "cpu"):
    extra_files = {"acprof_inputs": "", "acprof_target": "", "acprof_loss": "", "acprof_autocast": ""}
    module = torch.jit.load(path, map_location=device, _extra_files=extra_files)
    # torch.jit.load hands the records back as bytes.
    text = {name: bytes(value).decode() if isinstance(value, (bytes, bytearray)) else value
            for name, value in extra_files.items()}
    stored = StoredSpecs(
        inputs=[line for line in text["acprof_inputs"].splitlines() if line],
        target=text["acprof_target"],
        loss=text["acprof_loss"],
        autocast=text["acprof_autocast"],
    )
    return module, stored


def make_step_tensors(stored: StoredSpecs, seed: int = 0, device: str = "cpu"):
    # Drawn on the CPU and moved, as the recorder does, so every device sees the same values.
    tensors = specs.make_tensors(stored.inputs + ([stored.target] if stored.target else []), seed)
    tensors = [t.to(device) for t in tensors]
    if stored.target:
        return tensors[:-1], tensors[-1]
    return tensors, None


def collect_tensors(output) -> List[torch.Tensor]:
    """Every tensor of a model's output in order: a tensor, or the elements of tuples and
    lists and the values of dicts (in insertion order), recursively, as the recorder's
    tensorsIn takes them."""
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (tuple, list)):
        return [t for element in output for t in collect_tensors(element)]
    if isinstance(output, dict):
        return [t for value in output.values() for t in collect_tensors(value)]
    return []


def compute_loss(output, loss_kind: str, target) -> torch.Tensor:
    """The recorder's computeLoss: cross_entropy of the output's first tensor, or the sum
    over its floating-point tensors of each one's sum or mean."""
    tensors = collect_tensors(output)
    if not tensors:
        raise ValueError("the model's output holds no tensor")
    if loss_kind == "cross_entropy":
        # Classes last when the target has one element per row of classes ([B, T, V] against
        # [B, T]); else classes second, torch's own convention ([N, C, H, W] against [N, H, W]).
        logits = tensors[0]
        if target.numel() * logits.size(-1) == logits.numel():
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))
        return torch.nn.functional.cross_entropy(logits, target)
    if loss_kind not in ("sum", "mean"):
        raise ValueError(f"unknown loss kind {loss_kind!r}; expected mean, sum or cross_entropy")
    parts = [t.sum() if loss_kind == "sum" else t.mean() for t in tensors if t.is_floating_point()]
    if not parts:
        raise ValueError("the model's output has no floating-point tensor to take a loss of")
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def autocast_context(autocast: str, device: str = "cpu"):
    """torch.autocast for the stored dtype on `device`'s type; a no-op context when empty."""
    dtype = specs.parse_autocast(autocast)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=dtype)


def run_step(module, stored: StoredSpecs, seed: int = 0, device: str = "cpu") -> torch.Tensor:
    """Forward, loss and backward once with fresh gradients; returns the loss.
    The module must already be on `device`."""
    module.train()
    for parameter in module.parameters():
        parameter.grad = None
    inputs, target = make_step_tensors(stored, seed, device)
    torch.manual_seed(seed)  # the dropout masks, as the recorder seeds before forward
    with autocast_context(stored.autocast, device):
        loss = compute_loss(module(*inputs), stored.loss, target)
    loss.backward()
    return loss.detach()
