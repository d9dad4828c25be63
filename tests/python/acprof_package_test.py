"""The acprof Python package (python/) as a user gets it: installed with pip into a directory of
its own, imported from there, and asked to load a model written by `acprof rewrite`.

    acprof_package_test.py --package python/ --ops build/rewriter/libacprof_ops.so \
        --acprof build/cli/acprof --original model.pt --rewritten model.ckpt.pt

Specifies:
- the package installs with `pip install --target` (no network: --no-build-isolation --no-deps);
- acprof.load finds the op library from ACPROF_OPS_LIBRARY, and else beside the `acprof` command
  on PATH (a build tree's cli/acprof -> rewriter/libacprof_ops.so);
- without either, loading fails with one error that names ACPROF_OPS_LIBRARY, the fix, and
  nothing of TorchScript's `Unknown type name '__torch__.torch.classes.acprof.Segment'`;
- the model loaded with acprof.load trains 3 AdamW steps with the losses of the original, bit
  for bit, and the process trains with the executor mode acprof profiled in (off);
- an archive's record of the executor mode (acprof_executor_optimize) is obeyed, and without one
  acprof's default (off) or the caller's executor_optimize holds.

Each check runs in a fresh interpreter, since loading a library and the executor mode are
process-wide. Runs under pytest (the test_* functions read the paths from the environment that
main() sets) or as a script, as CTest runs it (tests/examples.cmake). Exits 1 with the reason.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

# Trains the original and the acprof.load-ed rewritten model 3 steps each; prints a JSON line.
TRAIN = r"""
import json, sys
import torch
import acprof
sys.path.insert(0, sys.argv[3])
from models.training_step import compute_loss, load_with_specs, make_step_tensors

rewritten = acprof.load(sys.argv[2])
original, stored = load_with_specs(sys.argv[1])

def train(model):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    losses = []
    for step in range(3):
        inputs, target = make_step_tensors(stored, seed=step)
        optimizer.zero_grad(set_to_none=True)
        torch.manual_seed(step)
        loss = compute_loss(model(*inputs), stored.loss, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses

print(json.dumps({"package": acprof.__file__, "library": acprof.ops_library_path(),
                  "executor_optimize": torch._C._get_graph_executor_optimize(),
                  "checkpoints": str(rewritten.graph).count("acprof::checkpoint"),
                  "original": train(original), "rewritten": train(rewritten)}))
"""

LOAD = r"""
import sys
import acprof
try:
    acprof.load(sys.argv[1])
except acprof.OpsLibraryNotFound as error:
    print(error)
    sys.exit(3)
print("loaded", acprof.ops_library_path())
"""


# An archive that records the executor mode (extra file acprof_executor_optimize) is obeyed; one
# that does not gets acprof's default, off, or the caller's executor_optimize.
EXECUTOR = r"""
import json, sys
import torch
import acprof
path = sys.argv[1] + "/recorded.pt"
seen = {}
for record, argument in (("on", None), ("off", None), (None, None), (None, True)):
    files = {"acprof_executor_optimize": record} if record else {}
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), path, _extra_files=files)
    torch._C._set_graph_executor_optimize(not (record == "on" or argument))  # the opposite first
    acprof.load(path, executor_optimize=argument)
    seen[f"{record}/{argument}"] = torch._C._get_graph_executor_optimize()
print(json.dumps(seen))
"""


def fail(reason):
    raise SystemExit(f"acprof_package_test: {reason}")


def setting(name):
    value = os.environ.get(name)
    if not value:
        fail(f"{name} is not set; run this file through main() (CTest) or set it")
    return value


def installed_package():
    """pip install the package once into a temporary target; returns that directory."""
    target = os.environ.get("ACPROF_TEST_TARGET")
    if target and os.path.isdir(os.path.join(target, "acprof")):
        return target
    target = tempfile.mkdtemp(prefix="acprof-package.")
    # pip builds in the source directory (build/, *.egg-info): build from a copy, so that parallel
    # runs and the source tree stay apart.
    source = os.path.join(target, "source")
    shutil.copytree(setting("ACPROF_TEST_PACKAGE"), source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    site = os.path.join(target, "site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
                    "--no-cache-dir", "--target", site, source], check=True)
    os.environ["ACPROF_TEST_TARGET"] = site
    return site


def run_python(code, args, ops_library=None, path_dirs=()):
    """Runs `code` in a fresh interpreter that sees only the installed package (no source tree)."""
    env = {key: value for key, value in os.environ.items() if key not in ("ACPROF_OPS_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = installed_package()
    env["PATH"] = os.pathsep.join(list(path_dirs) + ["/usr/bin", "/bin"])
    if ops_library:
        env["ACPROF_OPS_LIBRARY"] = ops_library
    with tempfile.TemporaryDirectory() as cwd:  # not the source tree: `import acprof` must not see python/
        return subprocess.run([sys.executable, "-c", code] + list(args), env=env, cwd=cwd,
                              capture_output=True, text=True)


def test_trains_like_the_original_with_acprof_load():
    result = run_python(TRAIN, [setting("ACPROF_TEST_ORIGINAL"), setting("ACPROF_TEST_REWRITTEN"), REPO],
                        ops_library=setting("ACPROF_TEST_OPS"))
    if result.returncode != 0:
        fail(f"training with acprof.load failed:\n{result.stderr}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    if not report["package"].startswith(installed_package()):
        fail(f"imported acprof from {report['package']}, not from the pip target")
    if report["checkpoints"] == 0:
        fail("the rewritten model calls no acprof::checkpoint; the test would show nothing")
    if report["executor_optimize"]:
        fail("acprof.load left the optimizing executor on; acprof profiles with it off by default")
    if report["original"] != report["rewritten"]:
        fail(f"losses differ: original {report['original']}, rewritten {report['rewritten']}")
    print(f"acprof_package_test: 3 AdamW steps, losses {report['original']} equal; "
          f"{report['checkpoints']} checkpoint call(s)")


def test_finds_the_library_beside_the_acprof_command():
    acprof_dir = os.path.dirname(os.path.realpath(setting("ACPROF_TEST_ACPROF")))
    result = run_python(LOAD, [setting("ACPROF_TEST_REWRITTEN")], path_dirs=[acprof_dir])
    if result.returncode != 0:
        fail(f"with {acprof_dir} on PATH and no ACPROF_OPS_LIBRARY, acprof.load failed:\n"
             f"{result.stdout}{result.stderr}")
    found = result.stdout.split()[-1]
    if os.path.realpath(found) != os.path.realpath(setting("ACPROF_TEST_OPS")):
        fail(f"found {found} beside {acprof_dir}, expected {setting('ACPROF_TEST_OPS')}")


def test_a_missing_library_is_one_error_naming_the_fix():
    for ops_library, expected in ((None, "set ACPROF_OPS_LIBRARY="),
                                  ("/nonexistent/libacprof_ops.so", "ACPROF_OPS_LIBRARY=/nonexistent/libacprof_ops.so is not a file")):
        result = run_python(LOAD, [setting("ACPROF_TEST_REWRITTEN")], ops_library=ops_library)
        message = result.stdout.strip()
        if result.returncode != 3 or expected not in message:
            fail(f"with ACPROF_OPS_LIBRARY={ops_library}, expected OpsLibraryNotFound saying "
                 f"'{expected}'; got exit {result.returncode}:\n{result.stdout}{result.stderr}")
        if "\n" in message or "Unknown type name" in message:
            fail(f"the error is not one line of acprof's: {message}")


def test_the_executor_mode_recorded_in_the_archive_is_obeyed():
    with tempfile.TemporaryDirectory() as directory:
        result = run_python(EXECUTOR, [directory], ops_library=setting("ACPROF_TEST_OPS"))
    if result.returncode != 0:
        fail(f"acprof.load on archives with and without acprof_executor_optimize failed:\n{result.stderr}")
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    expected = {"on/None": True, "off/None": False, "None/None": False, "None/True": True}
    if seen != expected:
        fail(f"executor mode after acprof.load (record/argument: mode) {seen}, expected {expected}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", required=True, help="the package's source (python/)")
    parser.add_argument("--ops", required=True, help="libacprof_ops.so of the build")
    parser.add_argument("--acprof", required=True, help="the acprof command of the build")
    parser.add_argument("--original", required=True)
    parser.add_argument("--rewritten", required=True)
    args = parser.parse_args()
    for name, value in (("PACKAGE", args.package), ("OPS", args.ops), ("ACPROF", args.acprof),
                        ("ORIGINAL", args.original), ("REWRITTEN", args.rewritten)):
        os.environ[f"ACPROF_TEST_{name}"] = os.path.abspath(value)
    target = os.path.dirname(installed_package())
    try:
        test_a_missing_library_is_one_error_naming_the_fix()
        test_finds_the_library_beside_the_acprof_command()
        test_the_executor_mode_recorded_in_the_archive_is_obeyed()
        test_trains_like_the_original_with_acprof_load()
    finally:
        shutil.rmtree(target, ignore_errors=True)


if __name__ == "__main__":
    main()
