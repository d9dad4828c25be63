#!/usr/bin/env python3
"""acprof.fit on Hugging Face transformers models built from their configs, as a user calls it in a
training script: each model of the zoo's catalogue (scripts/zoo_export.py HF_MODELS: decoders with
and without grouped-query attention, a mixture of experts, encoders, an encoder-decoder, vision and
audio), fitted halfway between the floor acprof.estimate reports and the step's peak.

    scripts/fit_transformers.py [--models gpt2_lm_head llama_causal_lm ...] [--adamw gpt2_lm_head ...]
                                [--markdown docs/zoo-fit.md]

For each: the verdict (`ok`: verified bit for bit, measured = predicted within the budget; else the
error's kind and its one line), the step's peak, the floor, the budget, predicted and measured
peaks, segments and the seconds fit took. --adamw names the models whose step includes AdamW's.
Exits 1 if any model fitted but broke the promise (measured != predicted, or over the budget).
"""

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(REPO, "scripts"), os.path.join(REPO, "python")]

import torch  # noqa: E402

import acprof  # noqa: E402
from acprof.eager.recorder import compute_loss  # noqa: E402
import zoo_export  # noqa: E402  (it puts the repository on the path, for models/)
from models import specs  # noqa: E402

DEFAULT_ADAMW = ["gpt2_lm_head", "bert_masked_lm", "t5_conditional_generation"]


def fit_one(name: str, adamw: bool) -> dict:
    model, training = zoo_export.build_hugging_face(name)
    tensors = specs.make_tensors(training.inputs + ([training.target] if training.target else []))
    inputs, target = tensors[:len(training.inputs)], (tensors[-1] if training.target else None)
    loss_fn = lambda output: compute_loss(output, training.loss, target)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4) if adamw else None
    row = {"model": name, "optimizer": "adamw" if adamw else "none"}
    started = time.perf_counter()
    try:
        answer = acprof.estimate(model, inputs, loss_fn=loss_fn, optimizer=optimizer)
        row.update(peak=answer.peak_bytes, floor=answer.floor_bytes)
        budget = (answer.peak_bytes + answer.floor_bytes) // 2
        fitted = acprof.fit(model, inputs, budget=budget, loss_fn=loss_fn, optimizer=optimizer)
    except acprof.AcprofError as e:
        row.update(verdict=e.kind, message=str(e), seconds=time.perf_counter() - started)
        return row
    exact = fitted.measured_peak_bytes == fitted.predicted_peak_bytes <= budget
    row.update(budget=budget, predicted=fitted.predicted_peak_bytes, measured=fitted.measured_peak_bytes,
               segments=fitted.segments, verdict="ok" if exact else "broken",
               message=fitted.verification["mode"], seconds=time.perf_counter() - started)
    return row


def table(rows) -> str:
    lines = ["| model | optimizer | verdict | peak B | floor B | budget B | predicted B | measured B | segments | fit s |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = [r["model"], r["optimizer"], r["verdict"]] + [str(r.get(k, "")) for k in
                                                              ("peak", "floor", "budget", "predicted", "measured",
                                                               "segments")] + [f"{r['seconds']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    refused = [r for r in rows if r["verdict"] not in ("ok", "broken")]
    for r in refused:
        lines.append(f"\n{r['model']}: {r['message']}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=sorted(zoo_export.HF_MODELS))
    parser.add_argument("--adamw", nargs="*", default=DEFAULT_ADAMW)
    parser.add_argument("--markdown", default="", help="also write the table here")
    args = parser.parse_args()
    import transformers
    transformers.logging.set_verbosity_error()
    rows = []
    for name in args.models:
        rows.append(fit_one(name, name in args.adamw))
        r = rows[-1]
        print(f"{name}: {r['verdict']} ({r['seconds']:.1f} s) {r.get('measured', '')} {r.get('message', '')[:160]}",
              file=sys.stderr, flush=True)
    text = (f"acprof.fit on transformers {transformers.__version__} models built from configs "
            f"(torch {torch.__version__.split('+')[0]}, CPU, {torch.get_num_threads()} threads), "
            "budget halfway between the floor and the peak; scripts/fit_transformers.py.\n\n" + table(rows) + "\n")
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write("# acprof.fit on Hugging Face models\n\n" + text)
    return 1 if any(r["verdict"] == "broken" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
