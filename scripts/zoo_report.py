"""Turns the zoo's result records into its Markdown docs (docs/zoo.md and the other sets' pages).

Kept apart from running the models so that the docs can be written again from the result files
alone (zoo.py --no-run), and their wording changed without touching how a model is run or judged.
"""

import datetime
import os
from typing import Dict, List, Optional

from zoo_run import FIXED_CATEGORIES, PEAK_ERROR_LIMIT, REMOVABLE_SHARE_GOAL, read_json, time_shares

TIME_ERROR_GOAL = 0.10     # |predicted - measured extra time| as a share of the step; listed, not a rule


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
    if inconclusive(outcome):
        return f"{format_percent(shares[0], True)} / inconclusive" + measured_error_suffix(outcome)
    return f"{format_percent(shares[0], True)} / {format_percent(shares[1], True)}" + measured_error_suffix(outcome)


def inconclusive(outcome: Dict) -> bool:
    """Whether `acprof rewrite` called the measured extra time inconclusive (its outcome's time.verdict)."""
    return outcome.get("measured_extra_verdict") == "inconclusive"


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
    fixed_now = sum(breakdown[c] for c in FIXED_CATEGORIES)
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
    "eager": ("Model zoo: eager modules, no TorchScript",
              "The zoo's models (torchvision's classifiers and the nn.Transformer stacks) and the transformers "
              "set's, built as in those sets (same builders, sizes, seeds, inputs and losses), as plain "
              "`nn.Module`s: `acprof profile --module` on a factory file, `acprof plan`, and the eager rewrite, "
              "which applies the plan in eager, verifies it bit for bit and times alternated pairs of steps as the "
              "TorchScript rewrite does."),
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

    measured = [(r["id"], o["label"], shares, o) for r in ran for o in r["budgets"].values()
                if "verification" in o and (shares := time_shares(o)) is not None]
    timed = [entry for entry in measured if not inconclusive(entry[3])]
    off = [entry for entry in timed if abs(entry[2][0] - entry[2][1]) > TIME_ERROR_GOAL]
    left_out = len(measured) - len(timed)
    lines += ["", f"## Extra time off by more than {TIME_ERROR_GOAL:.0%} of the step", "",
              f"{len(timed) - len(off)} of {len(timed)} verified rewrites predict their extra time within "
              f"{TIME_ERROR_GOAL:.0%} of the step"
              + (f" ({left_out} more measured an inconclusive extra time and are left out)" if left_out else "")
              + "; the others:", ""]
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
