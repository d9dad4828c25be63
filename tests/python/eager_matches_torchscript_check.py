"""The two front ends record the same step alike: the eager profile of models/cnn.py's module
(acprof.eager.record_profile) and `acprof profile` of the same module traced to TorchScript have
the same peak, byte for byte, made of the same bytes per category. Printed beside them: each
profile's floor (`acprof plan --outcome`), for the record.

    eager_matches_torchscript_check.py --acprof build/cli/acprof --model build/test-models/cnn_traced.pt
        --models-dir models --work DIR
"""

import argparse
import json
import os
import subprocess
import sys

import torch

from acprof import eager


def floor_bytes(acprof, profile, work):
    outcome = os.path.join(work, "floor.json")
    subprocess.run([acprof, "plan", profile, "--budget", "1B", "--outcome", outcome, "-o",
                    os.path.join(work, "unused.json")], capture_output=True, text=True)
    with open(outcome) as handle:
        return json.load(handle)["floor"]["peak_bytes"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--acprof", required=True)
    parser.add_argument("--model", required=True, help="models/cnn.py's module traced (cnn_traced.pt)")
    parser.add_argument("--models-dir", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    sys.path.insert(0, args.models_dir)
    import cnn

    scripted = os.path.join(args.work, "torchscript.json")
    done = subprocess.run([args.acprof, "profile", args.model, "-o", scripted], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"acprof profile exited {done.returncode}: {done.stderr}")
    with open(scripted) as handle:
        torchscript = json.load(handle)
    meta = torchscript["meta"]
    if meta["input_specs"] != ["float32[32,3,32,32]"] or not meta["target_spec"].startswith("int64[32]"):
        sys.exit(f"FAIL  the traced model's step is not the one built here: {meta['input_specs']}, {meta['target_spec']}")
    torch.manual_seed(0)
    eager_path = os.path.join(args.work, "eager.json")
    profile = eager.record_profile(cnn.build(), [torch.randn(32, 3, 32, 32)], loss="cross_entropy",
                                   target=torch.randint(0, cnn.CLASSES, (32,)), path=eager_path)
    ours, theirs = profile["summary"], torchscript["summary"]
    print(f"      floors: eager {floor_bytes(args.acprof, eager_path, args.work)} B, "
          f"TorchScript {floor_bytes(args.acprof, scripted, args.work)} B")
    same = ours["peak_bytes"] == theirs["peak_bytes"] and ours["peak_breakdown"] == theirs["peak_breakdown"]
    print(("ok    " if same else "FAIL  ") + f"peak: eager {ours['peak_bytes']} B {ours['peak_breakdown']}, "
          f"TorchScript {theirs['peak_bytes']} B {theirs['peak_breakdown']}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
