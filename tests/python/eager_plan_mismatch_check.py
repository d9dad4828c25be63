"""A plan made for one eager module, applied to another, is refused with acprof.eager.PlanMismatch
naming what to do, before anything runs; applied to its own module, it is accepted.

    eager_plan_mismatch_check.py --acprof build/cli/acprof --work DIR
"""

import argparse
import os
import subprocess
import sys

import torch

from acprof import eager


def mlp(layers):
    parts = []
    for _ in range(layers):
        parts += [torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1)]
    return torch.nn.Sequential(*parts, torch.nn.Linear(32, 4))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--acprof", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    inputs, target = [torch.randn(8, 32)], torch.randint(0, 4, (8,))
    profiled, other = mlp(3), mlp(2)
    profile = os.path.join(args.work, "profile.json")
    plan = os.path.join(args.work, "plan.json")
    eager.record_profile(profiled, inputs, loss="cross_entropy", target=target, path=profile)
    done = subprocess.run([args.acprof, "plan", profile, "--budget", "100%", "-o", plan], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"acprof plan exited {done.returncode}: {done.stderr}")
    eager.apply_plan(profiled, plan, example_inputs=inputs)  # its own module: accepted
    try:
        eager.apply_plan(other, plan, example_inputs=inputs)
    except eager.PlanMismatch as error:
        message = str(error)
        if "profile this module and plan again" not in message:
            sys.exit(f"FAIL  the refusal does not say what to do: {message}")
        print(f"ok    refused: {message}")
        return 0
    sys.exit("FAIL  a plan for a 3-layer MLP was applied to a 2-layer one")


if __name__ == "__main__":
    sys.exit(main())
