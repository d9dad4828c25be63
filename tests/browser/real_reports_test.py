"""The browser test CTest runs: a real profile of a test model, a plan, the
rewrite's before/after report and 'acprof view' with the plan, each page
opened in headless chromium by check_report (report_check.py).

    /usr/bin/python3 tests/browser/real_reports_test.py --acprof BIN --model MODEL.pt --workdir DIR
"""

import argparse
import json
import pathlib
import shutil
import subprocess
import sys

from report_check import check_report


def acprof(binary, workdir, *args):
    run = subprocess.run([binary, *args], cwd=workdir, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"acprof {' '.join(args)} failed: {(run.stderr or run.stdout).strip()}")


def main():
    parser = argparse.ArgumentParser(description="acprof's reports of a real model, checked in headless chromium.")
    parser.add_argument("--acprof", required=True, help="the acprof binary")
    parser.add_argument("--model", required=True, help="a TorchScript model to profile")
    parser.add_argument("--workdir", required=True, help="emptied, then filled with the run's files")
    args = parser.parse_args()
    workdir = pathlib.Path(args.workdir).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    try:
        # An input large enough that activations, not weights, dominate the
        # peak, so the plan has something to recompute.
        acprof(args.acprof, workdir, "profile", args.model, "--input", "float32[8,3,128,128]", "--target",
               "int64[8]:0..10", "--loss", "cross_entropy", "-o", "profile.json")
        acprof(args.acprof, workdir, "plan", "profile.json", "--budget", "95%", "-o", "plan.json")
        acprof(args.acprof, workdir, "rewrite", args.model, "plan.json", "-o", str(workdir / "model.ckpt.pt"),
               "--report-dir", str(workdir))
        acprof(args.acprof, workdir, "view", "profile.json", "--plan", "plan.json", "-o", "timeline.html", "--svg",
               "timeline.svg", "--trace", "trace.json")
        json.loads((workdir / "trace.json").read_text())
        failures = []
        for report in ("timeline.html", "report.html"):
            failures += check_report(workdir / report)
    except Exception as error:
        print(f"real_reports_test: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    for failure in failures:
        print(f"real_reports_test: {failure}", file=sys.stderr)
    if failures:
        return 1
    print("real_reports_test: timeline.html and report.html draw, hover, zoom and reset in chromium")
    return 0


if __name__ == "__main__":
    sys.exit(main())
