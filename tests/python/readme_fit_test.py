"""The README's "In your training script: acprof.fit", run as a user runs it: its one Python block
saved as train.py in a fresh directory and run there by the Python that has torch, with the acprof
package freshly installed by pip (not the source tree).

    readme_fit_test.py --readme README.md --package python/
    readme_fit_test.py --readme README.md --python VENV/bin/python    (acprof installed there)

Specifies, besides the block running: fit checkpointed at least one segment, verified bit for bit,
and the checkpointed module's measured peak equals the predicted peak to the byte and is within
the budget the block asked for, with AdamW in the profiled step; plan.json and its profile were
written and apply to a new copy of the model. Exits 1 with the reason.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readme_steps import install_package, run, section_blocks  # noqa: E402

SECTION = "## In your training script: acprof.fit"

# Run after the README's block, in its namespace.
CHECK = r"""
import json
import copy
again = copy.deepcopy(model)
applied = acprof.apply(again, "plan.json", x)
print("ACPROF-CHECK " + json.dumps({
    "segments": fitted.segments, "budget": int(budget), "budget_bytes": fitted.budget_bytes,
    "predicted": fitted.predicted_peak_bytes, "measured": fitted.measured_peak_bytes,
    "verification": fitted.verification["mode"], "trained": fitted.profile["meta"]["optimizer"],
    "applied_segments": len(acprof.installed_plan(applied).segments), "applied_in_place": applied is again,
    "fitted_in_place": fitted.module is model, "plan_written": os.path.isfile("plan.profile.json")}))
"""


def fail(reason):
    raise SystemExit(f"readme_fit_test: {reason}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", required=True)
    parser.add_argument("--package", help="the acprof Python package's source (python/), pip installed afresh")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python to run the block with; without --package, acprof must be installed in it")
    args = parser.parse_args()
    blocks = [text for language, text in section_blocks(open(args.readme).read(), SECTION) if language == "python"]
    if len(blocks) != 1:
        fail(f"expected one python block in the README's '{SECTION}', found {len(blocks)}")
    work = tempfile.mkdtemp(prefix="acprof-readme-fit.")
    try:
        cwd = os.path.join(work, "user")
        os.mkdir(cwd)
        with open(os.path.join(cwd, "train.py"), "w") as out:
            out.write(blocks[0] + "\nimport os\n" + CHECK)
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "ACPROF_OPS_LIBRARY")}
        if args.package:
            env["PYTHONPATH"] = install_package(args.package, work)
        done = run([args.python, "train.py"], cwd, env, "the README's acprof.fit block")
        print(done.stdout.strip())
        lines = [line for line in done.stdout.splitlines() if line.startswith("ACPROF-CHECK ")]
        if not lines:
            fail("the block ran but the check printed nothing")
        seen = json.loads(lines[-1][len("ACPROF-CHECK "):])
        if seen["segments"] < 1 or seen["verification"] != "bitwise" or seen["trained"] != "adamw":
            fail(f"fit checkpointed {seen['segments']} segment(s), verification {seen['verification']}, "
                 f"optimizer {seen['trained']}")
        if not (seen["measured"] == seen["predicted"] <= seen["budget_bytes"] == seen["budget"]):
            fail(f"measured {seen['measured']} B, predicted {seen['predicted']} B, budget {seen['budget_bytes']} B "
                 f"(asked {seen['budget']} B)")
        if not (seen["fitted_in_place"] and seen["applied_in_place"]):
            fail("fit or apply returned another object than the model")
        if seen["applied_segments"] != seen["segments"] or not seen["plan_written"]:
            fail(f"plan.json applied {seen['applied_segments']} segment(s) of {seen['segments']}")
        print("readme_fit_test: ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
