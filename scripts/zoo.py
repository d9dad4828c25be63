"""The model zoo: profile, plan and rewrite every torchvision classification model and a few
nn.Transformer stacks, and check that acprof's predictions hold (issue 10).

    scripts/zoo.sh [--set zoo|tasks|patterns|transformers|reference] [--only REGEX] [--limit N] [--jobs N]
                   [--results DIR] [--acprof PATH] [--force]

--set tasks runs torchvision's models for the other tasks (segmentation, video, optical flow;
detection and quantized builders are listed as skipped, with the reason) and writes
docs/zoo-tasks.md.

--set patterns runs models/patterns.py (small models with IR that torchvision's classifiers lack:
recurrent layers, frozen parameters, sparse gradients, sampling in forward, ...) and writes
docs/zoo-patterns.md.

--set transformers runs models of Hugging Face's transformers library (GPT-2, BERT, Llama, T5; small,
random weights, built from their configs) and writes docs/zoo-transformers.md.

--set reference runs acprof's own test-set reference models (models/model_sets.py) through the
same pipeline instead and writes docs/reference.md: the extra-time prediction against the
measurement on the CPU reference models, which issue 10 asks to hold within 10 % of the step.

For each model and export mode (traced, scripted) the driver
  1. exports it (scripts/zoo_export.py, a separate process per model);
  2. runs `acprof profile`;
  3. finds the floor: `acprof plan --budget 1% --outcome F` fails, and F names the smallest peak it reached;
  4. for the budgets 70 % and near the floor (near_floor_budget): `acprof plan`, then
     `acprof rewrite` (verified);
and records, per model, a JSON file in the results directory (default build/zoo/). A model whose
result file exists is not run again unless --force. docs/zoo.md is then written from the results
of the selected models, and the exit status is 1 if any of them broke a rule:
  - a command failed, or the rewrite was not verified bit for bit;
  - the measured peak is above the budget;
  - |predicted - measured peak| / measured > 2 %;
  - the plan near the floor recomputes nothing though the floor is below the profiled peak, or
    acprof plan cannot meet that budget, above its own floor.
A 70 % budget below the floor (acprof plan refuses it) is recorded, not counted as a broken rule: it
says what the model is made of, not that acprof is wrong.
Progress lines go to stderr; each command's output is kept in the model's work directory.
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable  # the project venv's (scripts/zoo.sh), whose torch acprof is built on
EXPORTER = os.path.join(REPO, "scripts", "zoo_export.py")
MODES = ("traced", "scripted")

PERCENT_BUDGET = "70%"
BUDGET_LABELS = {"70": "70 %", "floor": "near the floor"}  # by the tag that names a budget's files
FLOOR_PROBE_BUDGET = "1%"  # below every model's floor, so that plan names the floor
FLOOR_MARGIN = 0.02        # the plan near the floor asks for floor + 2 % (near_floor_budget)
PEAK_ERROR_LIMIT = 0.02    # |predicted - measured| / measured
REMOVABLE_SHARE_GOAL = 0.60  # issue 10's goal for the floor; listed, not a rule of the exit status

# acprof may be rebuilt while the zoo runs: the binary vanishes for a while, or changes under
# a running model. The driver waits for it, and runs such a model again (up to 3 times).
BINARY_WAIT_SECONDS = 30 * 60
BINARY_ATTEMPTS = 3

INFEASIBLE_EXIT = 3  # acprof plan: no plan fits the budget (docs/manual.md, exit codes)
TIME_ERROR_GOAL = 0.10     # |predicted - measured extra time| as a share of the step; listed, not a rule
REFERENCE_TIME_ROUNDS = 20  # least timed pairs per rewrite of the reference set (parse_arguments says why)
# A floor below the goal is searched again exhaustively (acprof plan --solver optimal), to tell a
# floor no set of legal segments beats from one the default solver misses, and to name the peak
# no plan of any kind goes below (the bytes no recompute touches, at their own peak).
EXACT_SEARCH_SECONDS = 10  # acprof's own default; --exact-search-seconds


def log(message: str) -> None:
    # One write per line: print() writes the text and the newline separately, and lines of
    # models running side by side would interleave.
    sys.stderr.write(f"zoo: {message}\n")
    sys.stderr.flush()


class CommandFailed(Exception):
    """A command of the pipeline failed; `step` names it (profile, plan 70%, ...)."""

    def __init__(self, step: str, message: str):
        super().__init__(f"{step}: {message}")
        self.step = step
        self.message = message


# ---------------------------------------------------------------- running commands


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def error_line(result: subprocess.CompletedProcess) -> str:
    """The one line that says why a command failed: acprof prints `acprof: error: ...` last."""
    line = last_line(result.stderr) or last_line(result.stdout)
    if result.returncode < 0:  # e.g. SIGKILL from the kernel when memory ran out
        return f"killed by signal {-result.returncode}" + (f" (last output: {line})" if line else "")
    return line.replace("acprof: error: ", "", 1) or f"exit status {result.returncode}, no output"


def run_logged(command: List[str], cwd: str, log_path: str, timeout: float) -> subprocess.CompletedProcess:
    """Runs `command`, keeps its command line, stdout and stderr in `log_path`."""
    started = time.perf_counter()
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        def text(value) -> str:
            return value.decode(errors="replace") if isinstance(value, bytes) else (value or "")
        result = subprocess.CompletedProcess(command, 124, text(expired.stdout),
                                             text(expired.stderr) + f"\ntimed out after {timeout:.0f} s\n")
    with open(log_path, "w") as handle:
        handle.write(f"$ {' '.join(command)}\n# exit {result.returncode} after {time.perf_counter() - started:.1f} s\n")
        handle.write(f"--- stdout\n{result.stdout}--- stderr\n{result.stderr}")
    return result


def binary_stamp(path: str) -> Optional[Tuple[int, int]]:
    try:
        status = os.stat(path)
        return status.st_mtime_ns, status.st_size
    except OSError:
        return None


def wait_for_binary(path: str) -> None:
    waited = 0
    while not (os.path.isfile(path) and os.access(path, os.X_OK)):
        if waited >= BINARY_WAIT_SECONDS:
            raise CommandFailed("acprof", f"{path} has been missing for {waited} s")
        if waited == 0:
            log(f"{path} is missing (being rebuilt?); waiting")
        time.sleep(10)
        waited += 10


def build_time(path: str) -> str:
    """When the acprof binary was built (its mtime), to tell results of different builds apart."""
    stamp = binary_stamp(path)
    return datetime.datetime.fromtimestamp(stamp[0] / 1e9).isoformat(timespec="seconds") if stamp else "missing"


def run_acprof(options, arguments: List[str], cwd: str, log_name: str) -> subprocess.CompletedProcess:
    """Runs acprof, waiting for the binary while it is being rebuilt."""
    log(f"{os.path.basename(cwd)}: {os.path.splitext(log_name)[0]}")
    for _ in range(BINARY_ATTEMPTS):
        wait_for_binary(options.acprof)
        try:
            return run_logged([options.acprof] + arguments, cwd, os.path.join(cwd, log_name), options.timeout)
        except OSError as error:  # vanished or "text file busy" between the check and the exec
            log(f"cannot start {options.acprof} ({error}); retrying")
            time.sleep(10)
    raise CommandFailed("acprof", f"{options.acprof} could not be started")


def read_json(path: str) -> Dict:
    with open(path) as handle:
        return json.load(handle)


def write_json_atomically(path: str, value: Dict) -> None:
    # A result file marks a model as done: it must never be half written.
    temp_path = path + ".tmp"
    with open(temp_path, "w") as handle:
        json.dump(value, handle, indent=1)
    os.replace(temp_path, path)


# ---------------------------------------------------------------- one model


def export_model(options, name: str, mode: str, work_dir: str) -> Dict:
    """The exporter's JSON answer: status exported (with the specs) or skipped (with the reason)."""
    log(f"{os.path.basename(work_dir)}: export")
    command = [PYTHON, EXPORTER, "--set", options.set, "--model", name, "--mode", mode,
               "--out", os.path.join(work_dir, "model.pt"), "--max-step-seconds", str(options.max_step_seconds)]
    result = run_logged(command, work_dir, os.path.join(work_dir, "export.log"), options.timeout)
    if result.returncode != 0:
        # A crash of the exporter (not a handled error): the model cannot be exported.
        return {"status": "skipped", "reason": f"export crashed: {error_line(result)}"}
    try:
        return json.loads(last_line(result.stdout))
    except json.JSONDecodeError:
        return {"status": "skipped", "reason": f"the exporter printed no result (see {work_dir}/export.log)"}


def profile_facts(profile: Dict) -> Dict:
    summary = profile["summary"]
    return {"peak_bytes": summary["peak_bytes"], "peak_breakdown": summary["peak_breakdown"],
            "iteration_us": sum(summary["phase_time_us"].values())}


def removable_bytes(facts: Dict) -> int:
    """Bytes at the profiled peak that recompute could remove in principle: all but weights,
    gradients, optimizer state and inputs."""
    b = facts["peak_breakdown"]
    return facts["peak_bytes"] - b["weight"] - b["gradient"] - b["optimizer_state"] - b["input"]


def infeasible_outcome(work_dir: str, result, outcome_file: str) -> Optional[Dict]:
    """The outcome acprof plan wrote (--outcome) where it refused the budget, else None."""
    if result.returncode != INFEASIBLE_EXIT:
        return None
    return read_json(os.path.join(work_dir, outcome_file))


def find_floor(options, work_dir: str) -> int:
    """The smallest peak the planner reaches, in bytes, from the outcome of a plan that cannot fit."""
    result = run_acprof(options, ["plan", "profile.json", "--budget", FLOOR_PROBE_BUDGET, "-o", "floor_probe.json",
                                  "--outcome", "floor_probe.outcome.json"], work_dir, "plan_floor_probe.log")
    if result.returncode == 0:  # everything removable: the probe's plan is the floor
        return read_json(os.path.join(work_dir, "floor_probe.json"))["predicted_peak_bytes"]
    refused = infeasible_outcome(work_dir, result, "floor_probe.outcome.json")
    if refused is None:
        raise CommandFailed(f"plan --budget {FLOOR_PROBE_BUDGET}", error_line(result))
    return refused["floor"]["peak_bytes"]


def exact_search_outcome(options, work_dir: str) -> Dict:
    """exact_search's result, or the failure of its command."""
    try:
        return exact_search(options, work_dir)
    except CommandFailed as failure:
        return {"failure": str(failure)}


def exact_search(options, work_dir: str) -> Dict:
    """The floor `acprof plan --solver optimal` reaches in --exact-search-seconds, whether it proved
    it optimal, and the peak it says no plan can go below (the floor itself when proven)."""
    seconds = options.exact_search_seconds
    result = run_acprof(options, ["plan", "profile.json", "--budget", "1", "--solver", "optimal", "--time-limit",
                                  f"{seconds:g}", "-o", "exact_probe.json", "--outcome", "exact_probe.outcome.json"],
                        work_dir, "plan_exact_probe.log")
    step = "plan --solver optimal --budget 1"
    refused = infeasible_outcome(work_dir, result, "exact_probe.outcome.json")
    if refused is None or "search" not in refused:
        raise CommandFailed(step, error_line(result))
    floor = refused["floor"]["peak_bytes"]
    proven = refused["search"]["proven_optimal"]
    bound = floor if proven else refused["search"]["peak_lower_bound_bytes"]
    return {"floor_bytes": floor, "proven": proven, "lower_bound_bytes": bound,
            "seconds": seconds, "acprof_built": build_time(options.acprof)}


def wants_exact_search(record: Dict) -> bool:
    return record.get("removed_share") is not None and record["removed_share"] < REMOVABLE_SHARE_GOAL


def near_floor_budget(floor: int, peak: int) -> int:
    """The floor + 2 %, or halfway from the floor to the profiled peak where that is lower: a
    budget at or above the profiled peak asks for no recompute, and its rewrite (no segment) would
    test nothing. A floor at the peak (nothing removable) gives the peak."""
    return floor + max(0, min(int(floor * FLOOR_MARGIN), (peak - floor) // 2))


def budget_outcome(options, work_dir: str, tag: str, budget: str) -> Dict:
    """run_budget's outcome, or the failure of its command."""
    try:
        return run_budget(options, work_dir, tag, budget)
    except CommandFailed as failure:
        return {"label": BUDGET_LABELS[tag], "budget_text": budget, "failure": str(failure)}


def run_budget(options, work_dir: str, tag: str, budget: str) -> Dict:
    """Plan at `budget`, rewrite with verification, and compare the prediction with the measurement."""
    outcome = {"label": BUDGET_LABELS[tag], "budget_text": budget}
    plan_path = f"plan_{tag}.json"
    result = run_acprof(options, ["plan", "profile.json", "--budget", budget, "-o", plan_path], work_dir,
                        f"plan_{tag}.log")
    if result.returncode != 0:
        if result.returncode == INFEASIBLE_EXIT and tag != "floor":
            outcome["infeasible"] = error_line(result)
            return outcome
        raise CommandFailed(f"plan --budget {budget}", error_line(result))
    plan = read_json(os.path.join(work_dir, plan_path))
    outcome.update(budget_bytes=plan["budget_bytes"], predicted_peak_bytes=plan["predicted_peak_bytes"],
                   segments=len(plan["segments"]), predicted_extra_us=plan["extra_time_us"],
                   baseline_iteration_us=plan["baseline_iteration_time_us"])

    report_dir = os.path.join(work_dir, tag)
    os.makedirs(report_dir, exist_ok=True)
    rewrite_args = ["rewrite", "model.pt", plan_path, "-o", os.path.join(tag, "model.ckpt.pt"), "--report-dir", tag,
                    "--outcome", f"rewrite_{tag}.outcome.json"]
    if options.time_rounds is not None:
        rewrite_args += ["--time-rounds", str(options.time_rounds)]
    result = run_acprof(options, rewrite_args, work_dir, f"rewrite_{tag}.log")
    if result.returncode != 0:
        raise CommandFailed("rewrite", error_line(result))
    rewritten = read_json(os.path.join(work_dir, f"rewrite_{tag}.outcome.json"))["result"]
    verification = rewritten["verification"]
    outcome["verification"] = verification["mode"] if verification else "missing"
    measured = rewritten["peak"].get("measured_bytes")
    if measured is None:
        raise CommandFailed("rewrite", f"succeeded but measured no peak: {last_line(result.stdout)}")
    outcome["measured_peak_bytes"] = measured
    outcome["peak_error"] = (plan["predicted_peak_bytes"] - measured) / measured
    outcome.update(measured_step_times(rewritten["time"]))
    return outcome


def measured_step_times(time: Optional[Dict]) -> Dict:
    """The original's step time and the rewrite's extra time as `acprof rewrite` measured them
    (its outcome's result.time): alternated pairs of steps in one process, the extra time the
    median over the pairs. Empty when the rewrite was not timed."""
    if not time:
        return {}
    times = {"measured_step_us": time["before_us"], "measured_extra_us": time["extra_share"] * time["before_us"],
             "time_rounds": time["pairs"]}
    if time["extra_share_error"] is not None:
        times["measured_extra_error"] = time["extra_share_error"]  # the median's standard error, share of the step
    return times


def time_shares(outcome: Dict) -> Optional[Tuple[float, float]]:
    """Predicted and measured extra time, each as a share of its own model's original step."""
    if outcome.get("baseline_iteration_us", 0) <= 0 or outcome.get("measured_step_us", 0) <= 0:
        return None
    return (outcome["predicted_extra_us"] / outcome["baseline_iteration_us"],
            outcome["measured_extra_us"] / outcome["measured_step_us"])


def broken_rules(outcome: Dict) -> List[str]:
    if "failure" in outcome:
        return ["command failed"]
    if "infeasible" in outcome:
        return []
    rules = []
    if outcome["verification"] != "bitwise":
        rules.append(f"verification {outcome['verification']}")
    if outcome["measured_peak_bytes"] > outcome["budget_bytes"]:
        rules.append("measured peak > budget")
    if abs(outcome["peak_error"]) > PEAK_ERROR_LIMIT:
        rules.append(f"|peak error| > {PEAK_ERROR_LIMIT:.0%}")
    return rules


def profile_and_plan(options, work_dir: str, record: Dict) -> None:
    """Steps 2 to 4 for an exported model; fills `record`, raises CommandFailed for a failed
    profile (after which nothing else can run)."""
    profile_args = ["profile", "model.pt", "-o", "profile.json"]
    if options.iters is not None:
        profile_args += ["--iters", str(options.iters)]
    result = run_acprof(options, profile_args, work_dir, "profile.log")
    if result.returncode != 0:
        raise CommandFailed("profile", error_line(result))
    before = profile_facts(read_json(os.path.join(work_dir, "profile.json")))
    record["profile"] = before
    record["removable_bytes"] = removable_bytes(before)

    budgets = {"70": PERCENT_BUDGET}
    try:
        floor = find_floor(options, work_dir)
        record["floor_bytes"] = floor
        if record["removable_bytes"] > 0:
            record["removed_share"] = (before["peak_bytes"] - floor) / record["removable_bytes"]
        budgets["floor"] = str(near_floor_budget(floor, before["peak_bytes"]))
    except CommandFailed as failure:
        record["budgets"]["floor"] = {"label": BUDGET_LABELS["floor"], "failure": str(failure)}
    if wants_exact_search(record):
        record["exact_search"] = exact_search_outcome(options, work_dir)

    for tag, budget in budgets.items():
        record["budgets"][tag] = budget_outcome(options, work_dir, tag, budget)


def judge(record: Dict) -> None:
    """Sets the record's broken rules and status from its outcomes."""
    rules = ["command failed"] if "failure" in record else []
    if "failure" in record.get("exact_search", {}):
        rules.append("exact search failed")
    for tag, outcome in record["budgets"].items():
        rules += [f"{tag}: {rule}" for rule in broken_rules(outcome)]
    near_floor, peak = record["budgets"].get("floor", {}), record.get("profile", {}).get("peak_bytes", 0)
    if near_floor.get("segments") == 0 and record.get("floor_bytes", 0) < peak:
        rules.append("floor: the plan near the floor recomputes nothing")
    record["broken_rules"] = rules
    record["status"] = "broken" if rules else "ok"


def complete_earlier_result(options, record: Dict) -> bool:
    """Brings a result of an earlier zoo.py up to this one's steps, from the files its run kept:
    the exact search of a floor below the goal, and a rewrite near the floor where the earlier
    budget (floor + 2 %) was at or above the profiled peak, so that its plan recomputed nothing
    (only where the run kept its model: --keep-models). Returns whether the record changed."""
    work_dir = os.path.join(options.results, record["id"])
    if record.get("status") == "skipped" or not os.path.exists(os.path.join(work_dir, "profile.json")):
        return False
    changed = False
    if wants_exact_search(record) and "failure" in record.get("exact_search", {"failure": "not run"}):
        log(f"{record['id']}: exact search of the floor")
        record["exact_search"] = exact_search_outcome(options, work_dir)
        changed = True
    peak, near_floor = record["profile"]["peak_bytes"], record["budgets"].get("floor", {})
    model_kept = os.path.exists(os.path.join(work_dir, "model.pt"))
    if model_kept and near_floor.get("budget_bytes", 0) >= peak > record.get("floor_bytes", peak):
        budget = str(near_floor_budget(record["floor_bytes"], peak))
        log(f"{record['id']}: the earlier budget near the floor was at the profiled peak; planning at {budget} B")
        record["budgets"]["floor"] = budget_outcome(options, work_dir, "floor", budget)
        record["budgets"]["floor"]["acprof_built"] = build_time(options.acprof)
        changed = True
    if changed:
        judge(record)
    return changed


def run_model(options, model_id: str, name: str, mode: str) -> Dict:
    work_dir = os.path.join(options.results, model_id)
    shutil.rmtree(work_dir, ignore_errors=True)  # a fresh run: no file of an earlier one is read
    os.makedirs(work_dir)
    started = time.perf_counter()
    record = {"id": model_id, "name": name, "mode": mode, "acprof": options.acprof,
              "acprof_built": build_time(options.acprof),
              "date": datetime.datetime.now().isoformat(timespec="seconds"), "budgets": {}}

    exported = export_model(options, name, mode, work_dir)
    record["export"] = exported
    if exported["status"] != "exported":
        record["status"] = "skipped"
        record["reason"] = exported["reason"]
    else:
        try:
            profile_and_plan(options, work_dir, record)
        except CommandFailed as failure:
            record["failure"] = str(failure)
        judge(record)
    record["seconds"] = round(time.perf_counter() - started, 1)
    return record


def run_model_safely(options, model_id: str, name: str, mode: str) -> Dict:
    """run_model, with a bug of the driver itself recorded as the model's failure rather than
    ending the whole zoo."""
    try:
        return run_model(options, model_id, name, mode)
    except Exception as error:  # noqa: BLE001 (deliberately broad: one model must not stop the others)
        return {"id": model_id, "name": name, "mode": mode, "status": "broken", "budgets": {},
                "acprof_built": build_time(options.acprof),
                "failure": f"zoo.py: {type(error).__name__}: {error}", "broken_rules": ["command failed"]}


def run_and_record(options, model_id: str, name: str, mode: str) -> Dict:
    """Runs a model and writes its result file. When acprof was rebuilt during the run the
    model runs again: the files of two builds do not mix (a new build may not read an old
    one's profile), and a result must be one build's."""
    for _ in range(BINARY_ATTEMPTS):
        wait_for_binary(options.acprof)
        stamp = binary_stamp(options.acprof)
        record = run_model_safely(options, model_id, name, mode)
        if binary_stamp(options.acprof) == stamp:
            break
        log(f"{model_id}: acprof was rebuilt during the run; running the model again")
    write_json_atomically(os.path.join(options.results, f"{model_id}.json"), record)
    if not options.keep_models:
        remove_model_files(os.path.join(options.results, model_id))
    return record


def remove_model_files(work_dir: str) -> None:
    """Deletes the exported and rewritten models of a finished run. They are the bulk of its
    files (a large model's run keeps 1 to 2 GB of them; the whole zoo, tens of GB) and nothing
    reads them once the result is written; profiles, plans, logs and reports stay."""
    for folder, _, names in os.walk(work_dir):
        for name in names:
            if name.endswith(".pt"):
                os.remove(os.path.join(folder, name))


# ---------------------------------------------------------------- docs/zoo.md


def format_bytes(value: Optional[int]) -> str:
    if value is None:
        return "–"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value} B"


def format_percent(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{100 * value:+.1f} %" if signed else f"{100 * value:.1f} %"


def peak_cell(outcome: Optional[Dict]) -> str:
    if not outcome:
        return "–"
    if "failure" in outcome:
        return "failed"
    if "infeasible" in outcome:
        return "below the floor"
    return (f"{format_bytes(outcome['budget_bytes'])} · {format_bytes(outcome['predicted_peak_bytes'])} · "
            f"{format_bytes(outcome['measured_peak_bytes'])} ({format_percent(outcome['peak_error'], True)})")


def measured_error_suffix(outcome: Dict) -> str:
    """` ± x %`: the measured extra time's standard error, where the rewrite printed one."""
    error = outcome.get("measured_extra_error")
    return f" ± {format_percent(error)}" if error is not None else ""


def time_cell(outcome: Optional[Dict]) -> str:
    shares = time_shares(outcome) if outcome and "verification" in outcome else None
    if shares is None:
        return "–"
    return f"{format_percent(shares[0], True)} / {format_percent(shares[1], True)}" + measured_error_suffix(outcome)


def verification_cell(record: Dict) -> str:
    cells = [record["budgets"].get(tag, {}).get("verification", "–") for tag in ("70", "floor")]
    return " / ".join(cells)


def result_cell(record: Dict) -> str:
    return "ok" if record["status"] == "ok" else "**" + "; ".join(record["broken_rules"]) + "**"


def table_row(record: Dict) -> str:
    export = record.get("export", {})
    profile = record.get("profile", {})
    budgets = record["budgets"]
    inputs = ", ".join(export.get("inputs", []))
    cells = [record["name"], record["mode"], f"`{inputs}`", format_bytes(profile.get("peak_bytes")),
             format_bytes(record.get("floor_bytes")), format_percent(record.get("removed_share")),
             peak_cell(budgets.get("70")), time_cell(budgets.get("70")),
             peak_cell(budgets.get("floor")), time_cell(budgets.get("floor")),
             verification_cell(record), result_cell(record)]
    return "| " + " | ".join(cells) + " |"


def machine_description() -> str:
    cpu = "unknown CPU"
    memory_kib = 0
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                memory_kib = int(line.split()[1])
    return f"{cpu}, nproc {os.cpu_count()}, {memory_kib / (1 << 20):.1f} GiB memory"


def failure_lines(record: Dict) -> List[str]:
    lines = []
    if "failure" in record:
        lines.append(f"- `{record['id']}`: {record['failure']}")
    for tag, outcome in record["budgets"].items():
        if "failure" in outcome:
            lines.append(f"- `{record['id']}` ({outcome['label']}): {outcome['failure']}")
    return lines


CATEGORY_WORDS = {"weight": "weights", "gradient": "gradients", "optimizer_state": "optimizer state",
                  "input": "inputs", "activation": "activations", "temporary": "temporaries", "output": "outputs"}


def floor_peak_reason(results: str, record: Dict) -> str:
    """Why the floor is where it is, from the floor plan's breakdown of its predicted peak:
    the op at the peak and what is live there. "" when the plan predates the breakdown."""
    work_dir = os.path.join(results, record["id"])
    try:
        plan = read_json(os.path.join(work_dir, "plan_floor.json"))
        steps = read_json(os.path.join(work_dir, "profile.json"))["steps"]
    except (OSError, ValueError):
        return ""
    breakdown = plan.get("predicted_peak_breakdown")
    step = plan.get("predicted_peak_step", -1)
    if breakdown is None or not 0 <= step < len(steps):
        return ""
    live = ", ".join(f"{words} {format_bytes(breakdown[c])}" for c, words in CATEGORY_WORDS.items() if breakdown[c] > 0)
    where = f"`{steps[step]['op']}` ({steps[step]['phase']}{', ' + steps[step]['scope'] if steps[step]['scope'] else ''})"
    # The floor above the bytes no recompute removes at the profiled peak is made of: those bytes
    # grown since (gradients accumulate through backward), and what is still removable but live.
    fixed_then = record["profile"]["peak_bytes"] - record["removable_bytes"]
    fixed_now = sum(breakdown[c] for c in ("weight", "gradient", "optimizer_state", "input"))
    parts = {"grown": fixed_now - fixed_then, "activation": breakdown["activation"],
             "temporary": breakdown["temporary"], "output": breakdown["output"]}
    causes = {
        "grown": f"mostly gradients accumulated since the profiled peak (weights, gradients, optimizer state and "
                 f"inputs: {format_bytes(fixed_now)} there, {format_bytes(fixed_then)} at the profiled peak)",
        "activation": "mostly activations still live: segment inputs and outputs, and values saved for backward "
                      "that no legal segment drops",
        "temporary": "mostly memory the op allocates and frees itself (a workspace), which no recompute removes",
        "output": "mostly the model's outputs and the loss, which are not recomputed",
    }
    cause = causes[max(parts, key=parts.get)]
    return f"floor's peak in {where}: {live}; {cause}"


def exact_search_text(record: Dict) -> str:
    """What the exhaustive search says of a floor below the goal: whether any set of legal
    segments peaks lower, and how much of the removable bytes any plan at all could remove."""
    search = record.get("exact_search")
    if search is None:
        return ""
    if "failure" in search:
        return f". Exact search failed: {search['failure']}"
    peak, floor, exact = record["profile"]["peak_bytes"], record["floor_bytes"], search["floor_bytes"]
    if search["proven"]:
        found = "proves this floor optimal" if exact >= floor else f"proves {format_bytes(exact)} optimal"
        return f". Exact search (`--solver optimal`) {found}: no set of legal segments peaks lower"
    found = "reaches the same floor" if exact >= floor else f"reaches {format_bytes(exact)}"
    bound = search["lower_bound_bytes"]
    reachable = (peak - bound) / record["removable_bytes"]
    text = (f". Exact search (`--solver optimal`, {search['seconds']:g} s) {found}; no plan can peak below "
            f"{format_bytes(bound)} (weights, gradients and what else no recompute touches, at their own peak), "
            f"so any plan removes at most {format_percent(reachable)} of the removable bytes")
    if peak > bound:
        text += f", and this floor removes {format_percent((peak - floor) / (peak - bound))} of that"
    return text


# What the models are and how they train, per --set.
SET_DESCRIPTIONS = {
    "zoo": ("Model zoo",
            "Each model has random weights (seed 0) and trains at batch 2 on the smallest image size from 64x64 up "
            "that it accepts (the `input` column); the loss is cross entropy against 1000 classes (mean of the "
            "output for the transformer stacks)."),
    "tasks": ("Model zoo: torchvision's other tasks",
              "Each model has random weights (seed 0, no pretrained backbone) and trains at batch 2 on the smallest "
              "input from 64x64 up that it accepts (the `input` column). Segmentation models return a dict; the loss "
              "is per-pixel cross entropy of its first entry (`out`, [N, 21, H, W]) against an `int64[N,H,W]` target. "
              "Video models take clips [N, 3, T, H, W] (8 frames of 64x64 up to 16 of 224x224) and learn 400 "
              "classes. Optical-flow models (RAFT) take two images and return a list of 12 flow estimates; the loss "
              "is the sum of their means."),
    "patterns": ("Model zoo: patterns beyond torchvision",
                 "Small models with IR that torchvision's classifiers lack (models/patterns.py says what each "
                 "stands for), random weights (seed 0), each with its own inputs (the `input` column) and the mean "
                 "of its float outputs as the loss."),
    "transformers": ("Model zoo: Hugging Face transformers",
                     "Models of Hugging Face's `transformers` library, built from their config classes with random "
                     "weights (seed 0; nothing downloaded): GPT-2 (`GPT2LMHeadModel`), BERT (`BertForMaskedLM`), "
                     "Llama (`LlamaForCausalLM`, 2 key-value heads for 4 query heads) and T5 "
                     "(`T5ForConditionalGeneration`, the encoder's and the decoder's token ids in), each with 2 layers "
                     "(T5: 2 encoder and 2 decoder layers), width 128, 4 heads and 1000 tokens, at batch 2 and "
                     "sequence 64, each config's default dropout, and no key-value cache. Attention runs through "
                     "`aten::scaled_dot_product_attention` (`attn_implementation=\"sdpa\"`). A thin wrapper returns "
                     "the logits ([2, 64, 1000]); the loss is their cross entropy against random token ids "
                     "(`int64[2,64]`)."),
    "reference": ("Reference models",
                  "acprof's own reference models (models/reference_models.py), at the sizes and in the modes of the "
                  "C++ tests' set (models/model_sets.py \"test\"), with random weights (seed 0) and each model's "
                  "own training specs (the `input` column; the losses are in the models' files)."),
}


def write_docs(path: str, records: List[Dict], versions: Dict, selection: str, jobs: int, results: str,
               model_set: str = "zoo", time_rounds: Optional[int] = None) -> None:
    title, description = SET_DESCRIPTIONS[model_set]
    time_rounds_text = str(time_rounds) if time_rounds is not None else "4"  # acprof rewrite's default
    ran = [r for r in records if r["status"] != "skipped"]
    broken = [r for r in ran if r["status"] != "ok"]
    skipped = [r for r in records if r["status"] == "skipped"]
    lines = [
        f"# {title}",
        "",
        f"Written by `scripts/zoo.sh{'' if model_set == 'zoo' else ' --set ' + model_set}` (scripts/zoo.py); "
        "do not edit by hand.",
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- machine: {machine_description()}; {jobs} model(s) at a time",
        f"- torch {versions['torch']}, torchvision {versions['torchvision']}"
        + (f", transformers {versions['transformers']}" if "transformers" in versions else ""),
        f"- acprof built {', '.join(sorted({r.get('acprof_built', '?') for r in records}))}",
        f"- selection: {selection}; {len(records)} model(s): {len(ran) - len(broken)} ok, {len(broken)} broke a rule, "
        f"{len(skipped)} skipped",
        "",
        f"{description} Budgets: 70 % of the profiled peak, and near the floor: the floor (the smallest peak "
        "`acprof plan` reaches) + 2 %, or halfway from the floor to the profiled peak where that is lower "
        "(a budget at or above the profiled peak would ask for no recompute and test nothing).",
        "",
        "- *removed at floor*: (profiled peak − floor) / (profiled peak − weights − gradients − optimizer state − "
        "inputs at the peak), the share of removable bytes the plan at the floor removes.",
        "- *budget · predicted · measured (error)*: the plan's budget and predicted peak, the peak of the "
        "rewritten model measured by `acprof rewrite`, and (predicted − measured) / measured.",
        "- *extra time predicted / measured*: the plan's extra time as a share of the profiled iteration, and "
        "the rewritten model's step time minus the original's as a share of the original's, the median over "
        "alternated pairs of steps in one process, ± the median's standard error (`acprof rewrite`'s `time:` "
        f"line: at least {time_rounds_text} pairs, more while under half a second in all, or while the standard error "
        "is over 2 % of the step and under 10 s in all).",
        "- *verified*: the rewrite's check that loss, gradients and buffers equal the original's "
        "(70 % / near the floor).",
        f"- rules: every command succeeds and the rewrite is bit for bit; measured peak ≤ budget; "
        f"|error| ≤ {PEAK_ERROR_LIMIT:.0%}; the plan near the floor recomputes something wherever the floor is below "
        "the profiled peak. A 70 % budget below the floor is not a broken rule.",
        "",
        "| model | mode | input | profiled peak | floor | removed at floor | 70 %: budget · predicted · measured "
        "(error) | 70 %: extra time predicted / measured | near the floor: budget · predicted · measured (error) | "
        "near the floor: extra time predicted / measured | verified | result |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    lines += [table_row(r) for r in ran]

    failures = [line for r in ran for line in failure_lines(r)]
    lines += ["", "## Failures", ""] + (failures or ["None."])

    timed = [(r["id"], o["label"], shares, o) for r in ran for o in r["budgets"].values()
             if "verification" in o and (shares := time_shares(o)) is not None]
    off = [entry for entry in timed if abs(entry[2][0] - entry[2][1]) > TIME_ERROR_GOAL]
    lines += ["", f"## Extra time off by more than {TIME_ERROR_GOAL:.0%} of the step", "",
              f"{len(timed) - len(off)} of {len(timed)} verified rewrites predict their extra time within "
              f"{TIME_ERROR_GOAL:.0%} of the step; the others:", ""]
    lines += [f"- `{i}` at {label}: predicted {format_percent(p, True)}, measured {format_percent(m, True)}"
              + measured_error_suffix(o) for i, label, (p, m), o in off] or ["None."]

    low = [r for r in ran if r.get("removed_share") is not None and r["removed_share"] < REMOVABLE_SHARE_GOAL]
    lines += ["", f"## Removed at the floor below {REMOVABLE_SHARE_GOAL:.0%}", ""]
    if low:
        lines += ["Each with the op at the floor's peak and what is live there, and what the exhaustive search "
                  "(`acprof plan --solver optimal`) says: whether any set of legal segments peaks lower, and how "
                  "much of the removable bytes any plan at all could remove.", ""]
    lines += [f"- `{r['id']}`: {format_percent(r['removed_share'])} of {format_bytes(r['removable_bytes'])} removable "
              f"(peak {format_bytes(r['profile']['peak_bytes'])}, floor {format_bytes(r['floor_bytes'])})"
              + (f". {reason[0].upper()}{reason[1:]}" if (reason := floor_peak_reason(results, r)) else "")
              + exact_search_text(r) for r in low] or ["None."]

    lines += ["", "## Skipped", ""]
    lines += [f"- `{r['id']}`: {r['reason']}" for r in skipped] or ["None."]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------- the zoo


def find_acprof(requested: Optional[str]) -> str:
    """--acprof, else build/cli/acprof, else any executable named acprof under build/."""
    if requested:
        return os.path.abspath(requested)
    default = os.path.join(REPO, "build", "cli", "acprof")
    if os.path.isfile(default):
        return default
    for directory, _, files in os.walk(os.path.join(REPO, "build")):
        candidate = os.path.join(directory, "acprof")
        if "acprof" in files and os.access(candidate, os.X_OK):
            return candidate
    return default  # not built yet: run_acprof waits for it


def list_models(model_set: str) -> Dict:
    result = subprocess.run([PYTHON, EXPORTER, "--list", "--set", model_set], capture_output=True, text=True,
                            check=True)
    return json.loads(result.stdout)


def select_models(catalogue: Dict, only: Optional[str], limit: Optional[int]) -> List[Tuple[str, str, str]]:
    """(id, name, mode) of the selected models, each name traced then scripted, or in the
    modes the catalogue names for it."""
    modes = catalogue.get("modes", {})
    selected = [(f"{name}_{mode}", name, mode) for name in catalogue["models"] for mode in MODES
                if mode in modes.get(name, MODES)]
    if only:
        pattern = re.compile(only)
        selected = [entry for entry in selected if pattern.search(entry[0])]
    return selected[:limit] if limit is not None else selected


def parse_arguments(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="run the models whose id (name_traced, name_scripted) matches this regex")
    parser.add_argument("--limit", type=int, help="run at most N models (after --only)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="models run at a time (default nproc/2, at least 1)")
    parser.add_argument("--set", choices=("zoo", "tasks", "patterns", "transformers", "reference"), default="zoo",
                        help="torchvision's classification and nn.Transformer models (default), torchvision's models "
                             "for other tasks, models/patterns.py, Hugging Face transformers models, or acprof's "
                             "test-set reference models")
    parser.add_argument("--results",
                        help="results and work directories (default build/zoo, build/zoo-tasks, build/zoo-patterns, "
                             "build/zoo-transformers, build/zoo-reference)")
    parser.add_argument("--acprof", help="the acprof binary (default build/cli/acprof)")
    parser.add_argument("--docs", help="table to write (default docs/zoo.md, docs/zoo-tasks.md, docs/zoo-patterns.md, "
                                       "docs/zoo-transformers.md, docs/reference.md)")
    parser.add_argument("--force", action="store_true", help="run models that already have a result file again")
    parser.add_argument("--time-rounds", type=int,
                        help="acprof rewrite --time-rounds: least pairs of steps timed (default: acprof's own, 4, for "
                             "the zoo; 20 for --set reference, whose extra times are compared with the predictions)")
    parser.add_argument("--iters", type=int,
                        help="acprof profile --iters: most measured iterations (default: acprof's own, 5, of which two "
                             "run when their times agree); a test subset that checks peaks and gradients, not times, "
                             "may take 1")
    parser.add_argument("--exact-search-seconds", type=float, default=EXACT_SEARCH_SECONDS,
                        help="acprof plan --solver optimal --time-limit for floors below the removable-share goal "
                             f"(default {EXACT_SEARCH_SECONDS})")
    parser.add_argument("--max-step-seconds", type=float, default=60.0,
                        help="skip models whose training step takes longer on this CPU (default 60)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="limit of one command, seconds (default 3600)")
    parser.add_argument("--keep-models", action="store_true",
                        help="keep each run's exported and rewritten models (*.pt; deleted by default once the "
                             "model's result is written: they fill tens of GB over the whole zoo)")
    parser.add_argument("--no-run", action="store_true",
                        help="run nothing: write the docs from the result files there are, as they are")
    parser.add_argument("--no-skips", action="store_true",
                        help="a skipped model, or a selection of none, is a failure too (for a fixed test subset)")
    args = parser.parse_args(argv)
    args.jobs = max(1, args.jobs)
    reference = args.set == "reference"
    results_name, docs_name = {"zoo": ("zoo", "zoo.md"), "tasks": ("zoo-tasks", "zoo-tasks.md"),
                               "patterns": ("zoo-patterns", "zoo-patterns.md"),
                               "transformers": ("zoo-transformers", "zoo-transformers.md"),
                               "reference": ("zoo-reference", "reference.md")}[args.set]
    args.results = os.path.abspath(args.results or os.path.join(REPO, "build", results_name))
    args.docs = args.docs or os.path.join(REPO, "docs", docs_name)
    # The reference set is held to 10 % of the step: 20 pairs measure its median extra time to
    # 0.0-0.8 % of the step with host memory kept (five left it uncertain by about 10 % before).
    if args.time_rounds is None and reference:
        args.time_rounds = REFERENCE_TIME_ROUNDS
    args.acprof = find_acprof(args.acprof)
    return args


def describe(record: Dict) -> str:
    if record["status"] == "skipped":
        return f"skipped: {record['reason']}"
    if record["status"] == "ok":
        return "ok"
    return "broke: " + "; ".join(record["broken_rules"])


def main(argv: List[str]) -> int:
    options = parse_arguments(argv)
    os.makedirs(options.results, exist_ok=True)
    # Models that run side by side share the cores; without this each would start a thread per core.
    if options.jobs > 1 and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // options.jobs))

    catalogue = list_models(options.set)
    selected = select_models(catalogue, options.only, options.limit)
    not_run = []
    if options.no_run:
        not_run = [entry[0] for entry in selected if not os.path.exists(os.path.join(options.results, f"{entry[0]}.json"))]
        selected = [entry for entry in selected if entry[0] not in not_run]
    log(f"{len(selected)} model(s), {options.jobs} at a time, acprof {options.acprof}, results in {options.results}")

    records: Dict[str, Dict] = {}
    to_run = []
    for model_id, name, mode in selected:
        result_path = os.path.join(options.results, f"{model_id}.json")
        if os.path.exists(result_path) and not options.force:
            records[model_id] = read_json(result_path)
            if records[model_id]["status"] != "skipped":
                judge(records[model_id])  # by this zoo.py's rules
            older = records[model_id].get("acprof_built") != build_time(options.acprof)
            log(f"{model_id}: {describe(records[model_id])} (earlier run{' with another acprof build' if older else ''}; "
                f"--force runs it again)")
        else:
            to_run.append((model_id, name, mode))

    for model_id, record in records.items():
        if not options.no_run and complete_earlier_result(options, record):
            write_json_atomically(os.path.join(options.results, f"{model_id}.json"), record)

    with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
        # Threads suffice: the work happens in the exporter and acprof processes.
        futures = {pool.submit(run_and_record, options, *entry): entry[0] for entry in to_run}
        for done, future in enumerate(concurrent.futures.as_completed(futures), start=1):
            record = future.result()
            records[record["id"]] = record
            log(f"[{done}/{len(to_run)}] {record['id']}: {describe(record)} ({record.get('seconds', 0):.0f} s)")

    ordered = [records[model_id] for model_id, _, _ in selected]
    selection = f"--only {options.only!r}" if options.only else "all models"
    if options.limit is not None:
        selection += f", --limit {options.limit}"
    if not_run:
        # --no-run writes what earlier runs left: say which of the selection they never reached.
        selection += f" (not run, so not listed: {', '.join(not_run)})"
    write_docs(options.docs, ordered, catalogue, selection, options.jobs, options.results, options.set,
               options.time_rounds)
    broken = [r["id"] for r in ordered if r["status"] == "broken"]
    log(f"wrote {options.docs}; {len(broken)} of {len(ordered)} model(s) broke a rule" +
        (f": {', '.join(broken)}" if broken else ""))
    if options.no_skips:
        skipped = [r["id"] for r in ordered if r["status"] == "skipped"]
        if skipped or not ordered:
            log("--no-skips: " + (f"skipped {', '.join(skipped)}" if skipped else "the selection names no model"))
            return 1
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
