#!/usr/bin/env python3
"""Runs scripts/bench_head_to_head.py on a small model and checks its table: the header, one row
per engine and setting in order, ratios of 1.00 on each baseline, and every acprof row that met its
budget measuring a peak below the TorchScript baseline's (the rows below the floor say so instead).
Exits 1 with the table and what is wrong."""

import argparse
import os
import re
import subprocess
import sys

HEADER = "| engine | setting | peak | peak / baseline | step time | time / baseline | note |"


def cells(line: str):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", required=True)
    parser.add_argument("--acprof", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "scripts", "bench_head_to_head.py")
    result = subprocess.run([args.python, script, "--acprof", args.acprof, "--model", args.model, "--work", args.work,
                             "--iters", "3"], capture_output=True, text=True)
    print(result.stdout, result.stderr, sep="\n")
    problems = []
    if result.returncode != 0:
        problems.append(f"the benchmark exited {result.returncode}")
    lines = result.stdout.splitlines()
    if HEADER not in lines:
        problems.append("no table header")
        rows = []
    else:
        start = lines.index(HEADER)
        rows = [cells(line) for line in lines[start + 2:] if line.startswith("|")]
        if not all(len(row) == 7 for row in rows):
            problems.append("a row without 7 cells")
    settings = [(row[0], row[1].split(" (")[0]) for row in rows if len(row) == 7]
    expected = ([("TorchScript", "baseline"), ("acprof", "acprof 80%"), ("acprof", "acprof 60%"),
                 ("acprof", "acprof 40%"), ("acprof", "acprof 30%"), ("acprof", "acprof at its floor"),
                 ("eager PyTorch", "baseline"), ("eager PyTorch", "torch.utils.checkpoint on every block")])
    if settings[:len(expected)] != expected:
        problems.append(f"rows {settings[:len(expected)]}, expected {expected}")
    if not any(engine == "torch.compile" for engine, _ in settings):
        problems.append("no torch.compile row")
    measured_acprof = 0
    for row in rows:
        if len(row) != 7:
            continue
        engine, setting, peak, peak_ratio, _, time_ratio, note = row
        if "baseline" in setting and (peak_ratio, time_ratio) != ("1.00", "1.00"):
            problems.append(f"{engine} {setting}: a baseline's ratios are not 1.00")
        if engine == "acprof":
            if peak_ratio == "–":
                if "below the floor" not in note:
                    problems.append(f"{setting}: no measurement and no reason")
                continue
            measured_acprof += 1
            if not float(peak_ratio) < 1.0:
                problems.append(f"{setting}: measured peak {peak} is not below the baseline's ({peak_ratio})")
            if not re.fullmatch(r"[0-9.]+ MiB", peak):
                problems.append(f"{setting}: peak cell {peak!r}")
            if note != "verified bit for bit":
                problems.append(f"{setting}: not verified bit for bit ({note})")
    if measured_acprof < 2:
        problems.append(f"only {measured_acprof} acprof rows were measured; the floor and 80 % should be")
    for problem in problems:
        print("bench_head_to_head_check:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
