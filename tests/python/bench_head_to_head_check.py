#!/usr/bin/env python3
"""Runs scripts/bench_head_to_head.py end to end on a small model and checks what it wrote
(results.json and the frontier SVG), not the table meant for people: every engine's rows in
order, none with an error (but those --allow-error names, passed on to the benchmark), every
gradient equal to eager's or within the benchmark's tolerance, each baseline at ratio 1, every
acprof row that met its budget below its baseline's peak, the TorchScript ones verified bit for
bit and measured within their budget, the eager path's gradients eager's bit for bit, acprof's
rows at the peers' peaks there, and what each acprof and budgeted torch.compile row runs again in
backward listed.
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

PEERS = [("eager", "checkpoint every block"), ("eager", "selective checkpoint every block (save matmuls)"),
         ("torch.compile", f"activation_memory_budget {COMPILE_BUDGET}")]


def acprof_rows(engine, peer_peaks):
    """acprof's rows of one engine: its fixed budgets, one at each peak of a peer below its baseline
    (named by the peer, as results.json's peer_peaks lists them), and its floor."""
    return ([(engine, f"acprof {budget}") for budget in ("80%", "60%", "40%", "30%")] +
            [(engine, f"acprof at {name}'s peak ({ratio:.2f})") for name, ratio in peer_peaks] +
            [(engine, "acprof floor")])


def expected_rows(peer_peaks):
    return ([("eager", "baseline")] + PEERS[:2] + acprof_rows("acprof (eager)", peer_peaks) +
            [("torch.compile", "inductor, no budget")] + PEERS[2:] +
            [("TorchScript", "baseline")] + acprof_rows("acprof", peer_peaks))


# acprof's rows: its TorchScript rewrites and its eager path.
ACPROF = ("acprof", "acprof (eager)")


def row_problems(results, allowed_errors):
    problems = []
    rows, peer_peaks = results["rows"], results["peer_peaks"]
    # Every peer is measured before acprof plans, and one clearly below its baseline gets acprof rows.
    peer_names = [name for name, _ in peer_peaks]
    for row in rows:
        name = f"{row['engine']} {row['setting']}"
        if (row["engine"], row["setting"]) in PEERS and (row["peak_ratio"] or 1.0) < 0.95 and name not in peer_names:
            problems.append(f"no acprof row at the peak of {name} ({row['peak_ratio']:.2f}; peer_peaks {peer_peaks})")
    settings = [(row["engine"], row["setting"].split(" (")[0] if row["setting"].startswith("acprof floor")
                 else row["setting"]) for row in rows]
    expected = expected_rows(peer_peaks)
    if settings != expected:
        problems.append(f"rows {settings}, expected {expected}")
    measured_acprof = {engine: 0 for engine in ACPROF}
    for row in rows:
        name = f"{row['engine']} {row['setting']}"
        if row["error"]:
            if row["setting"] not in allowed_errors:
                problems.append(f"{name}: error {row['error']}")
            continue
        if row["peak_bytes"] is None:
            if row["engine"] not in ACPROF or not row["below_floor"]:
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
        if row["engine"] == "acprof" and (row["verification"] or {}).get("mode") != "bitwise":
            problems.append(f"{name}: not verified bit for bit ({row['verification']})")
        if row["engine"] in ACPROF and row["over_budget"]:
            problems.append(f"{name}: the rewrite measured above its plan's budget (exit 5)")
        if row["engine"] == "acprof" and not row["acprof_peak_bytes"] <= row["budget_bytes"]:
            problems.append(f"{name}: acprof measured {row['acprof_peak_bytes']} B, over its budget "
                            f"{row['budget_bytes']} B")
        if (row["engine"] in ACPROF or not row["baseline"] and row["engine"] == "torch.compile") \
                and not row["recomputed"]:
            problems.append(f"{name}: no op listed as run again in backward")
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
            problems += row_problems(json.load(handle), set(args.allow_error))
    try:
        ElementTree.parse(svg_path)
    except (OSError, ElementTree.ParseError) as error:
        problems.append(f"frontier plot {svg_path}: {error}")
    for problem in problems:
        print("bench_head_to_head_check:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
