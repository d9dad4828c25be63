"""Trains a model rewritten by `acprof rewrite` in an ordinary Python training loop and shows
that it trains exactly like the original.

    pip install ./python            # the acprof package: acprof.load
    python3 examples/train_rewritten.py --original model.pt --rewritten model.ckpt.pt [--steps 5] [--foreach]

The file opens with the loop the README shows, verbatim (a test checks that): load the
rewritten model with acprof.load and train it with torch.optim.AdamW and a StepLR schedule.
The rest is the check CTest runs (tests/examples.cmake): both models start from the same
weights (the rewrite keeps them) and train --steps steps on the same inputs and dropout masks
at every step (inputs from the specs stored in the archive, models/training_step.py, drawn
from seed `step`). The losses must be equal step for step and the final parameters and buffers
equal, bit for bit on the CPU. Then the rewritten model's run is checkpointed halfway
(state_dict of the module, of the optimizer and of the scheduler, torch.save), reloaded into a
fresh acprof.load of the rewritten model with a fresh optimizer and scheduler, and continued:
its losses and final state must equal the uninterrupted run's.

Prints one summary line; on any mismatch exits 1 with a one-line reason.
"""

import torch

import acprof  # pip install ./python


def make_optimizer(model, foreach=None):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=foreach)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    return optimizer, scheduler


def train(model, optimizer, scheduler, batch, loss_of, steps):
    """The loop you already have. batch(step) gives the forward's inputs (a tuple) and the
    target; loss_of(output, target) the loss. Returns the loss of every step."""
    model.train()
    losses = []
    for step in steps:
        inputs, target = batch(step)
        optimizer.zero_grad(set_to_none=True)
        torch.manual_seed(step)  # only so that two models draw the same dropout masks
        loss = loss_of(model(*inputs), target)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.detach())
    return losses


# ---------------------------------------------------------------- the check CTest runs

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

# The input specs and the loss are read the way acprof reads them (models/training_step.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from models.training_step import compute_loss, load_with_specs, make_step_tensors  # noqa: E402


def fail(reason):
    raise SystemExit(f"train_rewritten: {reason}")


def compare_losses(expected, actual, what, first_step=0):
    for step, (a, b) in enumerate(zip(expected, actual), start=first_step):
        # torch.equal: exact equality, no tolerance.
        if not torch.equal(a, b):
            fail(f"{what}: loss differs at step {step}: {a.item()!r} vs {b.item()!r}")


def compare_states(expected, actual, what):
    """Parameters and buffers (state_dict) must be equal, name for name and bit for bit."""
    expected, actual = expected.state_dict(), actual.state_dict()
    if list(expected) != list(actual):
        fail(f"{what}: the models' state_dict names differ")
    for name, tensor in expected.items():
        if not torch.equal(tensor, actual[name]):
            fail(f"{what}: {name} differs")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--original", required=True, help="the model given to acprof profile")
    parser.add_argument("--rewritten", required=True, help="the model written by acprof rewrite")
    parser.add_argument("--steps", type=int, default=5, help="training steps (at least 2; default 5)")
    # foreach=None is torch's default: the for-loop implementation on the CPU, the multi-tensor
    # ("foreach") one on CUDA; --foreach forces the latter.
    parser.add_argument("--foreach", action="store_true",
                        help="AdamW(foreach=True) instead of torch's default implementation")
    args = parser.parse_args()
    if args.steps < 2:
        fail("--steps must be at least 2 (the checkpoint is taken halfway)")
    foreach = True if args.foreach else None

    # acprof.load loads the op library and sets the modes; the original is loaded after it, so
    # both train in the same process-wide modes.
    rewritten = acprof.load(args.rewritten)
    original, stored = load_with_specs(args.original)
    if "acprof::checkpoint" not in str(rewritten.graph):
        fail(f"{args.rewritten} calls no acprof::checkpoint; pass the output of acprof rewrite")
    if not stored.inputs:
        fail(f"{args.original} stores no input specs (acprof_inputs); export it with python3 models export (from the acprof repository)")
    if stored.autocast:
        fail(f"{args.original} trains under autocast ({stored.autocast}), which this loop does not set up")
    compare_states(original, rewritten, "initial state")

    def batch(step):
        # Same inputs and target for both models at a step.
        inputs, target = make_step_tensors(stored, seed=step)
        return tuple(inputs), target

    def loss_of(output, target):
        return compute_loss(output, stored.loss, target)

    # The original, for args.steps steps.
    optimizer, scheduler = make_optimizer(original, foreach)
    original_losses = train(original, optimizer, scheduler, batch, loss_of, range(args.steps))

    # The rewritten model, the same steps, with a checkpoint saved halfway (saving changes
    # nothing: this is the uninterrupted run).
    half = args.steps // 2
    optimizer, scheduler = make_optimizer(rewritten, foreach)
    rewritten_losses = train(rewritten, optimizer, scheduler, batch, loss_of, range(half))
    with tempfile.TemporaryDirectory() as directory:
        checkpoint_path = os.path.join(directory, "checkpoint.pt")
        torch.save({"model": rewritten.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "step": half}, checkpoint_path)
        rewritten_losses += train(rewritten, optimizer, scheduler, batch, loss_of, range(half, args.steps))
        compare_losses(original_losses, rewritten_losses, "rewritten vs original")
        compare_states(original, rewritten, "final state, rewritten vs original")

        # Resume: a fresh process would do exactly this.
        checkpoint = torch.load(checkpoint_path)
    resumed = acprof.load(args.rewritten)
    resumed.load_state_dict(checkpoint["model"])
    # The optimizer is built over the fresh module's parameters, then given its saved state.
    resumed_optimizer, resumed_scheduler = make_optimizer(resumed, foreach)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed_scheduler.load_state_dict(checkpoint["scheduler"])
    resumed_losses = train(resumed, resumed_optimizer, resumed_scheduler, batch, loss_of,
                           range(checkpoint["step"], args.steps))
    compare_losses(rewritten_losses[half:], resumed_losses, "resumed vs uninterrupted", first_step=half)
    compare_states(rewritten, resumed, "final state, resumed vs uninterrupted")

    implementation = "foreach" if args.foreach else "default"
    print(f"train_rewritten: {args.steps} AdamW ({implementation}) + StepLR steps, losses "
          f"{original_losses[0].item():.4f} -> {original_losses[-1].item():.4f} equal bit for bit "
          f"and {len(original.state_dict())} parameters/buffers equal; resumed from the step-{half} "
          f"checkpoint, {len(resumed_losses)} losses and the final state equal the uninterrupted run")


if __name__ == "__main__":
    main()
