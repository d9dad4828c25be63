"""The state a training step changes, kept aside while acprof runs steps of the user's module, and
put back after: acprof's recording, capture and verification leave the model as they found it."""

import contextlib
import copy
from typing import Optional

import torch


@contextlib.contextmanager
def training_state_kept(module: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer] = None):
    """Within it the module may train: afterwards its parameters (where an optimizer stepped
    them), buffers (running statistics the steps update), gradients and mode, the optimizer's
    state and the generator are as they were. The copies live on the CPU, outside any step."""
    parameters = [(p, p.detach().to("cpu", copy=True)) for p in module.parameters()] if optimizer is not None else []
    buffers = [(b, b.detach().to("cpu", copy=True)) for b in module.buffers()]
    gradients = [(p, p.grad) for p in module.parameters()]
    optimizer_state = copy.deepcopy(optimizer.state_dict()) if optimizer is not None else None
    training, generator = module.training, torch.get_rng_state()
    try:
        yield
    finally:
        with torch.no_grad():
            for tensor, kept in parameters + buffers:
                tensor.copy_(kept)
        for parameter, gradient in gradients:
            parameter.grad = gradient
        if optimizer is not None:
            optimizer.load_state_dict(optimizer_state)
        module.train(training)
        torch.set_rng_state(generator)
