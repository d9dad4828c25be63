"""What is checked of a model and its inputs when acprof records its forward, so that a mistake is
named as the caller's, in one line, before anything is profiled: a shape or dtype the model
refuses, an output with no floating-point tensor to take a loss of, a loss function that returns
no loss, a forward that fails in PyTorch itself, and a forward whose ops cannot be recorded. The
checks cost nothing where all is well: the loss is taken of the recorded forward's own output, and
the model runs again only to tell whose error a failure is. acprof.fit and the eager command
(command_line.py) share them, so both doors give the same error kind for the same mistake."""

import contextlib
import logging
from typing import Any, Sequence

import torch

from ..errors import BadInput, ModelFails
from .call import tensors_text
from .graph import EagerGraph
from .op_stream import CustomFunctionInForward
from .recorder import compute_loss
from .training_state import training_state_kept


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
            raise BadInput(f"{name} refuses inputs {tensors_text(inputs)} ({type(e).__name__}: {first_line(e)}); pass inputs "
                           "its forward takes") from None
        _loss_taken(output, loss, target)


def _loss_taken(output: Any, loss: Any, target) -> None:
    """The loss of `output`, taken and dropped; raises BadInput with the loss rule's own refusal (no
    tensor to take a loss of, a loss function that returns no loss)."""
    try:
        compute_loss(output, loss, target)
    except ValueError as e:
        raise BadInput(str(e)) from None


def _own_forward_with_grad(model: torch.nn.Module, inputs: Sequence[torch.Tensor]) -> None:
    """One forward of the model as training runs it, without acprof; raises ModelFails naming
    PyTorch's error where the model's own forward fails there."""
    with training_state_kept(model), torch.enable_grad():
        model.train()
        try:
            model(*inputs)
        except Exception as e:
            raise ModelFails(f"the training step of {type(model).__name__} fails in PyTorch ({type(e).__name__}: "
                             f"{first_line(e)}); fix the model or its inputs") from None


def capture(model: torch.nn.Module, inputs: Sequence[torch.Tensor], seed: int = 0, autocast: str = "",
            loss: Any = None, target=None) -> EagerGraph:
    """The model's forward recorded as the ops eager runs (EagerGraph); with `loss`, the loss of the
    recorded forward's output is taken too (check_step's check, on the same forward). Raises
    BadInput where the model's own forward refuses the inputs or the loss refuses the output, and
    ModelFails where the forward cannot be recorded: one that calls a custom
    torch.autograd.Function (the ops record its forward, not its backward), or one that fails
    only while recorded."""
    try:
        graph = EagerGraph(model, inputs, seed, autocast, keep_output=loss is not None)
    except CustomFunctionInForward as e:
        where = f" (in {e})" if str(e) else ""
        raise ModelFails(f"{type(model).__name__}'s forward calls a custom torch.autograd.Function{where}, whose "
                         "backward the recorded ops cannot carry; write it with differentiable torch ops") from None
    except Exception as e:
        if loss is not None:
            check_step(model, inputs, loss, target)  # the model's own forward or loss refuses: the caller's mistake
        _own_forward_with_grad(model, inputs)        # the model fails in PyTorch, not in acprof
        raise ModelFails(f"{type(model).__name__}'s forward fails while acprof records its ops "
                         f"({type(e).__name__}: {first_line(e)}); please report it with the model") from None
    output, graph.output = graph.output, None
    if loss is not None:
        with torch.no_grad():
            _loss_taken(output, loss, target)
    return graph
