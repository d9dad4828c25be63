#!/usr/bin/env python3
"""Head to head: what acprof does to one model's training step against what PyTorch already
gives its users, as a Markdown table, a JSON file and a frontier plot (SVG) of peak memory
against step time, each as a ratio to that engine's own baseline.

    scripts/bench_head_to_head.py --acprof /tmp/acprof-bench/bin/acprof --model gpt2_hf \
        [--rounds 3] [--work build/bench-head-to-head] [--svg docs/bench-gpt2_hf.svg]

--model is one of models/bench_models.py's BENCH_MODELS (Hugging Face GPT-2 and BERT from small random configs,
the repo's own GPT, torchvision ResNet-50 and ViT-B/16, each at a size whose eager step takes
about a second on a 2-core CPU and whose peak is mostly activations) or of
models/reference_models.py's catalogue (the test uses gpt_small). Every model is built with
seed 0, without dropout (so every engine's gradients can be compared with eager's), and exported
traced (the TorchScript engine) from the very weights the eager engines train. One training step
is forward, the loss and backward, gradients set to None before it, no optimizer, as
`acprof profile` measures it by default.

Rows, each engine's baseline first:
  - eager PyTorch (baseline); torch.utils.checkpoint (use_reentrant=False) around every block;
    selective activation checkpointing around every block with torchtitan's kind of policy: the
    outputs of matmul-like ops (SAVED_OPS) are saved, everything else is recomputed.
  - acprof's eager path (CPU), against eager's baseline, at the same budgets and its floor: the
    eager model's step recorded by acprof.eager.record_profile (no TorchScript), planned by
    `acprof plan`, applied to a fresh model by acprof.eager.apply_plan; the note gives the
    plan's predicted peak beside the row's measured one.
  - torch.compile on the inductor backend with no budget (baseline), and with
    torch._functorch.config.activation_memory_budget at 0.5, 0.2 and 0.0.
  - the TorchScript model (baseline), and acprof at 80/60/40/30 % of its profiled peak, at each
    peer's peak (the peer's peak ratio times acprof's profiled peak: the peers are built and
    measured first, so acprof is asked for exactly the peak a user compares it with) and at its
    floor (the smallest peak the planner reaches, read from `acprof plan --outcome`): `acprof
    plan --budget`, then `acprof rewrite` (verified against the TorchScript model), then the
    rewritten model is run here like every other row. A budget below the floor is a row that
    says so; it is not an error. acprof's eager path has the same budgets.
  A row whose engine fails (a combination CPU inductor cannot compile, say) is a row that shows
  the error's first line; --allow-error names the settings where that is a known failure.

How each number is measured, the same way for every row, all in this one process:
  - Peak: the bytes of every distinct storage alive when the step starts (parameters, buffers,
    inputs, target), plus the highest point of the running sum of the CPU allocator's
    allocations and frees during one step after warm-up, as torch.profiler(profile_memory=True)
    records them, replayed in order. That is the quantity `acprof profile` reports (live bytes of
    every tensor at the highest allocator event); its own number is in the JSON for comparison.
    With --device cuda: the caching allocator's allocated bytes instead, its highest point during
    the step above where the step started plus the row's own resident bytes (torch.cuda's
    max_memory_allocated after reset_peak_memory_stats); the reserved peak goes to the JSON.
  - Step time: the fastest of --rounds steps (the median is in the JSON too); with --device cuda,
    the device synchronized before and after. Rounds are interleaved: each round steps every row
    once, so a slow minute on a shared machine falls on every row alike.
  - Gradients: of the measured step, compared parameter by parameter with eager's: "equal" when
    every one is bit for bit, else the largest absolute difference; a difference above
    --grad-tolerance times eager's largest gradient is a failure.
  - What is run again in backward: for acprof's rows the ops of the plan's segments that make a
    tensor, for torch.compile's the ops its partitioner rematerializes (its debug count, read from
    its log record), views left out of both; a second table.
"""

import argparse
import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # models are built from configs; nothing is downloaded

import torch
from torch import nn

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)  # the reference models' package (models/)
sys.path.insert(0, os.path.join(REPO, "python"))  # acprof's eager path (python/acprof/eager)

from models import export, reference_models, specs, training_step  # noqa: E402
from models.bench_models import BENCH_MODELS, BenchModel, ListOfContainers, bench_model  # noqa: E402

ACPROF_BUDGETS = ["80%", "60%", "40%", "30%"]
COMPILE_BUDGETS = [0.5, 0.2, 0.0]
TABLE_HEADER = "| engine | setting | peak | peak / baseline | step time | time / baseline | gradients | note |"


def without_dropout(model: nn.Module) -> nn.Module:
    """Dropout modules set to p=0 (the catalogue's models have them): with dropout, torch.compile's
    generated kernels draw other masks than eager's, and no gradient could be compared."""
    for module in model.modules():
        if isinstance(module, nn.modules.dropout._DropoutNd):
            module.p = 0.0
    return model


def build_seeded(bench: BenchModel, device: str = "cpu") -> nn.Module:
    """Built on the CPU after seed 0 and moved, so every device starts from the same weights."""
    torch.manual_seed(0)
    return without_dropout(bench.build().train()).to(device)


# --- per-block and selective checkpointing ----------------------------------------------------

def saved_ops() -> List:
    """The matmul-like ops whose outputs selective checkpointing keeps, as torchtitan's policy does
    (torchtitan/models/llama3/infra/parallelize.py: mm, the SDPA kernels, _scaled_mm), plus what
    other models multiply with: addmm, bmm, baddbmm, convolution and CPU's flash-attention kernel.
    An op this torch lacks is left out."""
    names = ["mm", "addmm", "bmm", "baddbmm", "convolution", "_scaled_mm",
             "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
             "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention"]
    return [getattr(torch.ops.aten, name).default for name in names if hasattr(torch.ops.aten, name)]


def selective_context():
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    save = set(saved_ops())

    def policy(ctx, op, *args, **kwargs):
        return CheckpointPolicy.MUST_SAVE if op in save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


class Checkpointed(nn.Module):
    """One block under non-reentrant torch.utils.checkpoint; with a context_fn, under selective
    checkpointing. Its parameters keep their names under `.inner`, which gradient comparison strips."""

    def __init__(self, inner: nn.Module, context_fn: Optional[Callable] = None):
        super().__init__()
        self.inner = inner
        self.context_fn = context_fn

    def forward(self, *args, **kwargs):
        extra = {"context_fn": self.context_fn} if self.context_fn else {}
        return torch.utils.checkpoint.checkpoint(self.inner, *args, use_reentrant=False, **extra, **kwargs)


def wrap_blocks(bench: BenchModel, device: str, context_fn: Optional[Callable] = None) -> nn.Module:
    model = build_seeded(bench, device)
    found = bench.blocks(model)
    containers = found.containers if isinstance(found, ListOfContainers) else [found]
    for container in containers:
        for name, child in list(container.named_children()):
            setattr(container, name, Checkpointed(child, context_fn))
    return model


# --- one row ----------------------------------------------------------------------------------

@dataclass
class Row:
    engine: str
    setting: str
    baseline: bool = False
    peak_bytes: Optional[int] = None
    times_ms: List[float] = field(default_factory=list)
    gradients: str = ""       # "equal", a max abs difference, or "" when not compared
    gradients_ok: bool = True
    error: str = ""           # the first line of what failed; empty when the row ran
    note: str = ""            # for the table's reader; the verdicts below are its facts
    # Verdicts as fields, which the check reads: the rewrite's verification as its --outcome states it
    # (mode "bitwise" or "tolerance", tolerance, max_abs_diff), whether the row's budget is below
    # acprof's floor, whether the rewrite measured above its plan's budget (exit 5).
    verification: Optional[Dict] = None
    below_floor: bool = False
    over_budget: bool = False
    acprof_peak_bytes: Optional[int] = None  # acprof's own measurement of the same model
    peak_ratio: Optional[float] = None
    time_ratio: Optional[float] = None
    reserved_peak_bytes: Optional[int] = None  # CUDA: the caching allocator's reserved peak, process-wide
    # Ops of the forward that this row runs again in backward, by name: what acprof's plan recomputes,
    # or what torch.compile's partitioner rematerializes (its own count); empty when not known.
    recomputed: Dict[str, int] = field(default_factory=dict)
    budget_bytes: Optional[int] = None  # acprof's rows: the budget planned for, on acprof's count
    at_peer: str = ""  # acprof's rows planned at a peer's peak: that peer's row ("engine setting")

    @property
    def time_ms(self) -> Optional[float]:
        # The fastest round, not the median: on a CPU shared with other jobs one step of the same
        # row took from 0.25 s to 2.8 s within a minute (docs/benchmarks.md), and a median of a few
        # rounds drew on that noise; the fastest is the step the fewest other jobs slowed.
        return min(self.times_ms) if self.times_ms else None

    @property
    def median_time_ms(self) -> Optional[float]:
        return statistics.median(self.times_ms) if self.times_ms else None

    @property
    def measured(self) -> bool:
        return self.peak_bytes is not None and not self.error


def first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else 'no message'}"[:300]


def storage_key_and_bytes(t: torch.Tensor) -> tuple:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def resident_bytes(tensors: List[torch.Tensor]) -> int:
    storages = dict(storage_key_and_bytes(t) for t in tensors if t is not None)
    return sum(storages.values())


def parameter_name(name: str) -> str:
    """A parameter's name in the plain model: without torch.compile's and Checkpointed's wrappers,
    nor acprof.eager's CheckpointedModule, which holds the model as its attribute `module`."""
    name = name.replace("_orig_mod.", "").replace(".inner.", ".")
    return name[len("module."):] if name.startswith("module.") else name


class Runner:
    """One row's engine: a model, the step's tensors, and how to step it."""

    def __init__(self, row: Row, model: nn.Module, stored: training_step.StoredSpecs, device: str,
                 context: Callable = contextlib.nullcontext):
        self.row, self.model, self.stored, self.device, self.context = row, model, stored, device, context
        self.inputs, self.target = training_step.make_step_tensors(stored, 0, device)

    def synchronize(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def step(self) -> None:
        for parameter in self.model.parameters():
            parameter.grad = None
        torch.manual_seed(0)
        with self.context(), training_step.autocast_context(self.stored.autocast, self.device):
            loss = training_step.compute_loss(self.model(*self.inputs), self.stored.loss, self.target)
            loss.backward()

    def release_gradients(self) -> None:
        for parameter in self.model.parameters():
            parameter.grad = None

    def timed_step(self) -> None:
        self.synchronize()  # CUDA: the step's kernels, not only their launches, are timed
        start = time.perf_counter()
        self.step()
        self.synchronize()
        self.row.times_ms.append((time.perf_counter() - start) * 1000.0)
        self.release_gradients()

    def measured_step(self) -> Dict[str, torch.Tensor]:
        """The peak of one step, counted as the module docstring says; returns its gradients."""
        self.release_gradients()
        at_start = resident_bytes(list(self.model.parameters()) + list(self.model.buffers()) + self.inputs +
                                  [self.target])
        if self.device == "cuda":
            self.cuda_peak(at_start)
        else:
            self.cpu_peak(at_start)
        gradients = {parameter_name(name): p.grad.detach().clone() for name, p in self.model.named_parameters()
                     if p.grad is not None}
        self.release_gradients()
        return gradients

    def cuda_peak(self, at_start: int) -> None:
        """The caching allocator's allocated bytes: its highest point during the step above where
        the step started, plus this row's own resident bytes (the other rows' models are resident
        too, and are not this row's)."""
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        self.step()
        torch.cuda.synchronize()
        self.row.peak_bytes = at_start + torch.cuda.max_memory_allocated() - before
        self.row.reserved_peak_bytes = torch.cuda.max_memory_reserved()

    def cpu_peak(self, at_start: int) -> None:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    profile_memory=True) as recorded:
            self.step()
        events = [e for e in recorded.profiler.kineto_results.events() if e.name() == "[memory]"]
        events.sort(key=lambda e: e.start_ns())  # stable: one timestamp's events keep their order
        live = highest = 0
        for event in events:
            live += event.nbytes()
            highest = max(highest, live)
        self.row.peak_bytes = at_start + highest


def compare_gradients(row: Row, gradients: Dict[str, torch.Tensor], eager: Dict[str, torch.Tensor],
                      tolerance: float) -> None:
    if set(gradients) != set(eager):
        missing = sorted(set(eager) ^ set(gradients))
        row.gradients, row.gradients_ok = f"different parameters ({', '.join(missing[:3])})", False
        return
    if all(torch.equal(gradients[name], eager[name]) for name in eager):
        row.gradients = "equal"
        return
    largest = max(g.abs().max().item() for g in eager.values())
    difference = max((gradients[name] - eager[name]).abs().max().item() for name in eager)
    row.gradients = f"max abs diff {difference:.1e}"
    row.gradients_ok = difference <= tolerance * largest


# --- acprof -----------------------------------------------------------------------------------

def run_acprof(acprof: str, args: List[str], cwd: str, allowed=(0,)) -> subprocess.CompletedProcess:
    result = subprocess.run([acprof] + args, cwd=cwd, capture_output=True, text=True)
    if result.returncode not in allowed:
        raise RuntimeError(f"acprof {' '.join(args)} exited {result.returncode}: "
                           f"{(result.stderr.strip() or result.stdout.strip()).splitlines()[-1:]}")
    return result


def read_json(path: str) -> Dict:
    with open(path) as handle:
        return json.load(handle)


def acprof_peak(path: str) -> int:
    return read_json(path)["summary"]["peak_bytes"]


def budget_rows(acprof: str, work: str, engine: str, budgets: List[str], profiled: int,
                peer_peaks: List[Tuple[str, float]]) -> Tuple[int, List[tuple]]:
    """The floor of work/profile.json, which `acprof plan --outcome` names when no plan fits 1
    byte, and (budget, tag, row) for each of `budgets`, for each peer's peak ratio (that share of
    acprof's profiled peak: acprof asked for exactly the peak the peer reached), and for that floor."""
    run_acprof(acprof, ["plan", "profile.json", "--budget", "1B", "-o", "plan-floor.json",
                        "--outcome", "outcome-floor.json"], work, allowed=(3,))
    floor_bytes = read_json(os.path.join(work, "outcome-floor.json"))["floor"]["peak_bytes"]
    rows = [(budget, budget.rstrip("%"), Row(engine, f"acprof {budget}")) for budget in budgets]
    for index, (peer, ratio) in enumerate(peer_peaks):
        rows.append((str(int(ratio * profiled)), f"peer{index}",
                     Row(engine, f"acprof at {peer}'s peak ({ratio:.2f})", at_peer=peer)))
    rows.append((str(floor_bytes), "floor", Row(engine, f"acprof floor ({floor_bytes / 2**20:.1f} MiB)")))
    return floor_bytes, rows


def recomputed_ops(profile: Dict, plan: Dict) -> Dict[str, int]:
    """The ops of the plan's segments that make a tensor (each runs again in backward), by name;
    views and shape queries, which make none, are not counted."""
    producers = {tensor["producer_node"] for tensor in profile["tensors"] if tensor["bytes"] > 0}
    counts: Dict[str, int] = {}
    for segment in plan["segments"]:
        for node in profile["nodes"][segment["first_node"]:segment["last_node"] + 1]:
            if node["id"] in producers:
                name = node["kind"].split("::")[-1].split(".")[0]  # the eager recorder names overloads
                counts[name] = counts.get(name, 0) + 1
    return counts


def plan_fitting(acprof: str, work: str, budget: str, tag: str, row: Row, profile: Dict,
                 floor_bytes: int) -> Optional[Dict]:
    """Plans work/profile.json (`profile`, as read) at `budget` into plan-TAG.json: the plan when
    one fits (the row then has its budget in bytes and what it recomputes), None (the row's note
    says so) where the budget is below the floor."""
    planned = run_acprof(acprof, ["plan", "profile.json", "--budget", budget, "-o", f"plan-{tag}.json"], work,
                         allowed=(0, 3))
    if planned.returncode == 3:
        profiled = profile["summary"]["peak_bytes"]
        row.below_floor = True
        row.note = f"below the floor ({100 * floor_bytes / profiled:.0f} % of acprof's profiled peak)"
        return None
    plan = read_json(os.path.join(work, f"plan-{tag}.json"))
    row.budget_bytes = plan["budget_bytes"]
    row.recomputed = recomputed_ops(profile, plan)
    return plan


def acprof_models(acprof: str, work: str, model_path: str, args, peer_peaks: List[Tuple[str, float]]) -> List[tuple]:
    """(row, model file) for the TorchScript baseline and each acprof budget; a row without a file
    is finished (below the floor, or failed)."""
    device, budgets, tolerance = args.device, args.acprof_budgets, args.rewrite_tolerance
    run_acprof(acprof, ["profile", model_path, "-o", "profile.json", "--iters", "3", "--device", device], work)
    profile = read_json(os.path.join(work, "profile.json"))
    profiled = profile["summary"]["peak_bytes"]
    rows = [(Row("TorchScript", "baseline", baseline=True, acprof_peak_bytes=profiled), model_path)]
    floor_bytes, budget_plans = budget_rows(acprof, work, "acprof", budgets, profiled, peer_peaks)
    for budget, tag, row in budget_plans:
        try:
            if plan_fitting(acprof, work, budget, tag, row, profile, floor_bytes) is None:
                rows.append((row, None))
                continue
            report_dir = os.path.join(work, f"report-{tag}")
            os.makedirs(report_dir, exist_ok=True)
            rewritten = os.path.join(work, f"model.{tag}.pt")
            command = ["rewrite", model_path, f"plan-{tag}.json", "-o", rewritten, "--report-dir", report_dir,
                       "--time-rounds", "0", "--outcome", os.path.join(report_dir, "outcome.json")]
            try:
                rewrite = run_acprof(acprof, command + (["--tolerance", tolerance] if tolerance else []), work,
                                     allowed=(0, 5))
            except RuntimeError as error:
                if tolerance or not args.fallback_tolerance:
                    raise
                # Bit for bit could not run or failed (an op with no deterministic kernel, on CUDA):
                # this rewrite and the next ones are verified within the fallback, as the note says.
                log(f"bit-for-bit verification failed at {budget} ({error}); verifying within "
                    f"{args.fallback_tolerance} from here on")
                tolerance = args.fallback_tolerance
                rewrite = run_acprof(acprof, command + ["--tolerance", tolerance], work, allowed=(0, 5))
            verification = read_json(os.path.join(report_dir, "outcome.json"))["result"]["verification"]
            row.verification = verification
            row.over_budget = rewrite.returncode == 5
            row.note = ("verified bit for bit" if verification.get("mode") == "bitwise" else
                        f"verified within {verification.get('tolerance')} (max abs diff "
                        f"{verification.get('max_abs_diff', 0):.1e})")
            if row.over_budget:  # written and verified, but measured above the plan's budget
                row.note += "; **measured above the plan's budget (exit 5)**"
            row.acprof_peak_bytes = acprof_peak(os.path.join(report_dir, "profile.after.json"))
            rows.append((row, rewritten))
        except Exception as error:
            row.error = first_line(error)
            rows.append((row, None))
    return rows


def acprof_eager_models(acprof: str, work: str, bench: BenchModel, stored, args,
                        peer_peaks: List[Tuple[str, float]]) -> List[tuple]:
    """(row, factory) for acprof's eager path (python/acprof/eager) at each budget and its floor:
    the seeded eager model's step recorded by record_profile into the same profile format,
    planned by `acprof plan`, and applied to a fresh seeded model by apply_plan (non-reentrant
    checkpoints, in eager). A row without a factory is finished (below the floor, or failed). The
    note carries the plan's predicted peak beside the row's measured one."""
    from acprof import eager  # the repo's python/ package
    device = args.device
    eager_work = os.path.join(work, "eager")
    os.makedirs(eager_work, exist_ok=True)
    inputs, target = training_step.make_step_tensors(stored, 0, device)
    eager.record_profile(build_seeded(bench, device), inputs, loss=stored.loss, target=target,
                         path=os.path.join(eager_work, "profile.json"), autocast=stored.autocast or "")
    profile = read_json(os.path.join(eager_work, "profile.json"))
    rows = []
    floor_bytes, budget_plans = budget_rows(acprof, eager_work, "acprof (eager)", args.acprof_budgets,
                                            profile["summary"]["peak_bytes"], peer_peaks)
    for budget, tag, row in budget_plans:
        try:
            plan = plan_fitting(acprof, eager_work, budget, tag, row, profile, floor_bytes)
            if plan is None:
                rows.append((row, None))
                continue
            plan_path = os.path.join(eager_work, f"plan-{tag}.json")
            row.note = f"predicted {plan['predicted_peak_bytes'] / 2**20:.1f} MiB"
            rows.append((row, functools.partial(
                lambda path: eager.apply_plan(build_seeded(bench, device), path, example_inputs=inputs), plan_path)))
        except Exception as error:
            row.error = first_line(error)
            rows.append((row, None))
    return rows


# --- torch.compile ----------------------------------------------------------------------------

class RematerializedOps(logging.Handler):
    """Adds up what torch.compile's partitioner rematerializes, by op name: its debug mode
    (torch._functorch.partitioners.AOT_PARTITIONER_DEBUG) logs the count of each forward op the
    backward graph runs again, as a list of (name, count) in the record's arguments."""

    def __init__(self, into: Dict[str, int]):
        super().__init__(logging.INFO)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "Count of Ops Rematerialized: %s" and record.args:
            for name, count in record.args[0]:
                if not is_view_op(name):  # counted as acprof's rows are: ops that make a tensor
                    short = name.split(".")[-1]
                    self.into[short] = self.into.get(short, 0) + count


def is_view_op(name: str) -> bool:
    """Whether the op `name` ("aten.permute") returns a view of an input, as its schema says."""
    namespace, _, op = name.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), op)
        schema = getattr(packet, packet.overloads()[0])._schema
    except (AttributeError, RuntimeError, IndexError):
        return False
    return bool(schema.returns) and schema.returns[0].alias_info is not None


@contextlib.contextmanager
def counting_rematerialized_ops(into: Dict[str, int]):
    """While the partitioner runs: its debug counts on, into `into`, and not printed. A torch whose
    partitioner has no such switch or message leaves `into` empty (the table then lists no op)."""
    from torch._functorch import partitioners
    logger = logging.getLogger(partitioners.__name__)
    saved = (getattr(partitioners, "AOT_PARTITIONER_DEBUG", None), logger.level, logger.propagate)
    handler = RematerializedOps(into)
    partitioners.AOT_PARTITIONER_DEBUG = True
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the debug mode's other lines (saved sizes) are not for the console
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        partitioners.AOT_PARTITIONER_DEBUG, level, logger.propagate = saved
        logger.setLevel(level)


def inductor_with_budget(budget: Optional[float], rematerialized: Dict[str, int]):
    """The inductor backend with activation_memory_budget set while it partitions the joint graph
    (at the first step), counting into `rematerialized` what its partition recomputes. One backend
    object per row: dynamo guards each compiled frame on its backend, so the rows' models, all of
    one class, do not share a compiled graph."""
    from torch._functorch import config as functorch_config
    from torch._inductor.compile_fx import compile_fx

    def backend(graph_module, example_inputs):
        log(f"inductor compiles a graph of {len(graph_module.graph.nodes)} nodes, activation_memory_budget "
            f"{'default' if budget is None else budget}")
        settings = {} if budget is None else {"activation_memory_budget": budget}
        # Without AOTAutograd's cache: a graph found there is not partitioned again, and its
        # rematerialized ops would go uncounted (inductor's own code cache still serves).
        with functorch_config.patch(enable_autograd_cache=False, **settings), \
                counting_rematerialized_ops(rematerialized):
            return compile_fx(graph_module, example_inputs)

    return backend


def raise_recompile_limit() -> None:
    import torch._dynamo
    for name in ("recompile_limit", "cache_size_limit"):  # renamed in 2.6; older name kept as an alias
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)


# --- the run ----------------------------------------------------------------------------------

class RowGroup:
    """One engine's rows in table order, and a runner for each row whose model could be built."""

    def __init__(self, stored, device: str):
        self.stored, self.device = stored, device
        self.rows: List[Row] = []
        self.runners: List[Runner] = []

    def add(self, row: Row, make: Callable[[], nn.Module], context=contextlib.nullcontext) -> None:
        self.rows.append(row)
        try:
            self.runners.append(Runner(row, make(), self.stored, self.device, context))
        except Exception as error:
            row.error = first_line(error)


def guarded(runner: Runner, what: Callable[[], object]):
    """what(), or None with the row's error set when it raises (or had failed before)."""
    if runner.row.error:
        return None
    try:
        return what()
    except Exception as error:
        runner.row.error = first_line(error)
        return None


def peer_peak_ratios(runners: List[Runner]) -> List[Tuple[str, float]]:
    """Each peer's peak as a ratio to its engine's baseline, measured before acprof plans, so that
    acprof can be asked for exactly the peak each peer reached: (the peer's name, ratio) for every
    peer below its baseline. Two steps each (torch.compile compiles at the first); run_rows
    measures every row again."""
    for runner in runners:
        guarded(runner, runner.timed_step)
        guarded(runner, runner.measured_step)
        runner.row.times_ms.clear()
    baselines = {r.row.engine: r.row for r in runners if r.row.baseline and r.row.measured}
    peaks = []
    for runner in runners:
        baseline = baselines.get(runner.row.engine)
        if runner.row.baseline or not runner.row.measured or baseline is None:
            continue
        ratio = runner.row.peak_bytes / baseline.peak_bytes
        if ratio < 1.0:
            peaks.append((f"{runner.row.engine} {runner.row.setting}", ratio))
    log("peers' peaks: " + (", ".join(f"{name} {ratio:.2f}" for name, ratio in peaks) or "none below a baseline"))
    return peaks


def make_runners(args, bench: BenchModel, stored, work: str,
                 model_path: str) -> Tuple[List[Runner], List[Row], List[Tuple[str, float]]]:
    """Every row's runner, every row (in the order the tables list them), and the peers' peaks
    acprof planned at: the peers are built and measured first (--no-peer-peaks: not)."""
    device = args.device
    eager = RowGroup(stored, device)
    eager.add(Row("eager", "baseline", baseline=True), lambda: build_seeded(bench, device))
    eager.add(Row("eager", "checkpoint every block"), lambda: wrap_blocks(bench, device))
    eager.add(Row("eager", "selective checkpoint every block (save matmuls)"),
              lambda: wrap_blocks(bench, device, selective_context))
    compiled = RowGroup(stored, device)
    raise_recompile_limit()
    for budget in ([None] + args.compile_budgets) if args.compile else []:
        row = Row("torch.compile", "inductor, no budget" if budget is None else f"activation_memory_budget {budget}",
                  baseline=budget is None)
        compiled.add(row, lambda: torch.compile(build_seeded(bench, device),
                                                backend=inductor_with_budget(budget, row.recomputed)))
    peer_peaks = (peer_peak_ratios(eager.runners + compiled.runners) if args.acprof and args.peer_peaks else [])

    # acprof's eager path against eager's baseline; its recorder runs on the CPU.
    eager_path = RowGroup(stored, device)
    if args.acprof and device == "cpu":
        for row, make in acprof_eager_models(args.acprof, work, bench, stored, args, peer_peaks):
            if make is None:
                eager_path.rows.append(row)
            else:
                eager_path.add(row, make)
    script = RowGroup(stored, device)
    if args.acprof:
        for row, path in acprof_models(args.acprof, work, model_path, args, peer_peaks):
            if path is None:
                script.rows.append(row)
            else:
                # acprof runs the TorchScript model with the executor's optimization off, and so does
                # a user of its output.
                script.add(row, lambda: torch.jit.load(path, map_location=device).train(),
                           lambda: torch.jit.optimized_execution(False))
    groups = [eager, eager_path, compiled, script]
    return ([r for group in groups for r in group.runners], [row for group in groups for row in group.rows],
            peer_peaks)


def run_rows(runners: List[Runner], rounds: int, tolerance: float) -> None:
    for runner in runners:  # warm-up: torch.compile compiles here, TorchScript profiles
        guarded(runner, runner.timed_step)
        guarded(runner, runner.timed_step)
        runner.row.times_ms.clear()
        log(f"warmed up {runner.row.engine} {runner.row.setting}")
    for round_index in range(rounds):
        for runner in runners:
            guarded(runner, runner.timed_step)
        log(f"round {round_index + 1} of {rounds}")
    eager = None
    for runner in runners:
        gradients = guarded(runner, runner.measured_step)
        if gradients is None:
            continue
        if eager is None:
            eager = gradients  # the first runner is eager's baseline
        compare_gradients(runner.row, gradients, eager, tolerance)


def fill_ratios(rows: List[Row]) -> None:
    baseline = None
    for row in rows:
        if row.baseline:
            baseline = row if row.measured else None
        if row.measured and baseline is not None:
            row.peak_ratio = row.peak_bytes / baseline.peak_bytes
            row.time_ratio = row.time_ms / baseline.time_ms


def log(message: str) -> None:
    print(f"bench_head_to_head: {message}", file=sys.stderr, flush=True)


# --- verdicts ---------------------------------------------------------------------------------

# acprof's rows: its TorchScript rewrites (ratios to the TorchScript baseline) and its eager path
# (ratios to eager's baseline); the verdicts take the better of the two at each peak.
ACPROF_ENGINES = ("acprof", "acprof (eager)")


def acprof_time_at(rows: List[Row], peak_ratio: float) -> Optional[float]:
    """The lowest time ratio among acprof's measured points (its TorchScript baseline included) whose
    peak ratio is at or below `peak_ratio`: acprof's frontier there. None below its floor."""
    times = [row.time_ratio for row in rows if row.engine in ACPROF_ENGINES + ("TorchScript",)
             and row.peak_ratio is not None and row.peak_ratio <= peak_ratio]
    return min(times) if times else None


def verdicts(rows: List[Row]) -> Dict:
    peers = [row for row in rows if row.engine in ("eager", "torch.compile") and not row.baseline
             and row.peak_ratio is not None]
    acprof = [row for row in rows if row.engine in ACPROF_ENGINES and row.peak_ratio is not None]
    result = {"floor_ratio": min((r.peak_ratio for r in acprof), default=None), "peers": []}
    lowest = min(peers, key=lambda r: r.peak_ratio, default=None)
    result["lowest_peer"] = None if lowest is None else {"row": f"{lowest.engine} {lowest.setting}",
                                                         "peak_ratio": lowest.peak_ratio}
    result["floor_at_or_below_every_peer"] = (result["floor_ratio"] is not None and lowest is not None and
                                              result["floor_ratio"] <= lowest.peak_ratio)
    for peer in peers:
        ours = acprof_time_at(rows, peer.peak_ratio)
        result["peers"].append({"row": f"{peer.engine} {peer.setting}", "peak_ratio": peer.peak_ratio,
                                "time_ratio": peer.time_ratio, "acprof_time_ratio": ours,
                                "acprof_at_or_below": ours is not None and ours <= peer.time_ratio})
    return result


# --- output -----------------------------------------------------------------------------------

def cell_ratio(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.2f}"


def markdown(rows: List[Row]) -> str:
    lines = [TABLE_HEADER, "|---|---|---:|---:|---:|---:|---|---|"]
    for row in rows:
        note = f"**error**: {row.error}" if row.error else row.note
        if row.acprof_peak_bytes and row.peak_bytes:
            note += f"{'; ' if note else ''}acprof's own peak {row.acprof_peak_bytes / 2**20:.1f} MiB"
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} |".format(
            row.engine, row.setting, "–" if row.peak_bytes is None or row.error else f"{row.peak_bytes / 2**20:.1f} MiB",
            cell_ratio(row.peak_ratio), "–" if row.time_ms is None or row.error else f"{row.time_ms:.0f} ms",
            cell_ratio(row.time_ratio), row.gradients if row.gradients_ok else f"**{row.gradients}**", note))
    return "\n".join(lines)


def markdown_recomputed(rows: List[Row]) -> str:
    """What each row runs again in backward, where that is known: acprof's plans (the aten ops of
    their segments) and torch.compile's partitions (the ops its partitioner rematerializes)."""
    lines = ["| engine | setting | ops run again in backward | most of them |", "|---|---|---:|---|"]
    for row in rows:
        if row.engine in ACPROF_ENGINES + ("torch.compile",) and not row.error and row.peak_bytes is not None:
            common = sorted(row.recomputed.items(), key=lambda item: (-item[1], item[0]))[:8]
            lines.append(f"| {row.engine} | {row.setting} | {sum(row.recomputed.values())} | "
                         f"{', '.join(f'{name} {count}' for name, count in common) or '–'} |")
    return "\n".join(lines)


def markdown_verdicts(result: Dict) -> str:
    lines = []
    if result["lowest_peer"] is None or result["floor_ratio"] is None:
        return "No verdict: acprof or the peers measured nothing."
    lowest = result["lowest_peer"]
    lines.append(f"- acprof's floor {result['floor_ratio']:.2f} vs the peers' lowest peak {lowest['peak_ratio']:.2f} "
                 f"({lowest['row']}): {'at or below' if result['floor_at_or_below_every_peer'] else 'ABOVE'}.")
    for peer in result["peers"]:
        ours = peer["acprof_time_ratio"]
        if ours is None:
            lines.append(f"- at {peer['row']}'s peak {peer['peak_ratio']:.2f}: acprof has no point that low "
                         f"(the peer's time {peer['time_ratio']:.2f}).")
        else:
            lines.append(f"- at {peer['row']}'s peak {peer['peak_ratio']:.2f}: acprof's time {ours:.2f} vs the "
                         f"peer's {peer['time_ratio']:.2f}: {'at or below' if peer['acprof_at_or_below'] else 'ABOVE'}.")
    return "\n".join(lines)


ENGINE_COLOURS = {"eager": "#1f77b4", "torch.compile": "#d62728", "TorchScript": "#2ca02c", "acprof": "#2ca02c",
                  "acprof (eager)": "#9467bd"}


def pareto_front(rows: List[Row]) -> List[Row]:
    """The rows no other row beats on both peak and time, fastest first: a sweep's frontier."""
    front: List[Row] = []
    for row in sorted(rows, key=lambda r: (r.time_ratio, r.peak_ratio)):
        if not front or row.peak_ratio < front[-1].peak_ratio:
            front.append(row)
    return front


def legend_label(row: Row, number_of: Dict[str, int]) -> str:
    """A row's name in the plot's legend: acprof's rows without the repeated word, and a row
    planned at a peer's peak named by that peer's number in the legend."""
    if row.at_peer and row.at_peer in number_of:
        return f"{row.engine} at {number_of[row.at_peer]}'s peak"
    if row.setting.startswith("acprof "):
        return row.engine + row.setting[len("acprof"):]
    return f"{row.engine} {row.setting}"


def frontier_svg(title: str, rows: List[Row]) -> str:
    """Peak ratio (y) against time ratio (x), every measured row a numbered point (torch.compile's
    squares), each acprof sweep's frontier (from its baseline, the TorchScript model or eager's,
    down to its floor: the points no other point of the sweep beats on both) a line, drawn with
    matplotlib; the legend gives each number's row and its two ratios."""
    import io
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    points = [row for row in rows if row.peak_ratio is not None]
    number_of = {f"{row.engine} {row.setting}": index + 1 for index, row in enumerate(points)}
    figure, axes = plt.subplots(figsize=(10, max(4.8, 0.6 + 0.15 * len(points))))
    for engine, start in (("acprof", ("TorchScript", "baseline")), ("acprof (eager)", ("eager", "baseline"))):
        sweep = pareto_front([row for row in points if row.engine == engine or (row.engine, row.setting) == start])
        if len(sweep) > 1:
            axes.plot([r.time_ratio for r in sweep], [r.peak_ratio for r in sweep], color=ENGINE_COLOURS[engine],
                      linewidth=2)
    for index, row in enumerate(points):
        axes.scatter([row.time_ratio], [row.peak_ratio], color=ENGINE_COLOURS.get(row.engine, "#000"),
                     marker="s" if row.engine == "torch.compile" else "o",
                     label=f"{index + 1}. {legend_label(row, number_of)} ({row.peak_ratio:.2f}, {row.time_ratio:.2f})")
        axes.annotate(str(index + 1), (row.time_ratio, row.peak_ratio), textcoords="offset points", xytext=(5, 3),
                      fontsize=8)
    axes.set_xlabel("step time / engine baseline")
    axes.set_ylabel("peak / engine baseline")
    axes.set_ylim(bottom=0)
    axes.set_title(title)
    axes.grid(True, color="#eeeeee")
    axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    figure.tight_layout()
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None})
    plt.close(figure)
    return out.getvalue()


def export_traced(bench: BenchModel, training: specs.TrainingSpecs, path: str, device: str) -> None:
    """Traced on the device it will train on: a trace records the device of every tensor forward
    makes (GPT-2's position ids), so a model traced on the CPU fails on CUDA."""
    example = [t.to(device) for t in specs.make_tensors(training.inputs)]
    export.export(build_seeded(bench, device), example, path, "traced", training.inputs, training.target,
                  training.loss, training.autocast)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acprof", help="the acprof binary (an installed one); without it, the peers' rows only")
    parser.add_argument("--model", required=True, choices=sorted(set(BENCH_MODELS) | set(reference_models.CATALOGUE)))
    parser.add_argument("--ops", help="libacprof_ops.so, which rewritten models need (default: ../lib/ beside "
                        "--acprof, as `cmake --install` lays them out)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timed rounds (one step per row each)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where every engine trains (cuda: peaks from the caching allocator's allocated bytes)")
    parser.add_argument("--autocast", default=None, help="train every engine under this autocast dtype (bfloat16); "
                        "default: the model's own specs (float32)")
    parser.add_argument("--acprof-budgets", default=",".join(ACPROF_BUDGETS),
                        help="comma-separated `acprof plan --budget` values; the floor is always added")
    parser.add_argument("--compile-budgets", default=",".join(str(b) for b in COMPILE_BUDGETS),
                        help="comma-separated activation_memory_budget values for torch.compile's rows")
    parser.add_argument("--no-peer-peaks", dest="peer_peaks", action="store_false",
                        help="leave out acprof's rows at each peer's peak (those plan at the peak each peer "
                        "measured, so the peers are measured first)")
    parser.add_argument("--no-compile", dest="compile", action="store_false",
                        help="leave out torch.compile's rows (their compiles take minutes on a cold cache)")
    parser.add_argument("--export-only", metavar="FILE",
                        help="only export the model (traced, with its specs and --autocast) to FILE, then stop")
    parser.add_argument("--work", default="build/bench-head-to-head", help="directory for models, profiles, plans")
    parser.add_argument("--svg", help="where to draw the frontier (default: WORK/MODEL/frontier.svg)")
    parser.add_argument("--grad-tolerance", type=float, default=1e-4,
                        help="largest gradient difference from eager's, relative to eager's largest gradient")
    parser.add_argument("--rewrite-tolerance", help="acprof rewrite --tolerance: verify within this absolute "
                        "difference instead of bit for bit (for models whose recompute is not bit-exact)")
    parser.add_argument("--fallback-tolerance", help="verify bit for bit first; where that fails or cannot run "
                        "(an op without a deterministic kernel), rewrite again verified within this tolerance")
    parser.add_argument("--allow-error", action="append", default=[],
                        help="a row setting (e.g. 'activation_memory_budget 0.0') whose error is a known failure")
    args = parser.parse_args()
    args.acprof_budgets = [b for b in args.acprof_budgets.split(",") if b]
    args.compile_budgets = [float(b) for b in args.compile_budgets.split(",") if b]

    bench = bench_model(args.model)
    t = bench.training if args.autocast is None else dataclasses.replace(bench.training, autocast=args.autocast)
    if args.export_only:
        export_traced(bench, t, args.export_only, args.device)
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda, but this torch sees no CUDA GPU")
    work = os.path.abspath(os.path.join(args.work, args.model))
    os.makedirs(work, exist_ok=True)
    if args.acprof:
        args.acprof = os.path.abspath(args.acprof)
        torch.ops.load_library(args.ops or os.path.join(os.path.dirname(args.acprof), "..", "lib",
                                                        "libacprof_ops.so"))
    model_path = os.path.join(work, "model.pt")
    export_traced(bench, t, model_path, args.device)
    _, stored = training_step.load_with_specs(model_path)

    started = time.time()
    runners, rows, peer_peaks = make_runners(args, bench, stored, work, model_path)
    run_rows(runners, args.rounds, args.grad_tolerance)
    fill_ratios(rows)
    result = verdicts(rows)

    title = f"{args.model}: peak and step time against each engine's baseline"
    svg_path = args.svg or os.path.join(work, "frontier.svg")
    with open(svg_path, "w") as handle:
        handle.write(frontier_svg(title, rows))
    machine = {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
               "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
               "torch": torch.__version__, "date": time.strftime("%Y-%m-%d", time.gmtime()),
               "seconds": round(time.time() - started)}
    with open(os.path.join(work, "results.json"), "w") as handle:
        json.dump({"model": args.model, "inputs": stored.inputs, "machine": machine, "peer_peaks": peer_peaks,
                   "rows": [dict(vars(row), time_ms=row.time_ms, median_time_ms=row.median_time_ms) for row in rows], "verdicts": result}, handle,
                  indent=1)

    where = machine["device"] if args.device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"model {args.model} ({', '.join(stored.inputs)}{', autocast ' + stored.autocast if stored.autocast else ''}), "
          f"{where}, "
          f"torch {torch.__version__}, {args.rounds} interleaved rounds (time: the fastest), "
          f"{machine['seconds']} s\n")
    print(markdown(rows))
    print()
    print(markdown_recomputed(rows))
    print()
    print(markdown_verdicts(result))
    print(f"\nfrontier: {svg_path}; rows as JSON: {os.path.join(work, 'results.json')}")
    failures = [f"{row.engine} {row.setting}: {row.error}" for row in rows
                if row.error and row.setting not in args.allow_error]
    failures += [f"{row.engine} {row.setting}: gradients {row.gradients}" for row in rows if not row.gradients_ok]
    for failure in failures:
        log(f"FAILED {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
