"""FSDP2 on gloo ranks of this CPU: a steady-state training step's per-rank peak and time with no
checkpointing, with per-block non-reentrant checkpointing (checkpoint inside each block, then
shard, as torchtitan applies them), and with acprof.fit at 70 % of the uncheckpointed peak, at
per-block's peak and at acprof's own floor, measured side by side in one run (issue 62).

    PYTHONPATH=python python3 bench/fsdp2_checkpointing.py [--world-size 2] [--steps 6]

Each rank builds the same GPT-style decoder (models/gpt.py, seed 0), shards each block and the root
with fully_shard, trains with AdamW on its own batch, and measures its steps after the first (which
makes the optimizer's state) as acprof measures a step (recorder.measure_step: the parameters'
shards, the optimizer's state and the inputs alive at the start, then the profiler's CPU allocation
events), each setting with the collectives acprof gives an FSDP model (eager/sharded.py: gloo's
worker threads otherwise move the peak from step to step), the time the median wall time of a step.
The acprof rows are acprof.fit's result: its budget is per-block's largest measured peak, and, for
the floor, the smallest peak its ladder reaches (the InfeasibleBudget of a one-byte budget names
it). Each setting's gradients after the first step are compared, on every rank, with the
uncheckpointed run's: equal means bit for bit (torch.equal on each sharded gradient), and the script
exits 1 where a setting's are not. Ratios are against no checkpointing. The peak is given as the
largest and the least of the measured steps: checkpointed steps still differ from step to step on
gloo (docs/data-parallel.md).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, ".."), os.path.join(HERE, "..", "python")]

SETTINGS = ("no checkpointing", "per-block checkpoint (non-reentrant)", "acprof at 70 % of no checkpointing's peak",
            "acprof at per-block's peak", "acprof at its floor")


def build(setting: str, mesh):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
    from torch.distributed.fsdp import fully_shard

    from acprof.eager import sharded
    from models import gpt

    torch.manual_seed(0)
    model = gpt.Gpt(gpt.GptConfig(layers=4, width=128, heads=4, seq_len=128, vocab=256, dropout=0.0))
    if setting == SETTINGS[1]:
        for i, block in enumerate(model.blocks):
            model.blocks[i] = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    sharded.finish_collectives(model)
    return model


def rank_main(rank: int, world: int, init: str, steps: int, out: str) -> None:
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    import acprof
    from acprof.eager.recorder import measure_step, other_threads_by_time
    from acprof.eager.sharded import all_ranks_max
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (world,))
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(100 + rank)
    tokens = torch.randint(0, 256, (4, 128), generator=generator)

    def loss_fn(logits):
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())

    # Every setting built and stepped once first (the acprof rows fitted first, at per-block's
    # largest peak and at acprof's floor), then their steps alternated, so that none pays for the
    # machine's warm-up or a busy moment alone.
    runs, refused = {}, {}
    for setting in SETTINGS:
        model = build(setting, mesh)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        if setting in SETTINGS[2:]:
            if setting == SETTINGS[2]:
                budget = "70%"
            elif setting == SETTINGS[3]:
                budget = all_ranks_max(max(runs[SETTINGS[1]][2]))
            else:  # the floor the ladder names for a budget no rung reaches
                try:
                    acprof.fit(model, (tokens,), budget=1, loss_fn=loss_fn, optimizer=optimizer, verify=False)
                except acprof.InfeasibleBudget as e:
                    budget = e.floor_bytes
            try:
                acprof.fit(model, (tokens,), budget=budget, loss_fn=loss_fn, optimizer=optimizer)
            except acprof.InfeasibleBudget as e:  # a row of its own: what acprof reached instead
                refused[setting] = (budget, e.floor_bytes)
                continue
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(tokens)).backward()
        first_gradients = [p.grad.to_local().clone() for p in model.parameters()]
        optimizer.step()
        runs[setting] = (model, optimizer, [], [], first_gradients)
        if setting == SETTINGS[1]:  # per-block's peaks first: the acprof row's budget
            with other_threads_by_time():
                runs[setting][2].extend(measure_step(model, [tokens], loss_fn, optimizer=optimizer)["peak_bytes"]
                                        for _ in range(4))
    for _ in range(steps):
        for setting in runs:
            model, optimizer, peaks, times, _ = runs[setting]
            dist.barrier()
            started = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(tokens)).backward()
            optimizer.step()
            times.append(time.perf_counter() - started)
            dist.barrier()
            with other_threads_by_time():
                peaks.append(measure_step(model, [tokens], loss_fn, optimizer=optimizer)["peak_bytes"])
    results = {setting: (max(peaks), min(peaks), statistics.median(times), gradients)
               for setting, (_, _, peaks, times, gradients) in runs.items()}
    base = results[SETTINGS[0]]
    lines = []
    for setting in SETTINGS:
        if setting in refused:
            budget, reached = refused[setting]
            lines.append(f"{rank}\t{setting}: {budget} refused, its smallest rung peaked at {reached}\t\t\t\t\t\tnone")
            continue
        peak, least, seconds, gradients = results[setting]
        equal = all(torch.equal(a, b) for a, b in zip(gradients, base[3]))
        lines.append(f"{rank}\t{setting}\t{peak}\t{least}\t{seconds:.4f}\t{peak / base[0]:.3f}\t"
                     f"{seconds / base[2]:.3f}\t{'equal' if equal else 'differ'}")
    with open(os.path.join(out, f"rank{rank}.tsv"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    dist.destroy_process_group()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    with tempfile.TemporaryDirectory(prefix="acprof-fsdp2-") as work:
        init = "file://" + os.path.join(work, "rendezvous")
        mp.spawn(rank_main, args=(args.world_size, init, args.steps, work), nprocs=args.world_size, join=True)
        rows = [line.split("\t") for r in range(args.world_size)
                for line in open(os.path.join(work, f"rank{r}.tsv")).read().splitlines()]
    print(f"FSDP2, {args.world_size} gloo ranks, GPT-style decoder (4 blocks, 128 wide, 4 x 128 tokens a rank), "
          f"AdamW; {args.steps} measured steps a setting")
    print("| rank | setting | peak (B) | least peak of the steps (B) | step (s) | peak / none | time / none | gradients |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    # A comparison of peaks and times means something only between steps that compute the same.
    differ = [f"rank {row[0]} {row[1]}" for row in rows if row[-1] not in ("equal", "none")]
    if differ:
        print(f"gradients differ from no checkpointing's: {', '.join(differ)}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
