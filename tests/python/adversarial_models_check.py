"""A generator of adversarial models: random small forwards composed from a vocabulary of awkward
ops, each checked through every door acprof has, at its floor and halfway to its peak.

    adversarial_models_check.py --acprof build/cli/acprof --work DIR [--seed 0] [--seconds 180]
                                [--models N] [--only K [--model NAME]]

The vocabulary (BLOCKS) holds what outside models found faults in: views written in place,
integer index paths (argmax into an embedding, gather with an expanded index, one_hot into
masked_fill, scatter_add into zeros_like; and all four in one block between linear layers), a
weight shared by two blocks, a buffer written in forward, dropout (random draws the recompute must
replay), tuples, lists and dicts inside a block, a branch on a shape and a loop; the model returns
a tensor, a tuple or a dict. Model k of seed s draws 3 to 6 blocks from random.Random(s * 1000 + k),
so a failure names a model anyone can rebuild (`--seed s --only k`; with `--model NAME`, the name it
printed, the same model once the vocabulary has grown).

Each model is checked
  - traced and scripted (torch.jit.trace / torch.jit.script, saved and run by the acprof binary):
    `acprof profile`, the floor from `acprof plan --budget 1B --outcome`, then plans at the floor
    plus 2 % and halfway between the floor and the profiled peak, each rewritten with
    `--outcome`: verified bit for bit, and the rewritten model's measured peak equal to the
    predicted peak to the byte and within the budget;
  - as the eager module itself, through what acprof.fit runs (record_profile, the in-process
    planner, apply_plan, measure_step), halfway: bit for bit, measured peak equal to the prediction,
    within the budget.
Every plan is made from the profile with each op's time set to 1 us, so that what is checked is
the same on every machine and in every run.
A model with nothing to recompute (floor = peak) is counted as such and not planned.

Composing stops after --models models or when --seconds have passed, whichever is first (at least
one model is checked). It prints one line per check and a JSON summary (models, checks, failures
with what each broke). It exits 1 unless the failures among the models it checked are exactly the
known faults of KNOWN_FAULTS that those models hold: a new failure fails it, and so does a known
fault that no longer fails (take it off the list with the fix).
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from acprof.compiled_fit import with_unit_op_times

# Activations many times the weights (a batch of 512 rows of 32), so that there is memory to save.
WIDTH = 32
BATCH = 512


# -- the vocabulary: each block maps [BATCH, WIDTH] to [BATCH, WIDTH] ------------------------------

class ViewWrittenInPlace(nn.Module):
    """A view of an activation written in place, then the activation read."""

    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        z = self.fc(x)
        v = z.view(z.size(0), 2, -1)
        v.mul_(0.5)
        return torch.relu(z)


class ArgmaxEmbedding(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.embed = nn.Embedding(WIDTH, WIDTH)

    def forward(self, x):
        return x + self.embed(x.argmax(-1))


class GatherExpanded(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = nn.Linear(4, WIDTH)

    def forward(self, x):
        index = x.argmax(-1, keepdim=True).expand(-1, 4)
        return x + self.fc(x.gather(1, index))


class IntegerPaths(nn.Module):
    """Every integer path in one block, each between linear layers (issue 61's traced model)."""

    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.embed = nn.Embedding(WIDTH, WIDTH)
        self.fc = nn.ModuleList([nn.Linear(WIDTH, WIDTH) for _ in range(4)])
        self.gathered = nn.Linear(4, WIDTH)
        self.width = WIDTH

    def forward(self, x):
        x = torch.relu(self.fc[0](x))
        x = x + self.embed(x.argmax(-1))
        x = torch.relu(self.fc[1](x))
        x = x + self.gathered(x.gather(1, x.argmax(-1, keepdim=True).expand(-1, 4)))
        x = torch.relu(self.fc[2](x.masked_fill(F.one_hot(x.argmax(-1), self.width).to(torch.bool), 0.0)))
        y = self.fc[3](x)
        return torch.zeros_like(y).scatter_add(1, (y.abs() * 7).long() % self.width, y) + x


class OneHotMaskedFill(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)
        self.width = WIDTH

    def forward(self, x):
        mask = F.one_hot(x.argmax(-1), self.width).to(torch.bool)
        return self.fc(x.masked_fill(mask, 0.0))


class ScatterAddIntoZeros(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)
        self.width = WIDTH

    def forward(self, x):
        y = self.fc(x)
        index = (y.abs() * 7).long() % self.width
        return torch.zeros_like(y).scatter_add(1, index, y) + x


class SharedWeight(nn.Module):
    """A linear layer that another block of the model also holds and runs."""

    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = shared

    def forward(self, x):
        return torch.tanh(self.fc(x))


class BufferWrittenInForward(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)
        self.register_buffer("running", torch.zeros(WIDTH))

    def forward(self, x):
        y = self.fc(x)
        if self.training:
            self.running.mul_(0.9).add_(y.detach().mean(0), alpha=0.1)
        return y - self.running


class Dropout(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return F.dropout(F.gelu(self.fc(x)), 0.1, self.training)


class TupleListDict(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.a = nn.Linear(WIDTH, WIDTH)
        self.b = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        parts = [self.a(x), self.b(x)]
        pair = (parts[0], parts[1])
        named = {"gate": pair[1], "value": pair[0]}
        return named["value"] * torch.sigmoid(named["gate"])


class BranchOnShape(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        if x.size(0) > 1:
            return F.silu(self.fc(x)) + x
        return x


class Loop(nn.Module):
    def __init__(self, shared: nn.Linear):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        for _ in range(2):
            x = x + torch.relu(self.fc(x))
        return x


# Faults the generator found and acprof has not fixed yet, by (seed, model, door): each fails the
# check where it does not fail any more, so the list follows the fixes.
KNOWN_FAULTS: Dict[Tuple[int, int, str], str] = {
}

BLOCKS = [ViewWrittenInPlace, ArgmaxEmbedding, GatherExpanded, OneHotMaskedFill, ScatterAddIntoZeros,
          SharedWeight, BufferWrittenInForward, Dropout, TupleListDict, BranchOnShape, Loop, IntegerPaths]


# -- the models: the blocks in order, then a head; three forms of output -------------------------

class Composed(nn.Module):
    def __init__(self, blocks: List[type]):
        super().__init__()
        self.shared = nn.Linear(WIDTH, WIDTH)
        self.blocks = nn.ModuleList([block(self.shared) for block in blocks])
        self.head = nn.Linear(WIDTH, 10)

    def body(self, x):
        x = self.shared(x)
        for block in self.blocks:
            x = block(x)
        return x


class TensorOutput(Composed):
    def forward(self, x):
        return self.head(self.body(x))


class TupleOutput(Composed):
    def forward(self, x):
        y = self.body(x)
        return self.head(y), y


class DictOutput(Composed):
    def forward(self, x):
        y = self.body(x)
        return {"logits": self.head(y), "hidden": y}


OUTPUTS = [TensorOutput, TupleOutput, DictOutput]


def compose(seed: int, k: int, named: str = "") -> Tuple[str, nn.Module]:
    """Model k of the seed, or, given its name as printed (`TensorOutput(IntegerPaths, Dropout)`),
    that model with model k's weights: a name stays one model when the vocabulary grows."""
    if named:
        output_name, _, block_names = named.rstrip(")").partition("(")
        by_name = {c.__name__: c for c in BLOCKS + OUTPUTS}
        output, blocks = by_name[output_name.strip()], [by_name[b.strip()] for b in block_names.split(",")]
    else:
        draw = random.Random(seed * 1000 + k)
        blocks = [draw.choice(BLOCKS) for _ in range(draw.randint(3, 6))]
        output = draw.choice(OUTPUTS)
    torch.manual_seed(seed * 1000 + k)
    name = f"{output.__name__}({', '.join(b.__name__ for b in blocks)})"
    return name, output(blocks)


# -- the checks ----------------------------------------------------------------------------------

class Checker:
    def __init__(self, acprof: str, work: str):
        self.acprof, self.work = acprof, work
        self.seed, self.index = 0, 0  # the model being checked
        self.checks = 0
        self.failures: List[Dict] = []

    def fail(self, model: str, door: str, what: str) -> None:
        self.failures.append({"model": model, "index": self.index, "door": door, "what": what})
        known = KNOWN_FAULTS.get((self.seed, self.index, door))
        print(f"  FAIL {door}: {what}" + (f" (known: {known})" if known else ""), flush=True)

    def run(self, args: List[str], cwd: str, allowed=(0,)) -> subprocess.CompletedProcess:
        done = subprocess.run([self.acprof] + args, cwd=cwd, capture_output=True, text=True)
        if done.returncode not in allowed:
            raise RuntimeError(f"acprof {' '.join(args)} exited {done.returncode}: "
                               f"{(done.stderr.strip().splitlines() or [''])[0][:300]}")
        return done

    def torchscript(self, name: str, model: nn.Module, x: torch.Tensor, how: str, cwd: str) -> None:
        door = how
        path = os.path.join(cwd, f"{how}.pt")
        model.train()
        exported = torch.jit.trace(model, (x,), strict=False, check_trace=False) if how == "traced" \
            else torch.jit.script(model)
        exported.save(path)
        spec = f"float32[{BATCH},{WIDTH}]"
        profile = os.path.join(cwd, f"{how}.profile.json")
        self.run(["profile", path, "--input", spec, "-o", profile], cwd)
        with open(profile) as handle:
            recorded = json.load(handle)
        with open(profile, "w") as out:
            json.dump(with_unit_op_times(recorded), out)
        peak = recorded["summary"]["peak_bytes"]
        self.run(["plan", profile, "--budget", "1B", "-o", os.path.join(cwd, "floor.plan.json"), "--outcome",
                  os.path.join(cwd, "floor.json")], cwd, allowed=(3,))
        floor = json.load(open(os.path.join(cwd, "floor.json")))["floor"]["peak_bytes"]
        if floor >= peak:
            print(f"  {door}: nothing to recompute (floor = peak = {peak} B)", flush=True)
            return
        for tag, budget in (("floor", min(peak, floor + max(1, floor // 50))), ("halfway", (floor + peak) // 2)):
            plan = os.path.join(cwd, f"{how}.{tag}.plan.json")
            outcome = os.path.join(cwd, f"{how}.{tag}.outcome.json")
            self.run(["plan", profile, "--budget", f"{budget}B", "-o", plan], cwd)
            done = self.run(["rewrite", path, plan, "-o", os.path.join(cwd, f"{how}.{tag}.ckpt.pt"), "--time-rounds",
                             "0", "--report-dir", cwd, "--outcome", outcome], cwd, allowed=(0, 4, 5))
            self.checks += 1
            reported = json.load(open(outcome))
            result = reported.get("result") or {}
            verification, measured = result.get("verification"), result.get("peak", {})
            if done.returncode != 0 or verification is None or verification.get("mode") != "bitwise":
                self.fail(name, f"{door} {tag}", f"exit {done.returncode}: {(reported.get('error') or {}).get('message', '')}"
                          f" verification {verification}")
                continue
            if not measured["measured_bytes"] == measured["predicted_bytes"] <= measured["budget_bytes"]:
                self.fail(name, f"{door} {tag}", f"measured {measured['measured_bytes']} B, predicted "
                          f"{measured['predicted_bytes']} B, budget {measured['budget_bytes']} B")
                continue
            print(f"  {door} {tag}: bit for bit, measured = predicted = {measured['measured_bytes']} B "
                  f"<= {measured['budget_bytes']} B", flush=True)

    def eager(self, name: str, model: nn.Module, x: torch.Tensor) -> None:
        """acprof.fit's steps (record, plan in-process, apply, measure both), planned from unit op
        times as the TorchScript doors are."""
        from acprof import engine
        from acprof.eager import apply_plan, measure_step, record_profile
        from acprof.eager.verification import compare_steps
        profile = with_unit_op_times(record_profile(model, [x]))
        peak = profile["summary"]["peak_bytes"]
        floor = engine.plan_outcome(profile, "1B")["smallest_peak_bytes"]
        if floor >= peak:
            print(f"  eager: nothing to recompute (floor = peak = {peak} B)", flush=True)
            return
        self.checks += 1
        plan = engine.plan(profile, f"{(floor + peak) // 2}B")
        before = measure_step(model, [x])
        after = measure_step(apply_plan(model, plan, profile=profile, example_inputs=[x]), [x])
        verdict = compare_steps(before, after, "module.", None)
        if verdict["differences"]:
            self.fail(name, "eager halfway", f"not bit for bit: {'; '.join(verdict['differences'][:2])}")
        elif not after["peak_bytes"] == plan["predicted_peak_bytes"] <= plan["budget_bytes"]:
            self.fail(name, "eager halfway", f"measured {after['peak_bytes']} B, predicted {plan['predicted_peak_bytes']} B, "
                      f"budget {plan['budget_bytes']} B")
        else:
            print(f"  eager halfway: bit for bit, measured = predicted = {after['peak_bytes']} B "
                  f"<= {plan['budget_bytes']} B", flush=True)


def main() -> int:
    import warnings
    warnings.filterwarnings("ignore")  # TorchScript's deprecation and the tracer's on the branch on a shape
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acprof", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--only", type=int, default=-1, help="check model k of the seed alone")
    parser.add_argument("--model", default="", help="with --only k: check the model of this name (as printed) alone")
    args = parser.parse_args()
    if args.model and args.only < 0:
        parser.error("--model needs --only k: the model takes model k's weights")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    checker = Checker(os.path.abspath(args.acprof), args.work)
    checker.seed = args.seed
    checked = []
    start, models, nothing = time.monotonic(), 0, 0
    indices = [args.only] if args.only >= 0 else range(args.models)
    for k in indices:
        if models and time.monotonic() - start > args.seconds:
            break
        name, model = compose(args.seed, k, args.model)
        checker.index = k
        checked.append(k)
        print(f"model {args.seed}/{k}: {name}", flush=True)
        cwd = os.path.join(args.work, f"model-{k}")
        shutil.rmtree(cwd, ignore_errors=True)  # a model checked alone kept its files last time
        os.makedirs(cwd)
        torch.manual_seed(k)
        x = torch.randn(BATCH, WIDTH)
        before = checker.checks
        for door in ("traced", "scripted", "eager"):
            try:
                if door == "eager":
                    checker.eager(name, model, x)
                else:
                    checker.torchscript(name, model, x, door, cwd)
            except Exception as e:  # a door that could not even run is a failure of that door
                checker.fail(name, door, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}")
        nothing += checker.checks == before
        models += 1
        if args.only < 0:  # a model checked alone keeps its files, to look at
            shutil.rmtree(cwd, ignore_errors=True)
    failed = {(args.seed, f["index"], f["door"]) for f in checker.failures}
    expected = {key for key in KNOWN_FAULTS if key[0] == args.seed and key[1] in checked}
    summary = {"seed": args.seed, "models": models, "checks": checker.checks, "models_without_recompute": nothing,
               "failures": checker.failures, "new_failures": sorted(map(list, failed - expected)),
               "known_faults_that_pass": sorted(map(list, expected - failed)),
               "seconds": round(time.monotonic() - start, 1)}
    print(json.dumps(summary, indent=1))
    return 1 if failed != expected else 0


if __name__ == "__main__":
    sys.exit(main())
