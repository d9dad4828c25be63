"""Tracing a large model at batch 1 instead of its real batch, where that is provably the same.

A trace bakes in every size that the model's Python code turns into a plain number. For
the GPU set (ResNet-50 at batch 64, GPT-2 at batch 8 x 1024 tokens) a trace at the real
shapes is a full forward on the CPU, minutes on a 2-core build machine. So these models are
traced at batch 1 and at batch 2 (the other dimensions at their real
sizes), and the batch-1 trace is kept only if both saved graphs are the same text: any
batch size baked into the graph would differ between them. If they differ, the export
fails and says so rather than writing a model that only runs at batch 1.
The check costs two small traces, a fraction of one forward at the real batch; export the
GPU set on the machine it runs on, whose cores make that fast. Graphs at batch 1 and 2 cannot reveal a Python branch on the
batch size taken only above 2; the models in this folder have none.
"""

import io
import re
from typing import List

import torch
from torch import nn

from . import export
from . import specs


class BatchBakedInError(RuntimeError):
    pass


def with_batch(spec_text: str, batch: int) -> str:
    spec = specs.parse_spec(spec_text)
    if not spec.shape:
        raise specs.SpecError(f"{spec_text!r}: a scalar input has no batch dimension to reduce")
    return str(specs.InputSpec(spec.dtype, (batch,) + spec.shape[1:], spec.value_range))


def saved_forward_graph(compiled: torch.jit.ScriptModule) -> str:
    """The forward graph as a file would hold it: saved and loaded again, so trace-time value
    types (which carry the example's sizes but are not saved) do not take part, and with
    TorchScript's per-process class name mangling removed."""
    buffer = io.BytesIO()
    torch.jit.save(compiled, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    return re.sub(r"___torch_mangle_\d+\.", "", str(loaded.inlined_graph))


def trace_at_batch_one(model: nn.Module, input_specs: List[str]) -> torch.jit.ScriptModule:
    traces = []
    for batch in (1, 2):
        example_inputs = specs.make_tensors([with_batch(s, batch) for s in input_specs])
        traces.append(export.compile_for_training(model, example_inputs, "traced"))
    if saved_forward_graph(traces[0]) != saved_forward_graph(traces[1]):
        raise BatchBakedInError(
            f"{type(model).__name__}: the traced graph depends on the batch size; "
            "export it with the full-size example inputs instead"
        )
    return traces[0]
