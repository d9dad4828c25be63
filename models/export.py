"""Export one model as a TorchScript archive that carries its own training-step specs.

The archive's extra files "acprof_inputs" (one input spec per line), "acprof_target" and
"acprof_loss" let `acprof profile model.pt` run without flags (the recorder reads them in
profiler/recorder/src/training_step.cpp). A model trained under autocast also carries
"acprof_autocast", the dtype (e.g. "bfloat16"), as `acprof profile --autocast` takes it;
models without autocast have no such record.

export(model, example_inputs, path, mode, input_specs, target_spec, loss, autocast=""). A library
only: it knows no catalogue. The command that exports a catalogue model is `python3 models export`
(__main__.py).
"""

import os
import tempfile
from typing import List, Sequence

import torch
from torch import nn

from . import specs

MODES = ("traced", "scripted")


def _compile(model: nn.Module, example_inputs: Sequence[torch.Tensor], mode: str) -> torch.jit.ScriptModule:
    if mode == "scripted":
        return torch.jit.script(model)
    if mode != "traced":
        raise ValueError(f"unknown export mode {mode!r}; use one of {', '.join(MODES)}")
    # The trace's check re-runs the model and compares outputs, which dropout always fails.
    # Tracing without grad keeps no activations for backward (GPT-2 at full size would hold
    # tens of GB); the saved archive is the same as one traced with grad: only the
    # requires_grad flags of the trace-time value types differ, and those are not saved.
    # strict=False lets a dict or list output through (segmentation models return a dict), as
    # its users trace such models; the container's structure is the trace's, fixed.
    with torch.no_grad():
        return torch.jit.trace(model, tuple(example_inputs), check_trace=False, strict=False)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_whole(path: str, write) -> None:
    """Writes through a temp file in the same directory and renames it over `path`, so a
    reader never sees a partial model, even when the export fails or is interrupted."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temp_path = tempfile.mkstemp(prefix=".export-", suffix=".pt.tmp", dir=directory)
    os.close(handle)
    try:
        write(temp_path)
        os.chmod(temp_path, 0o666 & ~_current_umask())  # mkstemp makes it private; a model is not
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.remove(temp_path)
        raise


def compile_for_training(model: nn.Module, example_inputs: Sequence[torch.Tensor], mode: str) -> torch.jit.ScriptModule:
    """Compiles `model` in training mode, traced or scripted, holding the weights and buffers
    it had before: a trace runs the model once, which updates BatchNorm running statistics,
    and those are put back so the file holds the freshly initialised model in both modes."""
    model.train()
    state = model.state_dict()
    initial_state = type(state)((name, value.clone()) for name, value in state.items())
    # Modules with a versioned loader (torchvision's MNASNet) read the version from it.
    initial_state._metadata = getattr(state, "_metadata", None)
    torch.manual_seed(0)
    compiled = _compile(model, example_inputs, mode)
    # A compiled module knows no non-persistent buffers (a rotary embedding's inv_freq, BERT's
    # position_ids): its state_dict holds them, the model's does not, and they keep their values.
    missing, unexpected = compiled.load_state_dict(initial_state, strict=False)
    non_persistent = {name for name, _ in model.named_buffers()} - set(initial_state)
    if unexpected or set(missing) - non_persistent:
        raise RuntimeError(f"the compiled model's state differs from the model's: missing {sorted(set(missing) - non_persistent)}, "
                           f"unexpected {sorted(unexpected)}")
    model.load_state_dict(initial_state)
    return compiled


def save_with_specs(
    compiled: torch.jit.ScriptModule,
    path: str,
    input_specs: List[str],
    target_spec: str,
    loss: str,
    autocast: str = "",
) -> None:
    for spec in input_specs + ([target_spec] if target_spec else []):
        specs.parse_spec(spec)  # a bad spec fails here, not when acprof reads the file
    specs.parse_autocast(autocast)
    extra_files = {"acprof_inputs": "\n".join(input_specs), "acprof_target": target_spec, "acprof_loss": loss}
    if autocast:
        extra_files["acprof_autocast"] = autocast
    _write_whole(path, lambda temp_path: torch.jit.save(compiled, temp_path, _extra_files=extra_files))


def export(
    model: nn.Module,
    example_inputs: Sequence[torch.Tensor],
    path: str,
    mode: str,
    input_specs: List[str],
    target_spec: str,
    loss: str,
    autocast: str = "",
) -> None:
    """Compiles `model` in training mode (traced or scripted) and saves it to `path` with its specs.

    The caller builds the model right after torch.manual_seed(0) (reference_models does),
    so the traced and scripted variants of a model have the same weights. The model is
    compiled in float32 without autocast, as a user exports it; `autocast` only records the
    dtype that its training step runs under.
    """
    save_with_specs(compile_for_training(model, example_inputs, mode), path, input_specs, target_spec, loss, autocast)
