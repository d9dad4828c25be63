#!/usr/bin/env python3
"""Head to head: what acprof does to one model's training step against what its users would
pick instead, as a Markdown table of peak memory and median step time, each as a ratio to
that engine's own baseline.

    scripts/bench_head_to_head.py --acprof build/cli/acprof --model gpt_long [--device cpu|cuda]

The model is one of models/reference_models.py's catalogue, built with seed 0 and exported
traced (the TorchScript engine) from the very weights the eager engines train. One training
step is forward, the archive's loss and backward, with gradients set to None before it and no
optimizer, as `acprof profile` measures it by default.

Rows and baselines:
  - TorchScript: `acprof profile` of the exported model (executor optimization off, acprof's
    default). Baseline of the acprof rows.
  - acprof at 80/60/40/30 % of the profiled peak and at its floor (the smallest peak the planner
    reaches, read from `acprof plan`'s refusal of a 1-byte budget): `acprof plan --budget`, then
    `acprof rewrite` (verified), whose re-profile of the rewritten model gives the row. A budget
    below the floor is a row that says so.
  - eager PyTorch, and eager with torch.utils.checkpoint (non-reentrant) around every block: the
    children of the model's `blocks` container, or of the model itself when it is an
    nn.Sequential. Baseline: plain eager.
  - torch.compile with torch._functorch.config.activation_memory_budget 0.5 and 0.2 against
    torch.compile with the budget at 1.0, where this torch has torch.compile; otherwise one row
    saying it is unavailable.

How each number is measured:
  - Peak, TorchScript and acprof rows: acprof's own measurement, summary.peak_bytes of
    profile.json and of the rewrite's profile.after.json: the live bytes of every tensor, weights,
    gradients and inputs included, at the highest allocator event of one measured iteration
    (each allocation and free is reported by the allocator to acprof's hook).
  - Peak, eager and torch.compile rows on the CPU (no allocator counter to read): the bytes of
    every distinct storage alive when the step starts (parameters, buffers, inputs, target), plus
    the highest point of the running sum of the allocator's allocations and frees during one step
    (after a warm-up step), as torch.profiler(profile_memory=True) records them, replayed in order.
    That is the same quantity as acprof's, measured by torch's profiler instead of acprof's hook;
    the table's first eager row and the TorchScript row can be compared to check it.
    On CUDA: torch.cuda.max_memory_allocated() over one step after reset_peak_memory_stats(),
    which counts everything resident (allocated, not reserved).
  - Step time, TorchScript and acprof rows: the sum of the profile's phase times (each step's
    median over the measured iterations, the profiling probes' cost excluded).
  - Step time, eager and torch.compile rows: the median wall time of --iters steps after one
    warm-up step (two for torch.compile, whose first step compiles), the device synchronized.
"""

import argparse
import importlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, List, Optional

import torch
from torch import nn

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "models"))

import reference_models  # noqa: E402
import training_step  # noqa: E402

ACPROF_BUDGETS = ["80%", "60%", "40%", "30%"]
COMPILE_BUDGETS = [0.5, 0.2]
TABLE_HEADER = "| engine | setting | peak | peak / baseline | step time | time / baseline | note |"


@dataclass
class Row:
    engine: str
    setting: str
    peak_bytes: Optional[int] = None
    time_ms: Optional[float] = None
    baseline: Optional["Row"] = None  # None: this row is its engine's baseline
    note: str = ""


def mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def ratio(value: Optional[float], base: Optional[float]) -> str:
    return "–" if value is None or not base else f"{value / base:.2f}"


def markdown(rows: List[Row]) -> str:
    lines = [TABLE_HEADER, "|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        base = row.baseline or row
        lines.append("| {} | {} | {} | {} | {} | {} | {} |".format(
            row.engine, row.setting,
            "–" if row.peak_bytes is None else mib(row.peak_bytes),
            ratio(row.peak_bytes, base.peak_bytes),
            "–" if row.time_ms is None else f"{row.time_ms:.1f} ms",
            ratio(row.time_ms, base.time_ms),
            row.note))
    return "\n".join(lines)


# --- acprof ---------------------------------------------------------------------------------

def run_acprof(acprof: str, args: List[str], cwd: str, allowed=(0,)) -> subprocess.CompletedProcess:
    result = subprocess.run([acprof] + args, cwd=cwd, capture_output=True, text=True)
    if result.returncode not in allowed:
        sys.exit(f"bench_head_to_head: acprof {' '.join(args)} failed ({result.returncode}): "
                 f"{result.stderr.strip() or result.stdout.strip()}")
    return result


def profile_row(path: str) -> tuple:
    with open(path) as handle:
        summary = json.load(handle)["summary"]
    return summary["peak_bytes"], sum(summary["phase_time_us"].values()) / 1000.0


def acprof_rows(acprof: str, work: str, model_path: str, device: str) -> List[Row]:
    run_acprof(acprof, ["profile", model_path, "--device", device, "-o", "profile.json"], work)
    peak, time_ms = profile_row(os.path.join(work, "profile.json"))
    baseline = Row("TorchScript", "baseline (acprof profile)", peak, time_ms)
    rows = [baseline]

    # The floor: the planner's refusal of a 1-byte budget names the smallest peak it reaches.
    refusal = run_acprof(acprof, ["plan", "profile.json", "--budget", "1", "-o", "plan-floor.json"], work,
                         allowed=(3,))
    floor = re.search(r"--budget (\d+)\)", refusal.stderr)
    if not floor:
        sys.exit(f"bench_head_to_head: no floor in acprof plan's refusal: {refusal.stderr.strip()}")
    floor_bytes = int(floor.group(1))

    for budget in ACPROF_BUDGETS + [str(floor_bytes)]:
        tag = budget.rstrip("%") if budget.endswith("%") else "floor"
        setting = f"acprof {budget}" if tag != "floor" else f"acprof at its floor ({mib(floor_bytes)})"
        plan = run_acprof(acprof, ["plan", "profile.json", "--budget", budget, "-o", f"plan-{tag}.json"], work,
                          allowed=(0, 3))
        if plan.returncode == 3:
            rows.append(Row("acprof", setting, baseline=baseline,
                            note=f"below the floor ({100 * floor_bytes / peak:.0f} % of the baseline)"))
            continue
        report_dir = os.path.join(work, f"report-{tag}")
        os.makedirs(report_dir, exist_ok=True)
        rewrite = run_acprof(acprof, ["rewrite", model_path, f"plan-{tag}.json", "-o", f"model.{tag}.pt",
                                      "--report-dir", report_dir, "--time-rounds", "0"], work)
        verified = next((line for line in rewrite.stdout.splitlines() if line.startswith("verified")), "")
        peak_after, time_after = profile_row(os.path.join(report_dir, "profile.after.json"))
        rows.append(Row("acprof", setting, peak_after, time_after, baseline,
                        note="verified bit for bit" if "bit for bit" in verified else verified))
    return rows


# --- eager and torch.compile -----------------------------------------------------------------

class CheckpointEach(nn.Module):
    """Runs each child of `blocks` under torch.utils.checkpoint, as one places it by hand."""

    def __init__(self, blocks: nn.Module):
        super().__init__()
        self.blocks = blocks

    def forward(self, x):
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return x


def checkpoint_every_block(model: nn.Module) -> nn.Module:
    if isinstance(getattr(model, "blocks", None), (nn.Sequential, nn.ModuleList)):
        model.blocks = CheckpointEach(model.blocks)
        return model
    if isinstance(model, nn.Sequential):
        return CheckpointEach(model)
    sys.exit("bench_head_to_head: the model has no `blocks` container and is no nn.Sequential; "
             "say where its blocks are in checkpoint_every_block")


def storage_key_and_bytes(t: torch.Tensor) -> tuple:
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr(), storage.nbytes()


def resident_bytes(tensors: List[torch.Tensor]) -> int:
    storages = dict(storage_key_and_bytes(t) for t in tensors if t is not None)
    return sum(storages.values())


class StepRunner:
    def __init__(self, model: nn.Module, stored: training_step.StoredSpecs, device: str):
        self.model, self.stored, self.device = model.to(device).train(), stored, device
        self.inputs, self.target = training_step.make_step_tensors(stored, 0, device)

    def step(self) -> None:
        for parameter in self.model.parameters():
            parameter.grad = None
        torch.manual_seed(0)
        with training_step.autocast_context(self.stored.autocast, self.device):
            loss = training_step.compute_loss(self.model(*self.inputs), self.stored.loss, self.target)
        loss.backward()

    def synchronize(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def peak_bytes(self) -> int:
        if self.device == "cuda":
            self.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.step()
            self.synchronize()
            return torch.cuda.max_memory_allocated()
        for parameter in self.model.parameters():
            parameter.grad = None
        at_start = resident_bytes(list(self.model.parameters()) + list(self.model.buffers()) + self.inputs +
                                  [self.target])
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    profile_memory=True) as recorded:
            self.step()
        events = [e for e in recorded.profiler.kineto_results.events() if e.name() == "[memory]"]
        # Stable: events of one timestamp stay in the order the profiler recorded them.
        events.sort(key=lambda e: e.start_ns())  # 2.x names it in ns (1.13: start_us)
        live = highest = 0
        for event in events:
            live += event.nbytes()
            highest = max(highest, live)
        return at_start + highest

    def median_time_ms(self, iters: int, warmup: int) -> float:
        for _ in range(warmup):
            self.step()
        times = []
        for _ in range(iters):
            self.synchronize()
            start = time.perf_counter()
            self.step()
            self.synchronize()
            times.append((time.perf_counter() - start) * 1000.0)
        return statistics.median(times)


def measure(engine: str, setting: str, make_model: Callable[[], nn.Module], stored, device: str, iters: int,
            warmup: int = 1, baseline: Optional[Row] = None) -> Row:
    runner = StepRunner(make_model(), stored, device)
    time_ms = runner.median_time_ms(iters, warmup)
    return Row(engine, setting, runner.peak_bytes(), time_ms, baseline)


def compile_rows(build: Callable[[], nn.Module], stored, device: str, iters: int) -> List[Row]:
    if not hasattr(torch, "compile"):
        return [Row("torch.compile", "activation_memory_budget " + ", ".join(map(str, COMPILE_BUDGETS)),
                    note=f"unavailable in torch {torch.__version__} (no torch.compile)")]
    dynamo = importlib.import_module("torch._dynamo")  # torch 2.x only
    functorch_config = importlib.import_module("torch._functorch.config")
    if not hasattr(functorch_config, "activation_memory_budget"):
        return [Row("torch.compile", "activation_memory_budget",
                    note=f"unavailable in torch {torch.__version__} (no activation_memory_budget)")]
    rows: List[Row] = []
    for budget in [1.0] + COMPILE_BUDGETS:
        dynamo.reset()
        functorch_config.activation_memory_budget = budget
        row = measure("torch.compile", f"activation_memory_budget {budget}", lambda: torch.compile(build()), stored,
                      device, iters, warmup=2, baseline=rows[0] if rows else None)
        if budget == 1.0:
            row.setting += " (baseline)"
        rows.append(row)
    functorch_config.activation_memory_budget = 1.0
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acprof", required=True, help="the acprof binary")
    parser.add_argument("--model", required=True, choices=sorted(reference_models.CATALOGUE))
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--iters", type=int, default=5, help="timed steps per eager or compiled engine")
    parser.add_argument("--work", default="build/bench-head-to-head", help="directory for models, profiles, plans")
    args = parser.parse_args()

    work = os.path.abspath(os.path.join(args.work, args.model))
    os.makedirs(work, exist_ok=True)
    reference = reference_models.CATALOGUE[args.model]
    model_path = os.path.join(work, "model.pt")
    reference.export(model_path, "traced")
    _, stored = training_step.load_with_specs(model_path)

    def build() -> nn.Module:
        torch.manual_seed(0)  # the exported model's weights
        return reference.build()

    # acprof trains the TorchScript model in executor mode off, and so does a user of its output;
    # eager PyTorch has no executor.
    rows = acprof_rows(os.path.abspath(args.acprof), work, model_path, args.device)
    eager = measure("eager PyTorch", "baseline", build, stored, args.device, args.iters)
    rows += [eager, measure("eager PyTorch", "torch.utils.checkpoint on every block",
                            lambda: checkpoint_every_block(build()), stored, args.device, args.iters,
                            baseline=eager)]
    rows += compile_rows(build, stored, args.device, args.iters)

    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"model {args.model} ({', '.join(stored.inputs)}), {device_name}, torch {torch.__version__}\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
