"""One training step of an exported model the way acprof runs it: inputs and target from
the specs stored in the archive (seed 0, target drawn right after the inputs), forward,
the stored loss, backward. Mirrors profiler/recorder/src/training_step.cpp so Python
checks agree with what acprof measures."""

from dataclasses import dataclass
from typing import List

import torch

import specs


@dataclass(frozen=True)
class StoredSpecs:
    inputs: List[str]
    target: str
    loss: str


def load_with_specs(path: str, device: str = "cpu"):
    extra_files = {"acprof_inputs": "", "acprof_target": "", "acprof_loss": ""}
    module = torch.jit.load(path, map_location=device, _extra_files=extra_files)
    # torch.jit.load hands the records back as bytes.
    text = {name: bytes(value).decode() if isinstance(value, (bytes, bytearray)) else value
            for name, value in extra_files.items()}
    stored = StoredSpecs(
        inputs=[line for line in text["acprof_inputs"].splitlines() if line],
        target=text["acprof_target"],
        loss=text["acprof_loss"],
    )
    return module, stored


def make_step_tensors(stored: StoredSpecs, seed: int = 0, device: str = "cpu"):
    # Drawn on the CPU and moved, as the recorder does, so every device sees the same values.
    tensors = specs.make_tensors(stored.inputs + ([stored.target] if stored.target else []), seed)
    tensors = [t.to(device) for t in tensors]
    if stored.target:
        return tensors[:-1], tensors[-1]
    return tensors, None


def compute_loss(output: torch.Tensor, loss_kind: str, target) -> torch.Tensor:
    if loss_kind == "cross_entropy":
        # [..., C] logits against [...] targets, as for language models' [B, T, V].
        return torch.nn.functional.cross_entropy(output.reshape(-1, output.size(-1)), target.reshape(-1))
    if loss_kind == "sum":
        return output.sum()
    if loss_kind == "mean":
        return output.mean()
    raise ValueError(f"unknown loss kind {loss_kind!r}; expected mean, sum or cross_entropy")


def run_step(module, stored: StoredSpecs, seed: int = 0, device: str = "cpu") -> torch.Tensor:
    """Forward, loss and backward once with fresh gradients; returns the loss.
    The module must already be on `device`."""
    module.train()
    for parameter in module.parameters():
        parameter.grad = None
    inputs, target = make_step_tensors(stored, seed, device)
    torch.manual_seed(seed)  # the dropout masks, as the recorder seeds before forward
    loss = compute_loss(module(*inputs), stored.loss, target)
    loss.backward()
    return loss.detach()
