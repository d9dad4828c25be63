"""What is checked of a model and its inputs before acprof records a step, so that a mistake is
named as the caller's, in one line, before anything is captured: a shape or dtype the model
refuses, an output with no floating-point tensor to take a loss of, a loss function that returns
no loss, and a forward torch.export cannot capture. acprof.fit and the eager command
(command_line.py) share them, so both doors give the same error kind for the same mistake."""

import contextlib
import io
import logging
import sys
import warnings
from typing import Any, Sequence

import torch

from ..errors import BadInput, ModelFails
from .graph import EagerGraph
from .recorder import compute_loss, training_state_kept


def first_line(e: BaseException) -> str:
    """An exception's message as one line of at most 100 characters (an error line stays under 200)."""
    text = str(e).strip()
    return text.splitlines()[0][:100] if text else type(e).__name__


@contextlib.contextmanager
def torch_logs_quiet():
    """torch's own loggers say nothing while acprof runs the user's code (fake_tensor logs a whole
    traceback when an op refuses a shape under torch.export, symbolic_shapes the FX graph of a
    data-dependent branch); acprof's error says it in one line. Each of torch's loggers that exists
    is quieted (torch._logging gives some a level of their own, which the parent's does not
    override), and the parent for those made while it runs."""
    loggers = [logging.getLogger("torch")] + [logger for name, logger in logging.root.manager.loggerDict.items()
                                              if name.startswith("torch.") and isinstance(logger, logging.Logger)]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def check_step(model: torch.nn.Module, inputs: Sequence[torch.Tensor], loss: Any, target) -> None:
    """One forward in eager without grad, and the loss of its output: raises BadInput naming the
    caller's mistake. The model is left as it was."""
    name = type(model).__name__
    with training_state_kept(model), torch.no_grad():
        model.train()
        try:
            output = model(*inputs)
        except Exception as e:
            shapes = ", ".join(f"{str(x.dtype).replace('torch.', '')}{list(x.shape)}" for x in inputs)
            raise BadInput(f"{name} refuses inputs {shapes} ({type(e).__name__}: {first_line(e)}); pass inputs "
                           "its forward takes") from None
        leaves = [t for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]
        if not callable(loss) and not any(t.is_floating_point() for t in leaves):
            raise BadInput(f"{name}'s output ({type(output).__name__}) holds no floating-point tensor to take a "
                           "loss of; return the output tensors, or pass a loss function")
        try:
            compute_loss(output, loss, target)
        except ValueError as e:  # the loss rule's own refusal: a loss function that returns no loss
            raise BadInput(str(e)) from None


def capture(model: torch.nn.Module, inputs: Sequence[torch.Tensor]) -> EagerGraph:
    """The model's forward captured (EagerGraph); raises ModelFails where torch.export cannot.
    Where export fails, what it wrote on stderr (it prints the partial FX graph of a branch on a
    value, torch/export/_trace.py) and its warnings are dropped: the error names what export
    refused, in one line. Where it succeeds, what was written there is passed on."""
    written = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stderr(written):
        warnings.simplefilter("ignore")
        try:
            graph = EagerGraph(model, inputs)
        except Exception as e:
            refused = _capture_refused(model, e)
        else:
            refused = None
    if refused is not None:
        raise refused
    sys.stderr.write(written.getvalue())
    return graph


def _capture_refused(model: torch.nn.Module, e: Exception) -> ModelFails:
    data_dependent = "DataDependent" in type(e).__name__ or "data-dependent" in str(e)
    if data_dependent:
        return ModelFails(f"torch.export cannot capture {type(model).__name__}'s forward ({type(e).__name__}): it "
                          "cannot follow a Python branch on a tensor's value; use torch.where, or torch.jit.script")
    return ModelFails(f"torch.export cannot capture {type(model).__name__}'s forward ({type(e).__name__}: "
                      f"{first_line(e)}); the eager front end captures it with torch.export.export(strict=False)")
