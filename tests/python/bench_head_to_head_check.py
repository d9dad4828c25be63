#!/usr/bin/env python3
"""Runs scripts/bench_head_to_head.py end to end on a small model and checks what it wrote
(results.json and the frontier SVG), not the table meant for people: every engine's rows in
order, none with an error (but those --allow-error names, passed on to the benchmark), every
gradient equal to eager's or within the benchmark's tolerance, each baseline at ratio 1, every
acprof row that met its budget below its baseline's peak, the TorchScript ones verified bit for
bit and the eager path's gradients eager's bit for bit.
Exits 1 with the benchmark's output and what is wrong."""

import argparse
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

# One budgeted torch.compile row beside the unbudgeted one: each row is a cold inductor compile of
# forward and backward (about a minute on a 2-core machine), and the budgets' other rows run the
# same code of the benchmark's.
COMPILE_BUDGET = "0.5"

EXPECTED = [("eager", "baseline"), ("eager", "checkpoint every block"),
            ("eager", "selective checkpoint every block (save matmuls)"),
            ("acprof (eager)", "acprof 80%"), ("acprof (eager)", "acprof 60%"), ("acprof (eager)", "acprof 40%"),
            ("acprof (eager)", "acprof 30%"), ("acprof (eager)", "acprof floor"),
            ("torch.compile", "inductor, no budget"), ("torch.compile", f"activation_memory_budget {COMPILE_BUDGET}"),
            ("TorchScript", "baseline"), ("acprof", "acprof 80%"), ("acprof", "acprof 60%"),
            ("acprof", "acprof 40%"), ("acprof", "acprof 30%"), ("acprof", "acprof floor")]


# acprof's rows: its TorchScript rewrites and its eager path.
ACPROF = ("acprof", "acprof (eager)")


def row_problems(rows, allowed_errors):
    problems = []
    settings = [(row["engine"], row["setting"].split(" (")[0] if row["engine"] in ACPROF else row["setting"])
                for row in rows]
    if settings != EXPECTED:
        problems.append(f"rows {settings}, expected {EXPECTED}")
    measured_acprof = {engine: 0 for engine in ACPROF}
    for row in rows:
        name = f"{row['engine']} {row['setting']}"
        if row["error"]:
            if row["setting"] not in allowed_errors:
                problems.append(f"{name}: error {row['error']}")
            continue
        if row["peak_bytes"] is None:
            if row["engine"] not in ACPROF or "below the floor" not in row["note"]:
                problems.append(f"{name}: no measurement and no reason")
            continue
        if not row["gradients_ok"] or not row["gradients"]:
            problems.append(f"{name}: gradients {row['gradients'] or 'not compared'}")
        if row["baseline"] and (row["peak_ratio"], row["time_ratio"]) != (1.0, 1.0):
            problems.append(f"{name}: a baseline's ratios are not 1")
        if row["engine"] in ACPROF:
            measured_acprof[row["engine"]] += 1
            if not row["peak_ratio"] < 1.0:
                problems.append(f"{name}: peak ratio {row['peak_ratio']:.2f} is not below its baseline's")
        if row["engine"] == "acprof" and row["note"] != "verified bit for bit":
            problems.append(f"{name}: not verified bit for bit ({row['note']})")
        # The eager path runs beside eager's baseline in this process: its gradients are eager's, bit for bit.
        if row["engine"] == "acprof (eager)" and row["gradients"] != "equal":
            problems.append(f"{name}: gradients {row['gradients']}, not eager's bit for bit")
    for engine, count in measured_acprof.items():
        if count < 2:
            problems.append(f"only {count} {engine} rows were measured; the floor and 80 % should be")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", required=True)
    parser.add_argument("--acprof", required=True)
    parser.add_argument("--ops", required=True, help="libacprof_ops.so")
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--allow-error", action="append", default=[])
    args = parser.parse_args()
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "scripts", "bench_head_to_head.py")
    results_path = os.path.join(args.work, args.model, "results.json")
    svg_path = os.path.join(args.work, args.model, "frontier.svg")
    for stale in (results_path, svg_path):
        if os.path.exists(stale):
            os.remove(stale)
    command = [args.python, script, "--acprof", args.acprof, "--ops", args.ops, "--model", args.model,
               "--work", args.work, "--rounds", "2", "--compile-budgets", COMPILE_BUDGET]
    for setting in args.allow_error:
        command += ["--allow-error", setting]
    result = subprocess.run(command, capture_output=True, text=True)
    print(result.stdout, "\n".join(line for line in result.stderr.splitlines() if "bench_head_to_head" in line),
          sep="\n")
    problems = []
    if result.returncode != 0:
        problems.append(f"the benchmark exited {result.returncode}")
    if not os.path.exists(results_path):
        problems.append(f"no {results_path}")
    else:
        with open(results_path) as handle:
            problems += row_problems(json.load(handle)["rows"], set(args.allow_error))
    try:
        ElementTree.parse(svg_path)
    except (OSError, ElementTree.ParseError) as error:
        problems.append(f"frontier plot {svg_path}: {error}")
    for problem in problems:
        print("bench_head_to_head_check:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
