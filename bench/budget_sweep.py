"""Is the peak monotone in the budget? A small Llama-style model (pytorch/pytorch#197838's kind:
Hugging Face LlamaForCausalLM from a config, grouped-query attention) swept over ten budgets by
three memory knobs, each step's peak and time measured the same way, in one run (issue 63).

    PYTHONPATH=python python3 bench/budget_sweep.py [--points 10] [--svg sweep.svg]

  - torch.compile (inductor) with torch._functorch.config.activation_memory_budget from 1.0 down
    to 0.0 in equal steps: a fraction of the saved activations' bytes, not a peak.
  - acprof.fit (eager, no compile) at budgets from the model's profiled peak down to its floor in
    equal steps, in bytes.
  - acprof.fit(compile=True), the plan inside the compiled step, at budgets from torch.compile's
    own peak (no activation_memory_budget) down to the smallest compiled peak acprof reaches (the
    smallest of its ladder's plans, compiled), in equal steps, in bytes; and at each activation_memory_budget
    point's measured peak, where its time is compared with that point's.
For each point: the measured peak of a training step (forward, loss, backward; the parameters,
inputs and what the step allocates, as acprof.fit measures: recorder.measure_step, after a warm-up
step, which compiles), its ratio to the engine's own baseline (compile at 1.0, eager without
acprof, compile without acprof), the median time of a step over STEPS_TIMED and its ratio to the
same baseline, and whether the peak is above one measured at a larger budget (monotone means
never). acprof's rows also say whether the measured peak is within the budget, and the eager rows
whether it equals the prediction. The script exits 1 if an acprof row exceeds its budget or is
above a larger budget's peak, an eager row misses its prediction, or acprof + compile refuses a
budget no smaller than the smallest compiled peak it reported: those are acprof's promises (the
compiled ones by compiled_fit.py's ladder). A rise under activation_memory_budget is printed, not an
error. With --svg it also draws the three sweeps
(peak against budget point) with matplotlib.
"""

import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(HERE, "..", "python")]

STEPS_TIMED = 9


def build():
    from models import hugging_face
    return hugging_face.small_llama()


def loss_of(tokens):
    return lambda logits: torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())


def measured(module, tokens) -> tuple:
    """(peak bytes, median step seconds) of `module`'s training step: the peak as acprof.fit
    measures it (after a warm-up step, which compiles), the time over STEPS_TIMED steps after it."""
    from acprof.eager.recorder import measure_step
    loss = loss_of(tokens)
    peak = measure_step(module, [tokens], loss)["peak_bytes"]
    seconds = []
    for _ in range(STEPS_TIMED):
        start = time.perf_counter()
        loss(module(tokens)).backward()
        seconds.append(time.perf_counter() - start)
        module.zero_grad(set_to_none=True)
    return peak, statistics.median(seconds)


def compile_sweep(tokens, points):
    import torch._functorch.config as functorch_config
    rows = []
    for i in range(points):
        budget = round(1.0 - i / (points - 1), 3)
        torch._dynamo.reset()
        previous = functorch_config.activation_memory_budget
        functorch_config.activation_memory_budget = budget
        try:  # the warm-up step compiles, under this budget
            rows.append((budget,) + measured(torch.compile(build()), tokens))
        finally:
            functorch_config.activation_memory_budget = previous
    return rows


def acprof_sweep(tokens, points):
    import acprof
    loss = loss_of(tokens)
    estimate = acprof.estimate(build(), tokens, loss_fn=loss)
    peak, floor = estimate.peak_bytes, estimate.floor_bytes
    model = build()
    own_seconds = measured(model, tokens)[1]
    rows = []
    for i in range(points):
        budget = int(peak - (peak - floor) * i / (points - 1))
        model = build()
        fitted = acprof.fit(model, tokens, budget=budget, loss_fn=loss)
        rows.append((budget, fitted.measured_peak_bytes, fitted.predicted_peak_bytes, fitted.segments,
                     measured(model, tokens)[1]))
    return peak, own_seconds, rows


def fit_compiled(budget, tokens):
    """acprof.fit(compile=True) at `budget`: (its measured peak, step seconds, the eager plans it
    tried), or None where no plan's compiled step fits."""
    import acprof
    try:
        fitted = acprof.fit(build(), tokens, budget=budget, loss_fn=loss_of(tokens), compile=True)
    except acprof.InfeasibleBudget:
        return None
    return (fitted.measured_peak_bytes, measured(fitted.module, tokens)[1],
            fitted.verification["eager_plan_budgets_and_compiled_peaks"])


def acprof_compiled_floor(tokens) -> int:
    """The smallest compiled peak acprof reaches: the smallest of its ladder's plans compiled, which
    fit names when asked for a budget no plan meets (one byte)."""
    import acprof
    try:
        acprof.fit(build(), tokens, budget=1, loss_fn=loss_of(tokens), compile=True)
    except acprof.InfeasibleBudget as e:
        return e.floor_bytes
    raise AssertionError("acprof.fit(compile=True) met a budget of one byte")


def monotone_marks(peaks):
    """For each peak in order of falling budget: whether it is above a peak at a larger budget."""
    lowest, marks = None, []
    for peak in peaks:
        marks.append(lowest is not None and peak > lowest)
        lowest = peak if lowest is None else min(lowest, peak)
    return marks


def yes(flag: bool, bad_when: bool) -> str:
    text = "yes" if flag else "no"
    return f"**{text}**" if flag == bad_when else text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10)
    parser.add_argument("--svg", help="also draw the three sweeps into this SVG file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from models import hugging_face
    tokens = torch.randint(0, hugging_face.SMALL_LLAMA_VOCAB, hugging_face.SMALL_LLAMA_TOKENS,
                           generator=torch.Generator().manual_seed(1))
    problems = []

    compiled = compile_sweep(tokens, args.points)
    _, base, base_seconds = compiled[0]
    print("torch.compile (inductor), activation_memory_budget")
    print("| budget | measured peak | peak / budget 1.0 | time / budget 1.0 | above a larger budget's peak |")
    print("|---|---|---|---|---|")
    for (budget, peak, seconds), rose in zip(compiled, monotone_marks([r[1] for r in compiled])):
        print(f"| {budget:.3f} | {peak:,} B | {peak / base:.3f} | {seconds / base_seconds:.2f} | {yes(rose, True)} |")

    eager_peak, eager_seconds, fitted = acprof_sweep(tokens, args.points)
    print(f"\nacprof.fit (eager), budgets from the profiled peak ({eager_peak:,} B) to the floor")
    print("| budget | predicted | measured peak | peak / eager | time / eager | within budget | "
          "above a larger budget's peak | segments |")
    print("|---|---|---|---|---|---|---|---|")
    for (budget, measured_peak, predicted, segments, seconds), rose in zip(
            fitted, monotone_marks([r[1] for r in fitted])):
        within = measured_peak <= budget
        print(f"| {budget:,} B | {predicted:,} B | {measured_peak:,} B | {measured_peak / eager_peak:.3f} | "
              f"{seconds / eager_seconds:.2f} | {yes(within, False)} | {yes(rose, True)} | {segments} |")
        if rose or not within or measured_peak != predicted:
            problems.append(f"acprof at {budget} B: measured {measured_peak} B, predicted {predicted} B"
                            f"{', above a larger budget' + chr(39) + 's peak' if rose else ''}")

    floor = acprof_compiled_floor(tokens)
    print(f"\nacprof.fit(compile=True), budgets from torch.compile's own peak ({base:,} B) to the smallest "
          f"compiled peak acprof reaches ({floor:,} B)")
    print("| budget | measured peak | peak / compile | time / compile | within budget | "
          "above a larger budget's peak | eager plans tried (budget: compiled peak) |")
    print("|---|---|---|---|---|---|---|")
    budgets = [int(base - (base - floor) * i / (args.points - 1)) for i in range(args.points)]
    swept = [(b, fit_compiled(b, tokens)) for b in budgets]
    for (budget, result), rose in zip(swept, monotone_marks([r[0] if r else 0 for _, r in swept])):
        rose = rose and result is not None
        if result is None:  # the ladder is the same in every fit: its floor fits
            print(f"| {budget:,} B | **refused** | | | | | |")
            problems.append(f"acprof + compile refused {budget} B, above its own compiled floor {floor} B")
            continue
        peak, seconds, tried = result
        within = peak <= budget
        plans = ", ".join(f"{b:,}: {m:,}" for b, m in tried)
        print(f"| {budget:,} B | {peak:,} B | {peak / base:.3f} | {seconds / base_seconds:.2f} | {yes(within, False)} | "
              f"{yes(rose, True)} | {plans} |")
        if rose or not within:
            problems.append(f"acprof + compile at {budget} B: measured {peak} B"
                            f"{', above a larger budget' + chr(39) + 's peak' if rose else ''}")

    print("\nacprof.fit(compile=True) at each activation_memory_budget point's measured peak")
    print("| compile budget | its peak | acprof + compile peak | time / that point's | within |")
    print("|---|---|---|---|---|")
    for budget, peak, seconds in compiled:
        result = fit_compiled(peak, tokens)
        if result is None:
            print(f"| {budget:.3f} | {peak:,} B | below acprof's compiled floor ({floor:,} B) | | |")
            continue
        print(f"| {budget:.3f} | {peak:,} B | {result[0]:,} B | {result[1] / seconds:.2f} | "
              f"{yes(result[0] <= peak, False)} |")
        if result[0] > peak:
            problems.append(f"acprof + compile at compile {budget}'s peak {peak} B: measured {result[0]} B")
    if args.svg:
        write_svg(args.svg, compiled, fitted, swept)
    for line in problems:
        print(f"budget_sweep: {line}", file=sys.stderr)
    return 1 if problems else 0


def write_svg(path, compiled, fitted, swept) -> None:
    """The three sweeps as lines (matplotlib): measured peak (MB) against the budget point (0: the
    largest budget, the last: the smallest), one colour per engine; a refused point is left out."""
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    series = [("torch.compile, activation_memory_budget 1.0 to 0.0", "#d62728", [r[1] for r in compiled]),
              ("acprof.fit (eager), its peak to its floor", "#1f77b4", [r[1] for r in fitted]),
              ("acprof.fit(compile=True), compile's peak to its floor", "#2ca02c",
               [r[0] if r else None for _, r in swept])]
    figure, axes = plt.subplots(figsize=(7.2, 4.0))
    for label, colour, peaks in series:
        points = [(i, p / 1e6) for i, p in enumerate(peaks) if p is not None]
        axes.plot([i for i, _ in points], [p for _, p in points], marker="o", color=colour, label=label)
    axes.set_xlabel("budget point (0: the largest budget of each knob)")
    axes.set_ylabel("measured peak of a training step (MB)")
    axes.set_title("Hugging Face Llama (2 layers, GQA), 4 x 128 tokens, CPU")
    axes.grid(True, color="#dddddd")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, metadata={"Date": None})  # no timestamp: the same sweep draws the same file
    plt.close(figure)


if __name__ == "__main__":
    sys.exit(main())
