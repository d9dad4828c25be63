"""The README's "Your own model in five steps", run as a user runs them: in a fresh directory,
with the acprof package freshly installed by pip and acprof on PATH, on the model the README's
step 1 writes.

    readme_five_steps_test.py --readme README.md --package python/ --acprof build/cli/acprof \
        --example examples/train_rewritten.py

Every code block of the section runs as written, in order: `sh` blocks line by line with bash,
consecutive `python` blocks as one script. One thing is not taken from the README: the budget of
`acprof plan`. A share of the peak reachable on one CPU can be below the floor on another
(convolution and matmul workspaces differ), so the test plans halfway between the floor and the
profiled peak, both read from what acprof wrote (profile.json's summary, and the floor from
`acprof plan --outcome`), and only reports whether the README's own budget would have fitted.

Specifies, besides every block succeeding:
- the training loop the README shows is in examples/train_rewritten.py verbatim (so the loop
  CTest runs there is the one users read);
- the rewritten model calls acprof::checkpoint, and trained with the README's loop after
  acprof.load it gives the original's losses at 3 steps, bit for bit.
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

SECTION = "## Your own model in five steps"
INFEASIBLE_EXIT = 3

# After the README's loop (prepended): the original and the rewritten model trained with it
# on the same batches, for 3 steps.
COMPARE = r"""
original = torch.jit.load("model.pt")  # after acprof.load: the same process-wide modes
rewritten = acprof.load("model.ckpt.pt")
assert "acprof::checkpoint" in str(rewritten.graph), "model.ckpt.pt calls no acprof::checkpoint"


def seeded_batch(step):
    generator = torch.Generator().manual_seed(step)
    return (torch.randn(*SHAPE, generator=generator),), None


def losses_of(model):
    optimizer, scheduler = make_optimizer(model)
    return [loss.item() for loss in train(model, optimizer, scheduler, seeded_batch,
                                          lambda output, target: output.mean(), range(3))]


import json
print(json.dumps({"original": losses_of(original), "rewritten": losses_of(rewritten)}))
"""


def fail(reason):
    raise SystemExit(f"readme_five_steps_test: {reason}")


def halfway_budget(acprof, cwd, env):
    """Halfway between the floor and the profiled peak, in bytes, from what acprof wrote."""
    peak = json.load(open(os.path.join(cwd, "profile.json")))["summary"]["peak_bytes"]
    probe = subprocess.run([acprof, "plan", "--budget", "1B", "-o", "floor_probe.json", "--outcome", "floor.json"],
                           cwd=cwd, env=env, capture_output=True, text=True)
    if probe.returncode == 0:  # everything is removable: the probe's plan is the floor
        floor = json.load(open(os.path.join(cwd, "floor_probe.json")))["predicted_peak_bytes"]
    elif probe.returncode == INFEASIBLE_EXIT:
        floor = json.load(open(os.path.join(cwd, "floor.json")))["floor"]["peak_bytes"]
    else:
        fail(f"the floor probe failed (exit {probe.returncode}): {probe.stderr.strip()}")
    if floor >= peak:
        fail(f"the README's model has nothing to recompute here (floor {floor} B, peak {peak} B)")
    return peak, floor, (peak + floor) // 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", required=True)
    parser.add_argument("--package", required=True, help="the acprof Python package's source (python/)")
    parser.add_argument("--acprof", required=True, help="the acprof command of the build")
    parser.add_argument("--example", required=True, help="examples/train_rewritten.py")
    args = parser.parse_args()
    acprof = os.path.realpath(args.acprof)

    blocks = section_blocks(open(args.readme).read(), SECTION)
    python_blocks = [text for language, text in blocks if language == "python"]
    if len(blocks) < 6 or len(python_blocks) < 3:
        fail(f"expected the five steps' blocks (export, profile, plan, rewrite, loop, use); found {len(blocks)}")
    loop = python_blocks[-2]
    if loop not in open(args.example).read():
        fail(f"the README's training loop is not {args.example} verbatim; copy one into the other")

    work = tempfile.mkdtemp(prefix="acprof-readme.")
    try:
        site = install_package(args.package, work)
        cwd = os.path.join(work, "user")
        os.mkdir(cwd)
        # What the README's set-up leaves: acprof on PATH, the package importable. Nothing else.
        env = {key: value for key, value in os.environ.items()
               if key not in ("PYTHONPATH", "ACPROF_OPS_LIBRARY")}
        env["PATH"] = os.pathsep.join([os.path.dirname(acprof), "/usr/bin", "/bin"])
        env["PYTHONPATH"] = site

        pending_python = []
        readme_budget = None

        def flush_python():
            # Written to a file, as the README says: torch.jit.script reads the class's source.
            if pending_python:
                script = os.path.join(work, f"step{len(os.listdir(work))}.py")
                with open(script, "w") as out:
                    out.write("\n".join(pending_python))
                run([sys.executable, script], cwd, env, f"the README's python block(s) {script}")
                pending_python.clear()

        for language, text in blocks:
            if language == "python":
                pending_python.append(text)
                continue
            flush_python()
            for line in text.splitlines():
                words = shlex.split(line, comments=True)
                if not words:
                    continue
                if words[:2] == ["acprof", "plan"] and "--budget" in words:
                    at = words.index("--budget") + 1
                    readme_budget = words[at]
                    peak, floor, budget = halfway_budget(acprof, cwd, env)
                    words[at] = str(budget)
                run(["bash", "-c", shlex.join(words)], cwd, env, f"`{line.strip()}`")
        flush_python()
        if readme_budget is None:
            fail("the five steps have no `acprof plan --budget` line")

        shape = re.search(r"--input float32\[([\d,]+)\]", "\n".join(t for _, t in blocks)).group(1)
        compare = os.path.join(work, "compare.py")
        with open(compare, "w") as out:
            out.write(f"SHAPE = ({shape},)\n" + loop + COMPARE)
        result = run([sys.executable, compare], cwd, env,
                     "training the original and the rewritten model with the README's loop")
        losses = json.loads(result.stdout.strip().splitlines()[-1])
        if losses["original"] != losses["rewritten"]:
            fail(f"losses differ: original {losses['original']}, rewritten {losses['rewritten']}")
        fits = "fits" if not readme_budget.endswith("%") or float(readme_budget[:-1]) / 100 * peak >= floor \
            else "is below the floor"
        print(f"readme_five_steps_test: {len(blocks)} blocks ran; planned at {budget} B (floor {floor}, peak {peak}; "
              f"the README's --budget {readme_budget} {fits} here); 3 losses equal the original's: {losses['original']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
