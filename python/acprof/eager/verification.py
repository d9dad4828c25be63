"""Whether two measured training steps (recorder.measure_step) are the same step: the loss, every
gradient and buffer, and the parameters an optimizer stepped, bit for bit or within a tolerance.
The eager command's rewrite and acprof.fit verify with it."""

from typing import Optional

import torch


def compare_steps(before: dict, after: dict, prefix: str, tolerance: Optional[float]) -> dict:
    """Loss, gradients and buffers (and parameters, where an optimizer stepped them) of one step
    against another's, by name (`prefix` + name on the `after` side, where the checkpointed module
    holds the original as `module`): every difference over the tolerance (any difference without
    one), and the largest."""
    differences, largest = [], 0.0

    def check(what: str, value: torch.Tensor, other: Optional[torch.Tensor]) -> None:
        nonlocal largest
        if other is None:
            differences.append(f"{what} (missing)")
            return
        if torch.equal(value, other):
            return
        gap = (value.double() - other.double()).abs().max().item() if value.numel() else 0.0
        gap = gap if gap == gap else float("inf")  # a NaN on one side only
        largest = max(largest, gap)
        if tolerance is None or gap > tolerance:
            differences.append(f"{what} (max |difference| {gap:.3g})")

    check("loss", before["loss"], after["loss"])
    for kind in ("gradients", "buffers", "parameters"):
        for name, value in before.get(kind, {}).items():
            check(f"{kind[:-1]} {name}", value, after[kind].get(prefix + name))
    return {"differences": differences, "max_abs_diff": largest, "gradients_compared": len(before["gradients"]),
            "buffers_compared": len(before["buffers"]), "parameters_compared": len(before.get("parameters", {}))}
