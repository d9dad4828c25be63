"""The manual's "An eager module in five steps, no TorchScript" (docs/manual.md; the README's
until acprof.fit took its place), run as a user runs them: in a fresh
directory, with the acprof package freshly installed by pip, acprof on PATH and the Python that has
torch as the `python3` on PATH (an activated environment).

    readme_eager_five_steps_test.py --readme docs/manual.md --package python/ --acprof build/cli/acprof

Every code block of the section runs as written, in order: a `python` block whose first line is
`# name.py` is saved as that file, and `sh` blocks run line by line with bash. Two things are not
taken from the README: the budget of `acprof plan`, which is halfway between the floor and the
profiled peak (both read from what acprof wrote; a share of the peak can be below the floor on
another CPU), and `--outcome` added to `acprof rewrite`, whose result the test reads.

Specifies, besides every block succeeding:
- the rewrite checkpoints at least one segment, verifies bit for bit, and measures exactly the
  predicted peak, within the budget;
- the README's `train` run on a fresh module and, from the same seed, on that module with
  plan.json applied gives the same losses and parameters after 3 steps, bit for bit.
Exits 1 with the reason.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from readme_steps import install_package, run, section_blocks

SECTION = "## An eager module in five steps, no TorchScript"

# Run after the README's train.py, in its namespace: the original and the checkpointed module,
# built from the same seed, trained with the README's loop from the same seed.
COMPARE = r"""
torch.manual_seed(7)
original = make_model()
torch.manual_seed(7)
cut = eager.apply_plan(make_model(), "plan.json", example_inputs=[x])
assert cut.segments, "plan.json applied no segment"
torch.manual_seed(1)
losses_original = [loss.item() for loss in train(original, 3)]
torch.manual_seed(1)
losses_cut = [loss.item() for loss in train(cut, 3)]
parameters_equal = all(torch.equal(p, dict(cut.named_parameters())["module." + n])
                       for n, p in original.named_parameters())
import json
print(json.dumps({"original": losses_original, "checkpointed": losses_cut, "segments": len(cut.segments),
                  "parameters_equal": parameters_equal}))
"""


def fail(reason):
    raise SystemExit(f"readme_eager_five_steps_test: {reason}")


def halfway_budget(cwd, env):
    peak = json.load(open(os.path.join(cwd, "profile.json")))["summary"]["peak_bytes"]
    run(["acprof", "plan", "--budget", "1B", "-o", "floor_probe.json", "--outcome", "floor.json"], cwd, env,
        "the floor probe", allowed=(3,))
    floor = json.load(open(os.path.join(cwd, "floor.json")))["floor"]["peak_bytes"]
    if floor >= peak:
        fail(f"the README's model has nothing to recompute here (floor {floor} B, peak {peak} B)")
    return (peak + floor) // 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", required=True)
    parser.add_argument("--package", required=True, help="the acprof Python package's source (python/)")
    parser.add_argument("--acprof", required=True, help="the acprof command of the build")
    args = parser.parse_args()
    acprof = os.path.realpath(args.acprof)
    blocks = section_blocks(open(args.readme).read(), SECTION)
    files = [text.splitlines()[0][2:] for language, text in blocks
             if language == "python" and re.match(r"# \w+\.py\n", text)]
    if len(blocks) < 4 or files[:1] != ["net.py"] or "train.py" not in files:
        fail(f"expected the five steps' blocks (net.py, profile/plan/rewrite, train.py, its run); found "
             f"{len(blocks)} blocks, files {files}")

    work = tempfile.mkdtemp(prefix="acprof-readme-eager.")
    try:
        site = install_package(args.package, work)
        cwd = os.path.join(work, "user")
        os.mkdir(cwd)
        # An activated environment: its bin/ (python3 with torch) on PATH, the package importable.
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "ACPROF_PYTHON", "ACPROF_OPS_LIBRARY")}
        env["PATH"] = os.pathsep.join([os.path.dirname(acprof), os.path.dirname(sys.executable), "/usr/bin", "/bin"])
        env["PYTHONPATH"] = site

        budget, outcome = None, None
        for language, text in blocks:
            if language == "python":
                name = text.splitlines()[0][2:]
                with open(os.path.join(cwd, name), "w") as out:
                    out.write(text)
                continue
            for line in text.splitlines():
                words = shlex.split(line, comments=True)
                if not words:
                    continue
                if words[:2] == ["acprof", "plan"] and "--budget" in words:
                    budget = halfway_budget(cwd, env)
                    words[words.index("--budget") + 1] = str(budget)
                if words[:2] == ["acprof", "rewrite"]:
                    outcome = os.path.join(cwd, "rewrite-outcome.json")
                    words += ["--outcome", outcome]
                run(["bash", "-c", shlex.join(words)], cwd, env, f"`{line.strip()}`")
        if budget is None or outcome is None:
            fail("the five steps have no `acprof plan --budget` or no `acprof rewrite` line")

        result = json.load(open(outcome))["result"]
        peak, verification = result["peak"], result["verification"]
        if result["segments"] < 1 or verification is None or verification["mode"] != "bitwise":
            fail(f"the rewrite checkpointed {result['segments']} segment(s), verification {verification}")
        if peak["measured_bytes"] != peak["predicted_bytes"] or peak["measured_bytes"] > peak["budget_bytes"]:
            fail(f"measured peak {peak['measured_bytes']} B, predicted {peak['predicted_bytes']} B, "
                 f"budget {peak['budget_bytes']} B")

        train = open(os.path.join(cwd, "train.py")).read()
        with open(os.path.join(cwd, "compare.py"), "w") as out:
            out.write(train + COMPARE)
        done = run(["python3", "compare.py"], cwd, env, "training the original and the checkpointed module")
        compared = json.loads(done.stdout.strip().splitlines()[-1])
        if compared["original"] != compared["checkpointed"] or not compared["parameters_equal"]:
            fail(f"the README's loop differs: {compared}")
        print(f"readme_eager_five_steps_test: {len(blocks)} blocks ran; planned at {budget} B, {result['segments']} "
              f"segment(s), measured = predicted = {peak['measured_bytes']} B, bit for bit; 3 losses and the "
              f"parameters equal the original's: {compared['original']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
