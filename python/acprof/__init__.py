"""acprof in Python: fit a training step into a memory budget, in the training script itself.

    import acprof
    fitted = acprof.fit(model, example_inputs, budget="6GB", loss_fn=..., optimizer=...)
    fitted.module is model              # the plan is installed in the model's own forward
    acprof.estimate(model, example_inputs, budget="6GB").verdict   # before training: will it fit?
    acprof.apply(model, "plan.json", example_inputs)                # a plan fitted.save() wrote
    acprof.fit(model, example_inputs, budget="6GB", compile=True).module   # the plan inside torch.compile

(acprof/fit.py says what each does.) A model rewritten by `acprof rewrite` (TorchScript) trains
with `acprof.load`:

    model = acprof.load("model.ckpt.pt")

The rewritten model's forward calls the operator `acprof::checkpoint` and holds its segments as
objects of the custom class `__torch__.torch.classes.acprof.Segment`, both registered by acprof's
op library, libacprof_ops.so. `load` loads that library (once per process), sets the TorchScript
modes the plan assumed, and returns `torch.jit.load(path, map_location)`.

Executor mode: acprof profiles with TorchScript's optimizing executor off unless `acprof profile
--jit-optimize on` was given, and its plan holds only in the mode it profiled in (with it on the
gradients are still equal, but what is saved for backward, hence the memory, is not what the plan
predicted). `acprof rewrite` records the mode in the rewritten archive as the extra file
`acprof_executor_optimize` ("on" or "off") whenever it knows the profile's run (always, unless it
ran with --no-verify and without the plan's profile); where the record is absent, `load` assumes
acprof's default, off, and `executor_optimize=True` says otherwise.

Autocast: TorchScript's own autocast pass rounds a few ops differently from eager autocast, and a
checkpoint's recompute runs without it, so `load` turns it off
(`torch._C._jit_set_autocast_mode(False)`); autocast itself (`with torch.autocast(...)`) works as
in eager PyTorch.

Both settings are process-wide, as PyTorch's are: they apply to every TorchScript model the process
runs afterwards. A process started by `torch.multiprocessing.spawn` or `torchrun` starts from
scratch: call `load` in each.
"""

import os
import shutil

import torch

from .errors import (AcprofError, BadInput, BudgetExceeded, InfeasibleBudget, ModelFails,  # noqa: E402
                     StepDeparts, VerificationFailed)
from .fit import Estimate, FitResult, apply, estimate, fit, installed_plan, uninstall  # noqa: E402

__all__ = ["fit", "estimate", "apply", "uninstall", "installed_plan", "FitResult", "Estimate", "AcprofError", "BadInput", "InfeasibleBudget",
           "VerificationFailed", "BudgetExceeded", "ModelFails", "StepDeparts", "load", "ops_library_path", "OpsLibraryNotFound"]
__version__ = "0.1.0"

LIBRARY_NAME = "libacprof_ops.so"
ENV_VARIABLE = "ACPROF_OPS_LIBRARY"
EXECUTOR_RECORD = "acprof_executor_optimize"


class OpsLibraryNotFound(FileNotFoundError):
    """libacprof_ops.so was not found; the message names where it looked and the fix."""


def _beside_acprof_command():
    """Where libacprof_ops.so lies relative to the `acprof` command on PATH: lib*/ of an installed
    prefix (cmake/install.cmake), or rewriter/ of a build tree (build/cli/acprof)."""
    command = shutil.which("acprof")
    if command is None:
        return []
    bin_dir = os.path.dirname(os.path.realpath(command))
    prefix = os.path.dirname(bin_dir)
    candidates = [os.path.join(prefix, "lib", LIBRARY_NAME), os.path.join(prefix, "lib64", LIBRARY_NAME)]
    # GNUInstallDirs picks lib/<multiarch> for the /usr prefix on Debian.
    lib = os.path.join(prefix, "lib")
    if os.path.isdir(lib):
        candidates += [os.path.join(lib, entry, LIBRARY_NAME) for entry in sorted(os.listdir(lib))
                       if entry.endswith("-linux-gnu")]
    candidates.append(os.path.join(prefix, "rewriter", LIBRARY_NAME))
    return candidates


def ops_library_path():
    """The path of libacprof_ops.so: $ACPROF_OPS_LIBRARY, else beside the `acprof` command on PATH.
    Raises OpsLibraryNotFound naming the fix."""
    configured = os.environ.get(ENV_VARIABLE)
    if configured:
        if not os.path.isfile(configured):
            raise OpsLibraryNotFound(
                f"acprof: {ENV_VARIABLE}={configured} is not a file; set it to the libacprof_ops.so "
                f"acprof built (build/rewriter/{LIBRARY_NAME}, or lib/{LIBRARY_NAME} of its install prefix)")
        return configured
    candidates = _beside_acprof_command()
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    looked = f" (looked in {', '.join(candidates)})" if candidates else " (no acprof command on PATH)"
    raise OpsLibraryNotFound(
        f"acprof: cannot find {LIBRARY_NAME}, which a model written by `acprof rewrite` needs{looked}; "
        f"set {ENV_VARIABLE}=/path/to/{LIBRARY_NAME} (build/rewriter/ of the acprof build, or lib/ of "
        f"`cmake --install`'s prefix), or put that install's bin/ on PATH")


_loaded_library = None


def _load_ops_library():
    global _loaded_library
    if _loaded_library is None:
        path = ops_library_path()
        torch.ops.load_library(path)
        _loaded_library = path
    return _loaded_library


def _recorded_executor_optimize(extra_files):
    value = extra_files.get(EXECUTOR_RECORD, b"")
    text = bytes(value).decode() if isinstance(value, (bytes, bytearray)) else value
    text = text.strip()
    if text == "on":
        return True
    if text == "off":
        return False
    return None


def load(path, map_location=None, executor_optimize=None):
    """Load the model written by `acprof rewrite` at `path`, ready to train.

    Loads libacprof_ops.so (see ops_library_path), sets the executor mode the plan assumed
    (recorded in the archive, else `executor_optimize`, else acprof's default: off) and turns
    TorchScript's autocast pass off, then returns torch.jit.load(path, map_location). Works for the
    original model too, which then trains in the mode acprof profiled it in."""
    _load_ops_library()
    extra_files = {EXECUTOR_RECORD: ""}
    # The mode only has to be set before the first forward; torch.jit.load runs none.
    model = torch.jit.load(path, map_location=map_location, _extra_files=extra_files)
    recorded = _recorded_executor_optimize(extra_files)
    if recorded is not None and executor_optimize is not None and recorded != executor_optimize:
        raise ValueError(
            f"acprof: {path} was planned with the optimizing executor {'on' if recorded else 'off'}, "
            f"but executor_optimize={executor_optimize} was passed; leave it out")
    optimize = recorded if recorded is not None else bool(executor_optimize)
    torch._C._set_graph_executor_optimize(optimize)
    torch._C._jit_set_autocast_mode(False)
    return model
