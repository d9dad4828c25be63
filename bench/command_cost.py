#!/usr/bin/env python3
"""What `acprof profile` and `acprof rewrite` cost, in training steps of the model they run on.

    bench/command_cost.py --acprof build/cli/acprof [--models gpt_cost resnet18_cost vit_cost] [--rounds 2]

For each reference model (exported here from models/), in one run on one machine: the wall time of
`acprof profile model.pt` and of `acprof rewrite model.pt plan.json` at a budget halfway between the
profile's floor and its peak, both as typed (defaults, process start included), divided by the
original's median training step, which the rewrite itself measures beside the rewritten one
(`--outcome`: result.time.before_us; forward, loss, backward and the optimizer step). The start of
a process that loads LibTorch is printed on its own line: it is a fixed cost no model amortizes.
Each command runs --rounds times; the table shows the fastest (the machine's noise only adds).
Target (issue 36): profile <= 5 steps, rewrite <= 10 steps.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(command, **kwargs):
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)
    return time.perf_counter() - start


def floor_bytes(acprof, profile, work):
    outcome = os.path.join(work, "floor.json")
    # Budget 1 B is infeasible on every model; the outcome carries the floor as data.
    subprocess.run([acprof, "plan", profile, "--budget", "1B", "-o", os.path.join(work, "none.json"),
                    "--outcome", outcome], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.load(open(outcome))["floor"]["peak_bytes"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acprof", default=os.path.join(REPO, "build", "cli", "acprof"))
    # Steps of about a second on a 2-core CPU (reference_models.py says why).
    parser.add_argument("--models", nargs="+", default=["gpt_cost", "resnet18_cost", "vit_cost"])
    parser.add_argument("--mode", default="traced", choices=["traced", "scripted"])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    acprof = os.path.abspath(args.acprof)

    start_s = min(timed([os.path.join(os.path.dirname(acprof), "acprof-torch"), "--version"]) for _ in range(3))
    print(f"process start (acprof-torch --version, which loads LibTorch): {start_s:.3f} s")
    # profile_iters, rewrite_pairs and extra_% belong to the fastest run: the least the rules take
    # is two of each, more where the machine's steps disagree and one more still fits the command's
    # budget of steps (common/include/acprof/command_budget.h).
    print(f"{'model':<16} {'step_ms':>8} {'profile_s':>10} {'profile_steps':>14} {'profile_iters':>14} "
          f"{'rewrite_s':>10} {'rewrite_steps':>14} {'rewrite_pairs':>14} {'extra_%':>8}")
    with tempfile.TemporaryDirectory(prefix="acprof-cost-") as work:
        for name in args.models:
            model = os.path.join(work, f"{name}.pt")
            subprocess.run([sys.executable, os.path.join(REPO, "models", "export.py"), name, "--out", model,
                            "--mode", args.mode], check=True, stdout=subprocess.DEVNULL)
            profile = os.path.join(work, f"{name}.json")
            # The fastest profile, and how many measured iterations it took (two where they agree).
            profile_s, iterations = float("inf"), None
            for _ in range(args.rounds):
                seconds = timed([acprof, "profile", model, "-o", profile])
                if seconds < profile_s:
                    profile_s, iterations = seconds, json.load(open(profile))["meta"]["measured_iters"]
            peak = json.load(open(profile))["summary"]["peak_bytes"]
            budget = (floor_bytes(acprof, profile, work) + peak) // 2
            plan = os.path.join(work, f"{name}.plan.json")
            subprocess.run([acprof, "plan", profile, "--budget", str(budget), "-o", plan], check=True,
                           stdout=subprocess.DEVNULL)
            rewrite_s, step_s, pairs, extra = float("inf"), None, None, None
            for _ in range(args.rounds):
                outcome = os.path.join(work, "rewrite.json")
                seconds = timed([acprof, "rewrite", model, plan, "-o", os.path.join(work, f"{name}.ckpt.pt"),
                                 "--outcome", outcome])
                result = json.load(open(outcome))["result"]
                if seconds < rewrite_s:
                    # The rewritten step's measured extra time: each of the rewrite's steps of the
                    # rewritten model costs that much more than one of the original's.
                    rewrite_s, pairs, extra = seconds, result["time"]["pairs"], result["time"]["extra_share"]
                # The original's median step over this rewrite's pairs; the fastest of the rounds,
                # so that the ratios are the highest these runs give.
                step = result["time"]["before_us"] / 1e6
                step_s = step if step_s is None else min(step_s, step)
            print(f"{name:<16} {step_s * 1e3:8.1f} {profile_s:10.2f} {profile_s / step_s:14.1f} {iterations:14d} "
                  f"{rewrite_s:10.2f} {rewrite_s / step_s:14.1f} {pairs:14d} {100 * extra:+8.1f}")


if __name__ == "__main__":
    main()
