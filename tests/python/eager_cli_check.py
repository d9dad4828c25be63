"""`acprof profile --module` and `acprof rewrite` of an eager module, run as a user runs them: the
built binary, a model written by this test into a fresh directory, the Python package found by
PYTHONPATH and the interpreter by ACPROF_PYTHON.

    eager_cli_check.py --acprof build/cli/acprof --python .venv/bin/python --package python/ \
        --work DIR --case end_to_end|over_budget|import_failures

Cases (each exits 1 with the reason unless everything it names holds):
  end_to_end       profile with the factory as a file (net.py:make_model), plan halfway between the
                   floor and the profiled peak, then rewrite twice: bare from another directory (the
                   factory the profile recorded) and with --module net:make_model (a module path,
                   from the working directory). Each exits 0; its --outcome says bit for bit, with
                   every parameter's gradient compared, and measured peak == predicted peak to the
                   byte, within the budget; the peak line is printed.
  over_budget      the plan's budget edited to one byte below its prediction: the rewrite exits 5,
                   the outcome's kind is budget_exceeded, and its measured peak is the prediction.
  capture_differs  a module that sums three branches in another order while a dispatch mode watches
                   it (as code that asks for the current dispatch mode does): its rewrite exits 6, kind
                   model_fails, one line saying the recorded ops with nothing checkpointed do not
                   train like the module and naming the --tolerance that accepts it, and writes no
                   report; with that tolerance it exits 0, verified within it.
  optimizer        profile --optimizer adamw: profile.json counts AdamW's state (two moments of the
                   weights) and has an optimizer step; the rewrite verifies the stepped parameters bit
                   for bit and measures exactly the predicted peak, within the budget.
  refusals         a shape the module refuses, a forward returning a Python int, a forward calling a
                   custom autograd Function: each one line under 200 characters naming it (exit 1, 1,
                   6), no profile written.
  import_failures  a Python that does not exist, one without torch, one whose acprof has no eager,
                   a factory module that does not import and a function that is not there: each
                   exits 7 with one line `acprof: error: ...` naming the fix, and writes no profile.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

MODEL = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width=64, depth=6):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.BatchNorm1d(width), nn.GELU(), nn.Dropout(0.1))
            for _ in range(depth))
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def make_model():
    return Net()
'''
TRACED_PATH_MODEL = '''import torch
from torch import nn


class TracedPath(nn.Module):
    def __init__(self, width=64, depth=6):
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth)])
        self.a, self.b, self.c = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        x = self.blocks(x)
        a, b, c = self.a(x), self.b(x), self.c(x)
        watched = torch.utils._python_dispatch._get_current_dispatch_mode() is not None
        y = (a + b) + c if watched else a + (b + c)
        return self.head(y)


def make_model():
    return TracedPath()
'''
INPUT = "float32[128,64]"
# float32 parameters: per block a 64x64 linear with bias and a batch norm's weight and bias; the head.
PARAMETER_BYTES = 4 * (6 * (64 * 64 + 64 + 2 * 64) + 64 * 10 + 10)
PARAMETERS = 6 * 4 + 2  # per block: linear weight and bias, batch norm weight and bias; the head's two


def fail(reason):
    sys.exit(f"eager_cli_check: {reason}")


def run(acprof, args, cwd, env, expect):
    done = subprocess.run([acprof] + args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != expect:
        fail(f"acprof {' '.join(args)} exited {done.returncode}, expected {expect}:\n{done.stdout}\n{done.stderr}")
    return done


def outcome(path):
    with open(path) as handle:
        return json.load(handle)


def profile_and_plan(acprof, work, env, extra=()):
    run(acprof, ["profile", "--module", "net.py:make_model", "--input", INPUT, *extra], work, env, 0)
    profile = outcome(os.path.join(work, "profile.json"))
    peak = profile["summary"]["peak_bytes"]
    if profile["meta"]["measured_iters"] < 2:
        fail(f"the profile measured {profile['meta']['measured_iters']} iteration(s): op times are medians over "
             "at least two, as the LibTorch recorder's")
    run(acprof, ["plan", "--budget", "1B", "-o", "unused.json", "--outcome", "floor.json"], work, env, 3)
    floor = outcome(os.path.join(work, "floor.json"))["floor"]["peak_bytes"]
    if floor >= peak:
        fail(f"nothing to recompute (floor {floor} B, peak {peak} B)")
    budget = (floor + peak) // 2
    run(acprof, ["plan", "--budget", str(budget)], work, env, 0)
    plan = outcome(os.path.join(work, "plan.json"))
    if not plan["segments"]:
        fail(f"the plan at {budget} B checkpoints nothing")
    return plan


def end_to_end(acprof, work, env):
    plan = profile_and_plan(acprof, work, env)
    elsewhere = os.path.join(work, "elsewhere")
    os.mkdir(elsewhere)
    rewrites = [(["rewrite", os.path.join(work, "plan.json"), "--outcome", "bare.json"], elsewhere, "bare.json"),
                (["rewrite", "--module", "net:make_model", "--outcome", "module.json"], work, "module.json")]
    for args, cwd, name in rewrites:
        done = run(acprof, args, cwd, env, 0)
        result = outcome(os.path.join(cwd, name))["result"]
        verification, peak = result["verification"], result["peak"]
        print(f"acprof {' '.join(args)}: {verification}, {peak}")
        if verification is None or verification["mode"] != "bitwise" or \
                verification["gradients_compared"] != PARAMETERS or verification["buffers_compared"] != 6 * 3:
            fail(f"{name}: not verified bit for bit over {PARAMETERS} gradients and 18 buffers: {verification}")
        if peak["measured_bytes"] != peak["predicted_bytes"] or peak["predicted_bytes"] != plan["predicted_peak_bytes"]:
            fail(f"{name}: measured peak {peak['measured_bytes']} B, predicted {peak['predicted_bytes']} B "
                 f"(plan {plan['predicted_peak_bytes']} B)")
        if peak["measured_bytes"] > plan["budget_bytes"]:
            fail(f"{name}: measured peak {peak['measured_bytes']} B over the budget {plan['budget_bytes']} B")
        if "peak (allocated): before" not in done.stdout or "eager.apply_plan(" not in done.stdout:
            fail(f"{name}: the peak line or the line on how to train it is missing:\n{done.stdout}")
        check_time(name, result, done.stdout)
        check_report(name, result, plan)
    print(f"eager_cli_check: {len(plan['segments'])} segment(s), measured = predicted = "
          f"{plan['predicted_peak_bytes']} B within {plan['budget_bytes']} B, bit for bit, both ways of naming the factory")


def optimizer(acprof, work, env):
    plan = profile_and_plan(acprof, work, env, ["--optimizer", "adamw"])
    profile = outcome(os.path.join(work, "profile.json"))
    state = profile["summary"]["peak_breakdown"]["optimizer_state"]
    if profile["meta"]["optimizer"] != "adamw" or state < 2 * PARAMETER_BYTES:
        fail(f"profile.json says optimizer {profile['meta']['optimizer']}, {state} B of its state at the peak "
             f"(AdamW keeps two moments of the {PARAMETER_BYTES} B of parameters)")
    if not any(step["phase"] == "optimizer" for step in profile["steps"]):
        fail("profile.json has no optimizer step")
    run(acprof, ["rewrite", "--outcome", "adamw.json"], work, env, 0)
    result = outcome(os.path.join(work, "adamw.json"))["result"]
    verification, peak = result["verification"], result["peak"]
    if verification is None or verification["mode"] != "bitwise" or verification["parameters_compared"] != PARAMETERS:
        fail(f"the AdamW step is not verified bit for bit over {PARAMETERS} stepped parameters: {verification}")
    if not peak["measured_bytes"] == peak["predicted_bytes"] <= plan["budget_bytes"]:
        fail(f"with AdamW: measured peak {peak['measured_bytes']} B, predicted {peak['predicted_bytes']} B, "
             f"budget {plan['budget_bytes']} B")
    print(f"eager_cli_check: AdamW in the step, {len(plan['segments'])} segment(s), measured = predicted = "
          f"{peak['measured_bytes']} B within {plan['budget_bytes']} B, parameters bit for bit")


def check_time(name, result, stdout):
    """The eager rewrite times alternated pairs by the TorchScript rewrite's rule: at least the two
    it asks for, the original's median step, a verdict, and the binary's time line."""
    time = result["time"]
    if time is None or time["pairs"] < 2 or time["before_us"] <= 0 or \
            time["verdict"] not in ("conclusive", "inconclusive") or \
            time["stopped_by"] not in ("precise", "time_limit", "step_budget", "pair_limit"):
        fail(f"{name}: the rewrite's time is not two or more timed pairs with a verdict: {time}")
    if "time: step before" not in stdout:
        fail(f"{name}: no time line:\n{stdout}")


def check_report(name, result, plan):
    """The report's after side is the checkpointed module's measured step: its profile peaks at the
    measured peak, forward runs each segment as one checkpoint, and report.html is written beside
    it, with the plan's profile as the before side."""
    files = result["files"]
    for key in ("report", "profile_before", "profile_after"):
        if not os.path.isfile(files.get(key, "")):
            fail(f"{name}: no {key} file written: {files}")
    after, before = outcome(files["profile_after"]), outcome(files["profile_before"])
    if after["summary"]["peak_bytes"] != result["peak"]["measured_bytes"]:
        fail(f"{name}: profile.after.json peaks at {after['summary']['peak_bytes']} B, the rewrite measured "
             f"{result['peak']['measured_bytes']} B")
    if before["summary"]["peak_bytes"] != result["peak"]["before_bytes"]:
        fail(f"{name}: profile.before.json peaks at {before['summary']['peak_bytes']} B, not the profile's "
             f"{result['peak']['before_bytes']} B")
    checkpoints = [s for s in after["steps"] if s["phase"] == "forward" and s["op"] == "acprof::checkpoint"]
    if len(checkpoints) != len(plan["segments"]):
        fail(f"{name}: profile.after.json's forward runs {len(checkpoints)} checkpoint(s) for "
             f"{len(plan['segments'])} segment(s)")
    with open(files["report"]) as handle:
        if '"kind":"comparison"' not in handle.read():
            fail(f"{name}: report.html is not a before/after comparison")


def over_budget(acprof, work, env):
    plan = profile_and_plan(acprof, work, env)
    plan["budget_bytes"] = plan["predicted_peak_bytes"] - 1
    with open(os.path.join(work, "plan_low.json"), "w") as out:
        json.dump(plan, out)
    run(acprof, ["rewrite", "plan_low.json", "--outcome", "low.json"], work, env, 5)
    reported = outcome(os.path.join(work, "low.json"))
    if reported["error"]["kind"] != "budget_exceeded" or \
            reported["result"]["peak"]["measured_bytes"] != plan["predicted_peak_bytes"]:
        fail(f"expected budget_exceeded at the predicted peak {plan['predicted_peak_bytes']} B: {reported}")
    check_report("plan_low.json", reported["result"], plan)  # written over the budget too: it shows where
    print(f"eager_cli_check: measured {plan['predicted_peak_bytes']} B over a budget of {plan['budget_bytes']} B: exit 5")


def capture_differs(acprof, work, env):
    with open(os.path.join(work, "traced_path.py"), "w") as out:
        out.write(TRACED_PATH_MODEL)
    run(acprof, ["profile", "--module", "traced_path.py:make_model", "--input", INPUT], work, env, 0)
    run(acprof, ["plan", "--budget", "80%"], work, env, 0)
    if not outcome(os.path.join(work, "plan.json"))["segments"]:
        fail("the plan at 80 % checkpoints nothing")
    done = run(acprof, ["rewrite", "--outcome", "refused.json"], work, env, 6)
    lines = done.stderr.strip().splitlines()
    refused = outcome(os.path.join(work, "refused.json"))
    error, accepting = refused["error"], refused.get("accepting_tolerance")
    if len(lines) != 1 or error["kind"] != "model_fails" or \
            "recorded ops do not train like the module itself" not in lines[0]:
        fail(f"expected one line blaming the capture, kind model_fails: {done.stderr!r}, {error}")
    if not isinstance(accepting, float) or not accepting > 0:
        fail(f"expected the outcome to carry the tolerance that accepts the capture's difference: {refused}")
    tolerance = f"{accepting:.3g}"
    if f"--tolerance {tolerance} " not in lines[0]:
        fail(f"the line does not name the outcome's tolerance {tolerance}: {lines[0]}")
    if os.path.exists(os.path.join(work, "report.html")):
        fail("a report was written for a module that failed verification")
    run(acprof, ["rewrite", "--tolerance", tolerance, "--outcome", "accepted.json"], work, env, 0)
    verification = outcome(os.path.join(work, "accepted.json"))["result"]["verification"]
    if verification["mode"] != "tolerance" or not 0 < verification["max_abs_diff"] <= float(tolerance):
        fail(f"--tolerance {tolerance}: expected verified within it, above 0: {verification}")
    print(f"eager_cli_check: the capture differs by {tolerance}; refused (exit 6), then accepted with --tolerance")


def refusals(acprof, work, env):
    """Mistakes the eager front end printed 19-22 lines for (torch's logged traceback, then acprof's
    line): each is now one line under 200 characters naming it, the TorchScript door's exit code
    for the same mistake (a shape the model refuses is bad input, 1), and no profile."""
    refused = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refused_models.py")
    cases = [("a shape that does not fit", "net.py:make_model", "float32[4,9]", 1, "refuses inputs float32[4, 9]"),
             ("an output that is a Python int", f"{refused}:returns_int", INPUT, 1, "no floating-point tensor"),
             ("a custom autograd Function", f"{refused}:calls_a_custom_function", INPUT, 6,
              "calls a custom torch.autograd.Function")]
    for what, factory, spec, code, names in cases:
        done = run(acprof, ["profile", "--module", factory, "--input", spec, "-o", "refused.json"], work, env, code)
        lines = done.stderr.strip().splitlines()
        if len(lines) != 1 or len(lines[0]) >= 200 or names not in lines[0] or not lines[0].startswith("acprof: "):
            fail(f"{what}: expected one line under 200 characters naming '{names}', got:\n{done.stderr}")
        if os.path.exists(os.path.join(work, "refused.json")):
            fail(f"{what}: a profile was written")
        print(f"eager_cli_check: {what}: exit {code}, {lines[0]}")


def import_failures(acprof, work, env, python):
    # An acprof package without the eager front end (an older install), first on the path, so that
    # the case holds whether or not acprof is installed in the interpreter's environment.
    os.makedirs(os.path.join(work, "old", "acprof"))
    open(os.path.join(work, "old", "acprof", "__init__.py"), "w").close()
    without_package = dict(env, PYTHONPATH=os.path.join(work, "old"))
    with open(os.path.join(work, "broken.py"), "w") as out:
        out.write("import no_such_module_anywhere\n")
    cases = [("a Python that does not exist", dict(env, ACPROF_PYTHON=os.path.join(work, "no-python")),
              "net.py:make_model", "ACPROF_PYTHON"),
             ("a Python without torch", dict(env, ACPROF_PYTHON=os.path.join(work, "bin", "python3")),
              "net.py:make_model", "cannot import torch"),
             ("a Python without acprof.eager", without_package, "net.py:make_model", "pip install"),
             ("a factory module that does not import", env, "broken:make_model", "cannot import broken"),
             ("a factory that is not there", env, "net.py:make_nothing", "no callable make_nothing")]
    # A python3 that has no torch: the interpreter itself, isolated from every site directory.
    os.makedirs(os.path.join(work, "bin"))
    with open(os.path.join(work, "bin", "python3"), "w") as out:
        out.write(f"#!/bin/sh\nexec {python} -I -S \"$@\"\n")
    os.chmod(os.path.join(work, "bin", "python3"), 0o755)
    for what, case_env, factory, names in cases:
        done = run(acprof, ["profile", "--module", factory, "--input", INPUT, "-o", "failed.json",
                            "--outcome", "import.json"], work, case_env, 7)
        lines = done.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("acprof: error: ") or names not in lines[0]:
            fail(f"{what}: expected one error line naming '{names}', got:\n{done.stderr}")
        if outcome(os.path.join(work, "import.json"))["error"]["kind"] != "python_import":
            fail(f"{what}: the outcome's kind is not python_import")
        if os.path.exists(os.path.join(work, "failed.json")):
            fail(f"{what}: a profile was written")
        print(f"exit 7, {what}: {lines[0]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acprof", required=True)
    parser.add_argument("--python", required=True, help="the Python with torch the eager front end runs on")
    parser.add_argument("--package", required=True, help="the acprof Python package's source (python/)")
    parser.add_argument("--work", required=True)
    parser.add_argument("--case", choices=["end_to_end", "optimizer", "over_budget", "capture_differs", "refusals",
                                                   "import_failures"],
                        required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    with open(os.path.join(args.work, "net.py"), "w") as out:
        out.write(MODEL)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ACPROF_PYTHON")}
    env.update(PYTHONPATH=os.path.abspath(args.package), ACPROF_PYTHON=args.python)
    acprof = os.path.abspath(args.acprof)
    if args.case == "end_to_end":
        end_to_end(acprof, args.work, env)
    elif args.case == "optimizer":
        optimizer(acprof, args.work, env)
    elif args.case == "over_budget":
        over_budget(acprof, args.work, env)
    elif args.case == "capture_differs":
        capture_differs(acprof, args.work, env)
    elif args.case == "refusals":
        refusals(acprof, args.work, env)
    else:
        import_failures(acprof, args.work, env, args.python)


if __name__ == "__main__":
    main()
