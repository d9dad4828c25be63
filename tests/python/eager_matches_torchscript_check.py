"""The two front ends record the same step alike: the eager profile of a catalogue model's module
(acprof.eager.record_profile) and `acprof profile` of the same module traced to TorchScript have
the same peak, byte for byte, made of the same bytes per category, and name the same gradients
(the storages autograd said were some value's gradient: as many, with the same bytes per
category). The eager recorder's gradient hooks change nothing else the profile says: the same step
recorded without them has the same storages, lives, readers and saves, and the same backward steps
per forward node. Printed beside them: each profile's floor (`acprof plan
--outcome`), for the record.

    eager_matches_torchscript_check.py --acprof build/cli/acprof --model build/test-models/cnn_traced.pt
        --name cnn --repo . --work DIR

NAME is the model's name in models/reference_models.py's catalogue, whose training specs the
traced file stores: models/cnn.py, and tied_list_inplace (in-place writes into activations, a list
of block outputs, an embedding tied to the head).
"""

import argparse
import json
import os
import subprocess
import sys

import torch

from acprof import eager
from acprof.eager import recorder


def floor_bytes(acprof, profile, work):
    outcome = os.path.join(work, "floor.json")
    subprocess.run([acprof, "plan", profile, "--budget", "1B", "--outcome", outcome, "-o",
                    os.path.join(work, "unused.json")], capture_output=True, text=True)
    with open(outcome) as handle:
        return json.load(handle)["floor"]["peak_bytes"]


def named_gradients(profile):
    """(count, bytes per category) of the storages the profile names as some value's gradient."""
    per_category, count = {}, 0
    for t in profile["tensors"]:
        if t.get("gradient_of"):
            count += 1
            per_category[t["category"]] = per_category.get(t["category"], 0) + t["bytes"]
    return count, per_category


def recorded_facts(profile):
    """What a profile says, but whose gradient each storage is and how long steps took: each
    storage's life, readers and saves, and which backward steps belong to which forward node."""
    tensors = [{k: v for k, v in t.items() if k != "gradient_of"} for t in profile["tensors"]]
    return tensors, [s["node"] for s in profile["steps"]], [n["backward_steps"] for n in profile["nodes"]]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--acprof", required=True)
    parser.add_argument("--model", required=True, help="the catalogue model traced (cnn_traced.pt)")
    parser.add_argument("--name", required=True, help="its name in models/reference_models.py's catalogue")
    parser.add_argument("--repo", required=True, help="the repository root, whose models/ package holds it")
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    sys.path.insert(0, args.repo)
    from models import reference_models, specs
    catalogued = reference_models.CATALOGUE[args.name]
    training = catalogued.training

    scripted = os.path.join(args.work, "torchscript.json")
    done = subprocess.run([args.acprof, "profile", args.model, "-o", scripted], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"acprof profile exited {done.returncode}: {done.stderr}")
    with open(scripted) as handle:
        torchscript = json.load(handle)
    meta = torchscript["meta"]
    if meta["input_specs"] != training.inputs or meta["target_spec"] != training.target:
        sys.exit(f"FAIL  the traced model's step is not the one built here: {meta['input_specs']}, {meta['target_spec']}")

    def record(path=None):
        # The inputs and the target as the recorder draws them: one seed, inputs first.
        drawn = specs.make_tensors(training.inputs + ([training.target] if training.target else []))
        inputs, target = (drawn[:-1], drawn[-1]) if training.target else (drawn, None)
        torch.manual_seed(0)
        return eager.record_profile(catalogued.build(), inputs, loss=training.loss, target=target, path=path)

    eager_path = os.path.join(args.work, "eager.json")
    profile = record(eager_path)
    ours, theirs = profile["summary"], torchscript["summary"]
    print(f"      floors: eager {floor_bytes(args.acprof, eager_path, args.work)} B, "
          f"TorchScript {floor_bytes(args.acprof, scripted, args.work)} B")
    same = ours["peak_bytes"] == theirs["peak_bytes"] and ours["peak_breakdown"] == theirs["peak_breakdown"]
    print(("ok    " if same else "FAIL  ") + f"peak: eager {ours['peak_bytes']} B {ours['peak_breakdown']}, "
          f"TorchScript {theirs['peak_bytes']} B {theirs['peak_breakdown']}")
    named_eager, named_torchscript = named_gradients(profile), named_gradients(torchscript)
    same_named = named_eager == named_torchscript and named_eager[0] > 0
    print(("ok    " if same_named else "FAIL  ") + f"named gradients: eager {named_eager}, "
          f"TorchScript {named_torchscript}")
    hooks = recorder.gradient_hooks.report_gradients_of_backward
    recorder.gradient_hooks.report_gradients_of_backward = lambda loss: None
    try:
        unhooked = record()
    finally:
        recorder.gradient_hooks.report_gradients_of_backward = hooks
    same_lives = recorded_facts(unhooked) == recorded_facts(profile) and not named_gradients(unhooked)[0]
    print(("ok    " if same_lives else "FAIL  ") + f"the gradient hooks change nothing else the profile says "
          f"({len(profile['tensors'])} storages and {len(profile['steps'])} steps alike without them)")
    return 0 if same and same_named and same_lives else 1


if __name__ == "__main__":
    sys.exit(main())
