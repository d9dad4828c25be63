"""acprof.fit of a model sharded by FSDP2 (fully_shard on each block, then the root) on gloo ranks
of this CPU: a GPT-style decoder (models/gpt.py) and a Hugging Face Llama built from a config, AdamW
in the step, each rank on its own batch. On every rank the fitted step's measured peak is within the
prediction (the ladder's measurement and its reserve), the prediction within the per-rank budget,
and both below the model's own sharded step, every rank runs the same plan, and the user's own
loop trains like the same FSDP2 setup without acprof bit for bit: sharded gradients and stepped
parameters, step after step. The model's own sharded step, with the collectives acprof
gives it, peaks at one number step after step. Not asserted, because it does not hold yet: that the
checkpointed step's peak equals the prediction to the byte (it moves by whole multiples of one
unit's gathered parameters between steps, which the reserve covers: docs/data-parallel.md). Ranks
meet through a file.
"""

import json
import os
import sys
import tempfile

import pytest

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "python"), os.path.join(HERE, "..", ".."), HERE]

STEPS = 2


def gpt_decoder():
    from models import gpt
    torch.manual_seed(0)
    model = gpt.Gpt(gpt.GptConfig(layers=4, width=128, heads=4, seq_len=128, vocab=256, dropout=0.0))
    return model, model.blocks, lambda g: torch.randint(0, 256, (4, 128), generator=g), 256


def llama():
    from models import hugging_face
    model = hugging_face.small_llama()  # called with its token ids, returning the logits
    layers = next(m for name, m in model.named_modules() if name.endswith(".layers"))
    return (model, layers,
            lambda g: torch.randint(0, hugging_face.SMALL_LLAMA_VOCAB, hugging_face.SMALL_LLAMA_TOKENS, generator=g), hugging_face.SMALL_LLAMA_VOCAB)


MODELS = {"gpt_decoder": gpt_decoder, "llama": llama}


def sharded(name, mesh):
    from torch.distributed.fsdp import fully_shard
    model, blocks, batch, vocab = MODELS[name]()
    for block in blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, batch, vocab


def rank_main(rank, world, rendezvous, name, budget, out):
    import acprof
    from torch.distributed.device_mesh import init_device_mesh
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world)
    torch.set_num_threads(1)
    mesh = init_device_mesh("cpu", (world,))
    fitted_model, batch, vocab = sharded(name, mesh)
    reference, _, _ = sharded(name, mesh)
    ids = batch(torch.Generator().manual_seed(100 + rank))  # each rank its own batch
    loss_fn = lambda logits: torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), ids.reshape(-1))
    optimizer = torch.optim.AdamW(fitted_model.parameters(), lr=1e-3)
    reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-3)
    result = acprof.fit(fitted_model, (ids,), budget=budget, loss_fn=loss_fn, optimizer=optimizer)
    # The model's own sharded step (the plan taken out), measured three times: one number.
    from acprof.eager.recorder import measure_step, other_threads_by_time
    result.remove()
    with other_threads_by_time():
        own_peaks = [measure_step(fitted_model, [ids], loss_fn, optimizer=optimizer)["peak_bytes"] for _ in range(3)]
    result = acprof.fit(fitted_model, (ids,), budget=budget, loss_fn=loss_fn, optimizer=optimizer)
    # The user's loop on both, from the same state: the reference is the same FSDP2 setup, with
    # FSDP's own collectives and no acprof.
    differences = []
    for step in range(STEPS):
        for model, opt in ((fitted_model, optimizer), (reference, reference_optimizer)):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(ids)).backward()
        for (n, p), (_, q) in zip(fitted_model.named_parameters(), reference.named_parameters()):
            if not torch.equal(p.grad.to_local(), q.grad.to_local()):
                differences.append(f"step {step} gradient {n}")
        optimizer.step()
        reference_optimizer.step()
        for (n, p), (_, q) in zip(fitted_model.named_parameters(), reference.named_parameters()):
            if not torch.equal(p.detach().to_local(), q.detach().to_local()):
                differences.append(f"step {step} parameter {n}")
    record = {"peak": result.peak_bytes, "budget": result.budget_bytes, "predicted": result.predicted_peak_bytes,
              "measured": result.measured_peak_bytes, "rank_measured": result.verification["rank_measured_peak_bytes"],
              "rung": result.plan["rung"], "segments": result.plan["segments"], "differences": differences,
              "units": [(u["name"], u["reshard_after_forward"]) for u in result.plan["units"]],
              "recomputed": result.verification["ops_recomputed"], "own_peaks": own_peaks,
              "ladder": result.verification["rungs_tried_and_predictions"], "planned_as": result.plan["planned_as"],
              "original_measured": result.verification["original_measured_peak_bytes"]}
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(record, f)
    dist.destroy_process_group()


def run_ranks(name, world, budget):
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    with tempfile.TemporaryDirectory() as work:
        mp.spawn(rank_main, args=(world, os.path.join(work, "rendezvous"), name, budget, work), nprocs=world)
        return [json.load(open(os.path.join(work, f"rank{r}.json"))) for r in range(world)]


# Each budget leaves room for a rung the planner made (a chain of the model's alike units), short
# of recomputing every unit whole.
@pytest.mark.parametrize("name,world,budget", [("gpt_decoder", 2, "70%"), ("llama", 2, "92%"), ("gpt_decoder", 4, "70%")])
def test_fsdp2_ranks_measure_their_prediction_and_train_bit_for_bit(name, world, budget):
    if name == "llama":
        pytest.importorskip("transformers")
    ranks = run_ranks(name, world, budget)
    print(json.dumps([{k: v for k, v in r.items() if k != "segments"} for r in ranks]))
    for rank, r in enumerate(ranks):
        assert r["differences"] == [], f"rank {rank}: {r['differences'][:3]}"
        assert r["measured"] <= r["predicted"] <= r["budget"], f"rank {rank}"
        assert r["rung"] > 0 and r["measured"] < r["peak"], f"rank {rank}: nothing is saved"
        assert len(set(r["own_peaks"])) == 1 and r["original_measured"] == r["peak"], f"rank {rank}: {r['own_peaks']}"
        assert sum(r["recomputed"].values()) > 0, f"rank {rank}: the policies recomputed no op"
        assert r["segments"] == ranks[0]["segments"], f"rank {rank} runs another plan"
        assert len(r["units"]) >= 2 and all(reshard for _, reshard in r["units"])
        assert r["planned_as"] == "chain of alike units", f"rank {rank}: {r['planned_as']}"
    # The largest rank's peak is the promise, the same number on every rank.
    assert max(r["rank_measured"] for r in ranks) == ranks[0]["measured"]
    assert len({r["measured"] for r in ranks}) == 1 and len({r["peak"] for r in ranks}) == 1


if __name__ == "__main__":
    print(json.dumps(run_ranks(sys.argv[1], int(sys.argv[2]), sys.argv[3]), indent=None)[:3000])
