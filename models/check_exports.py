"""Checks that every model an export wrote can be trained as acprof will train it.

    python3 models check --dir DIR [--set test|demo|gpu] [--device cpu|cuda]

For each *.pt in DIR: the archive carries acprof_inputs / acprof_target / acprof_loss (and,
if any, acprof_autocast) and they parse; one training step (training_step.py; its forward
and loss under the stored autocast) gives a finite loss, and every parameter gets a finite
gradient. For files of the set (--set, default test), the loss must also equal the loss of
the same model built fresh in eager mode from the same seed (under the same autocast), which
shows the trace or script captured the model and that the export kept the initial weights.
Exits 1 on any failure.
"""

import argparse
import glob
import math
import os
import sys
from typing import List

import torch

from . import specs
from . import training_step
from .model_sets import SETS
from .reference_models import CATALOGUE

# Eager and TorchScript run the same kernels in the same order on the CPU; the margin
# only absorbs a different summation order should a kernel choose one.
LOSS_RELATIVE_TOLERANCE = 1e-5
# Under autocast they do not: TorchScript's own autocast pass (torch._C._jit_set_autocast_mode,
# on by default in Python and LibTorch alike) also casts the inputs of add/sub/mul/div and a few
# other ops to float32 when one of them may be float32, which eager autocast leaves in bfloat16
# (e.g. `scores * scale` in attention.py). The step is the same up to bfloat16 rounding (a
# relative 1e-5 on gpt_autocast's loss); this margin is still far below what wrong weights or a
# wrongly captured graph would change.
AUTOCAST_LOSS_RELATIVE_TOLERANCE = 1e-3


def _eager_loss(model_name: str, stored: training_step.StoredSpecs, device: str) -> float:
    torch.manual_seed(0)
    model = CATALOGUE[model_name].build().to(device)
    return training_step.run_step(model, stored, device=device).item()


def check_model(path: str, device: str = "cpu", set_name: str = "test") -> List[str]:
    """Returns what is wrong with the model at `path`; empty when it passes."""
    problems = []
    module, stored = training_step.load_with_specs(path, device)
    if not stored.inputs or not stored.loss:
        return ["the archive has no acprof_inputs/acprof_loss; export it with python3 models export"]
    for spec in stored.inputs + ([stored.target] if stored.target else []):
        try:
            specs.parse_spec(spec)
        except specs.SpecError as error:
            problems.append(str(error))
    try:
        specs.parse_autocast(stored.autocast)
    except specs.SpecError as error:
        problems.append(str(error))
    if problems:
        return problems
    loss = training_step.run_step(module, stored, device=device).item()
    if not math.isfinite(loss):
        problems.append(f"loss is {loss}")
    for name, parameter in module.named_parameters():
        if parameter.grad is None:
            problems.append(f"parameter {name} got no gradient")
        elif not torch.isfinite(parameter.grad).all():
            problems.append(f"parameter {name} has a non-finite gradient")
    file_name = os.path.basename(path)
    if file_name in SETS[set_name]:
        model_name, _ = SETS[set_name][file_name]
        eager = _eager_loss(model_name, stored, device)
        tolerance = AUTOCAST_LOSS_RELATIVE_TOLERANCE if stored.autocast else LOSS_RELATIVE_TOLERANCE
        if not math.isclose(loss, eager, rel_tol=tolerance):
            problems.append(f"loss {loss!r} differs from the eager model's {eager!r}")
    return problems


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="directory of exported models (python3 models export-all --out)")
    parser.add_argument("--set", dest="set_name", choices=sorted(SETS), default="test",
                        help="the set DIR was exported from: its files are compared with their eager models")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    args = parser.parse_args(argv)
    paths = sorted(glob.glob(os.path.join(args.dir, "*.pt")))
    if not paths:
        print(f"{args.dir}: no .pt models; run python3 models export-all --out {args.dir} first", file=sys.stderr)
        return 1
    failed = 0
    for path in paths:
        problems = check_model(path, args.device, args.set_name)
        print(f"{'ok  ' if not problems else 'FAIL'} {path}", flush=True)
        for problem in problems:
            print(f"     {problem}", flush=True)
        failed += bool(problems)
    print(f"{len(paths) - failed} of {len(paths)} models train", flush=True)
    return 1 if failed else 0

