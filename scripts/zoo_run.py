"""Runs one model of the zoo through acprof and judges what came of it, for scripts/zoo.py.

Kept apart from the command line and the docs so that what a run does, and the rules a model is
held to, can be read in one place. Verdicts come from acprof's JSON (profiles, plans, --outcome
files) and exit codes, never from its prose, so rewording a message cannot change a result.
"""

import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = sys.executable  # the project venv's (scripts/zoo.sh), whose torch acprof is built on
EXPORTER = os.path.join(REPO, "scripts", "zoo_export.py")

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

# --set eager: the exporter writes a factory file, profiled with `acprof profile --module` and
# rewritten in eager (no model file, no timed pairs: the eager rewrite times nothing).
EAGER_MODE = "eager"
EAGER_FACTORY = "factory.py"


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
    """The one line that says why a command failed: acprof's `acprof: error: ...` (an infeasible
    budget's floor table follows it), else the last line of the output."""
    errors = [line.strip() for line in result.stderr.splitlines() if line.startswith("acprof: error: ")]
    line = errors[-1] if errors else last_line(result.stderr) or last_line(result.stdout)
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
               "--out", os.path.join(work_dir, EAGER_FACTORY if mode == EAGER_MODE else "model.pt"),
               "--max-step-seconds", str(options.max_step_seconds)]
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


# The categories no recompute removes: weights, their gradients, the optimizer's state and the inputs.
FIXED_CATEGORIES = ("weight", "gradient", "optimizer_state", "input")


def removable_bytes(facts: Dict) -> int:
    """Bytes at the profiled peak that recompute could remove in principle: all but FIXED_CATEGORIES."""
    b = facts["peak_breakdown"]
    return facts["peak_bytes"] - sum(b[c] for c in FIXED_CATEGORIES)


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
    result = run_acprof(options, ["plan", "profile.json", "--budget", "1B", "--solver", "optimal", "--time-limit",
                                  f"{seconds:g}", "-o", "exact_probe.json", "--outcome", "exact_probe.outcome.json"],
                        work_dir, "plan_exact_probe.log")
    step = "plan --solver optimal --budget 1B"
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


def budget_outcome(options, work_dir: str, tag: str, budget: str, mode: str) -> Dict:
    """run_budget's outcome, or the failure of its command."""
    try:
        return run_budget(options, work_dir, tag, budget, mode)
    except CommandFailed as failure:
        return {"label": BUDGET_LABELS[tag], "budget_text": budget, "failure": str(failure)}


def rewrite_arguments(options, tag: str, plan_path: str, mode: str) -> List[str]:
    """acprof rewrite of the plan, its report in the directory named by the tag."""
    report = ["--report-dir", tag, "--outcome", f"rewrite_{tag}.outcome.json"]
    if mode == EAGER_MODE:
        return ["rewrite", plan_path] + report  # the profile names the factory
    arguments = ["rewrite", "model.pt", plan_path, "-o", os.path.join(tag, "model.ckpt.pt")] + report
    if options.time_rounds is not None:
        arguments += ["--time-rounds", str(options.time_rounds)]
    return arguments


def run_budget(options, work_dir: str, tag: str, budget: str, mode: str) -> Dict:
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
    result = run_acprof(options, rewrite_arguments(options, tag, plan_path, mode), work_dir, f"rewrite_{tag}.log")
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
    if "verdict" in time:  # inconclusive: a limit ended the pairs before the standard error came within 2 %
        times["measured_extra_verdict"] = time["verdict"]
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
    if record["mode"] == EAGER_MODE:
        exported = record["export"]
        profile_args = ["profile", "--module", f"{EAGER_FACTORY}:make_model", "--loss", exported["loss"],
                        "-o", "profile.json"]
        for spec in exported["inputs"]:
            profile_args += ["--input", spec]
        if exported.get("target"):
            profile_args += ["--target", exported["target"]]
    else:
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
        record["budgets"][tag] = budget_outcome(options, work_dir, tag, budget, record["mode"])


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
    model_kept = os.path.exists(os.path.join(work_dir, EAGER_FACTORY if record["mode"] == EAGER_MODE else "model.pt"))
    if model_kept and near_floor.get("budget_bytes", 0) >= peak > record.get("floor_bytes", peak):
        budget = str(near_floor_budget(record["floor_bytes"], peak))
        log(f"{record['id']}: the earlier budget near the floor was at the profiled peak; planning at {budget} B")
        record["budgets"]["floor"] = budget_outcome(options, work_dir, "floor", budget, record["mode"])
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
