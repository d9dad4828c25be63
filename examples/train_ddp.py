"""Trains a model rewritten by `acprof rewrite` under DistributedDataParallel and shows that its
all-reduced gradients equal the original model's under DDP, bit for bit.

    python3 examples/train_ddp.py --ops build/rewriter/libacprof_ops.so \
        --original model.pt --rewritten model.ckpt.pt [--steps 3] [--find-unused-parameters]

Two ranks, gloo backend, on the CPU, spawned with torch.multiprocessing and meeting through a
file in a temporary directory (no network port). Each rank draws its own inputs at every step
(seed 1000 * step + rank + 1) from the specs stored in the archive (models/training_step.py).
On every rank, the original and then the rewritten model, each wrapped in DDP, train --steps
steps with AdamW; after every backward each parameter's all-reduced gradient must be equal in
the two models, and the same on both ranks; at the end the parameters and buffers must be
equal. Prints one summary line; exits 1 with a one-line reason on a mismatch, or when the ranks
have not finished within --timeout seconds; on an error in a rank, its traceback, then one line.

What a user must do to train a rewritten (TorchScript) model under DDP, as this script does:
- Load the op library in every process, before torch.jit.load:
  torch.ops.load_library(".../libacprof_ops.so"). A rank started by torch.multiprocessing.spawn
  or by torchrun is a new interpreter: it inherits nothing loaded in the parent.
- Wrap the loaded ScriptModule as it is: DistributedDataParallel(torch.jit.load(path)). DDP
  takes a ScriptModule like any nn.Module (parameters, buffers, forward); do not torch.jit.script
  the DDP wrapper. The rewrite keeps parameter names and order, so the buckets, an optimizer's
  state_dict and a state_dict saved from the original model all fit the rewritten one.
- find_unused_parameters: leave it False (the default) when every parameter gets a gradient,
  as in the original model; the checkpoint changes nothing there. True works as well (the
  checkpoint takes the parameters it uses as inputs, so DDP's graph walk from the outputs
  finds them; --find-unused-parameters tests it), but costs a graph traversal per step.
- Executor mode: call torch._C._set_graph_executor_optimize(False) in every process before the
  first forward: the mode acprof profiles in by default, the one its memory plan holds in (with
  it on, the gradients here are still equal, but the memory is not what the plan predicted).
  Models exported with an autocast also need torch._C._jit_set_autocast_mode(False).
- With gloo, a model with bool buffers (a causal mask) needs them on DDP's ignore list:
  gloo cannot broadcast bools and DDP broadcasts every buffer (see train_under_ddp). This holds
  for the original model as much as for the rewritten one.
- Nothing else changes: gradients are all-reduced in buckets during backward as for any model.
  Tried by hand with the same result: static_graph=True, gradient_as_bucket_view=True,
  broadcast_buffers=False.
On GPUs the script would take the "nccl" backend and one device per rank
(DistributedDataParallel(model.to(rank), device_ids=[rank])); that form is not tested here.
"""

import argparse
import datetime
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

# The input specs and the loss are read the way acprof reads them (models/training_step.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from models.training_step import autocast_context, compute_loss, load_with_specs, make_step_tensors  # noqa: E402

WORLD_SIZE = 2


def train_under_ddp(path, stored, rank, args):
    """The DDP training loop a user writes. Returns every step's local loss and all-reduced
    gradients (name -> tensor), and the model."""
    model = torch.jit.load(path)
    model.train()
    # Gloo cannot broadcast bool tensors ("RuntimeError: Invalid scalar type"), and DDP broadcasts
    # every buffer from rank 0 when it is built (and before each forward, broadcast_buffers=True).
    # Bool buffers such as a causal mask are constants, the same on every rank: DDP may skip them.
    # This is gloo's limit, the original model needs it as well; NCCL broadcasts bools.
    bool_buffers = [name for name, buffer in model.named_buffers() if buffer.dtype == torch.bool]
    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, bool_buffers)
    ddp_model = DistributedDataParallel(model, find_unused_parameters=args.find_unused_parameters)
    optimizer = torch.optim.AdamW(ddp_model.parameters(), lr=1e-3)
    steps = []
    for step in range(args.steps):
        optimizer.zero_grad(set_to_none=True)
        # Every rank its own batch; the same one for both models at a step and rank, and the
        # same dropout masks (the checkpoint's recompute restores the forward's RNG state).
        seed = 1000 * step + rank + 1
        inputs, target = make_step_tensors(stored, seed=seed)
        torch.manual_seed(seed)
        with autocast_context(stored.autocast):
            loss = compute_loss(ddp_model(*inputs), stored.loss, target)
        loss.backward()  # DDP averages the gradients over the ranks during backward
        steps.append((loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters()}))
        optimizer.step()
    return steps, model


def compare(rank, original_steps, rewritten_steps, original, rewritten):
    """One line per difference between the two models' steps and final states, and between the ranks."""
    problems = []
    for step, ((original_loss, original_grads), (loss, grads)) in enumerate(zip(original_steps, rewritten_steps)):
        if not torch.equal(original_loss, loss):
            problems.append(f"rank {rank} step {step}: loss {loss.item()!r} differs from the original's "
                            f"{original_loss.item()!r}")
        if list(original_grads) != list(grads):
            problems.append(f"rank {rank} step {step}: the models' parameter names differ")
            continue
        for name, gradient in original_grads.items():
            # torch.equal: exact equality, no tolerance.
            if not torch.equal(gradient, grads[name]):
                problems.append(f"rank {rank} step {step}: all-reduced gradient of {name} differs from the original's")
        # All-reduced gradients are the same on every rank: gather this rank's, all of them in one vector.
        flat = torch.cat([g.reshape(-1) for g in grads.values()])
        gathered = [torch.empty_like(flat) for _ in range(WORLD_SIZE)]
        dist.all_gather(gathered, flat)
        if not all(torch.equal(flat, other) for other in gathered):
            problems.append(f"rank {rank} step {step}: the all-reduced gradients differ between the ranks")
    # After the last optimizer step: parameters, and buffers such as batch-norm running statistics.
    original_state, state = original.state_dict(), rewritten.state_dict()
    if list(original_state) != list(state):
        problems.append(f"rank {rank}: the models' state_dict names differ")
    else:
        problems += [f"rank {rank}: final {name} differs from the original's"
                     for name, tensor in original_state.items() if not torch.equal(tensor, state[name])]
    return problems


def worker(rank, args, init_method, results):
    # Two ranks share the machine's cores; one thread each keeps them from oversubscribing it.
    torch.set_num_threads(1)
    # A spawned process starts from scratch: the op library, then the executor mode, in each.
    torch.ops.load_library(args.ops)
    torch._C._set_graph_executor_optimize(False)
    torch._C._jit_set_autocast_mode(False)
    # The timeout bounds every collective, so a rank whose peer died fails instead of waiting.
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=WORLD_SIZE,
                            timeout=datetime.timedelta(seconds=args.timeout))
    try:
        _, stored = load_with_specs(args.original)
        original_steps, original = train_under_ddp(args.original, stored, rank, args)
        rewritten_steps, rewritten = train_under_ddp(args.rewritten, stored, rank, args)
        problems = compare(rank, original_steps, rewritten_steps, original, rewritten)
        results.put((rank, problems, len(original_steps[0][1])))
        # Both ranks are done with the group before either tears it down: a rank that destroyed it
        # while its peer still closed its last collective's connection aborted that peer in gloo's
        # thread ("terminate called without an active exception", example_train_ddp_cnn, once in
        # a clean-clone CI run).
        dist.barrier()
    finally:
        dist.destroy_process_group()


def fail(reason):
    raise SystemExit(f"train_ddp: {reason}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", required=True, help="path of libacprof_ops.so")
    parser.add_argument("--original", required=True, help="the model given to acprof profile")
    parser.add_argument("--rewritten", required=True, help="the model written by acprof rewrite")
    parser.add_argument("--steps", type=int, default=3,
                        help="training steps (default 3; DDP's reducer checks its state from the second on)")
    parser.add_argument("--find-unused-parameters", action="store_true",
                        help="DistributedDataParallel(find_unused_parameters=True)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds the ranks may take (default 60)")
    args = parser.parse_args()
    if args.steps < 1:
        fail("--steps must be at least 1")

    torch.ops.load_library(args.ops)
    if "acprof::checkpoint" not in str(torch.jit.load(args.rewritten).graph):
        fail(f"{args.rewritten} calls no acprof::checkpoint; pass the output of acprof rewrite")

    # Gloo connects the ranks over TCP; keep it on the loopback interface.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    with tempfile.TemporaryDirectory() as directory:
        # The ranks meet through a file (torch.distributed's FileStore): no port to pick.
        init_method = "file://" + os.path.join(directory, "rendezvous")
        deadline = time.monotonic() + args.timeout
        processes = mp.spawn(worker, args=(args, init_method, results), nprocs=WORLD_SIZE, join=False)
        try:
            # join() returns False while some rank still runs, and raises when one failed
            # (after terminating the others).
            while not processes.join(timeout=max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    for process in processes.processes:
                        process.kill()
                        process.join()
                    fail(f"the ranks did not finish within {args.timeout:g} s; killed them")
        except mp.ProcessRaisedException as error:
            # An error, not a mismatch: the rank's traceback first (for the log), then one line.
            print(str(error).strip(), file=sys.stderr)
            fail(f"rank {error.error_index} failed: {str(error).strip().splitlines()[-1]}")
        except mp.ProcessExitedException as error:
            fail(str(error))

    outcomes = sorted(results.get() for _ in range(WORLD_SIZE))
    problems = [problem for _, rank_problems, _ in outcomes for problem in rank_problems]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        fail(problems[0] + more)
    print(f"train_ddp: {WORLD_SIZE} ranks (gloo, CPU), {args.steps} steps, find_unused_parameters="
          f"{args.find_unused_parameters}: the all-reduced gradients of all {outcomes[0][2]} parameters "
          f"equal the original model's bit for bit on every rank and step, and agree across ranks; "
          f"so do the final parameters and buffers")


if __name__ == "__main__":
    main()
