"""Autocast's thread state as one value: for each device whether it is on and its dtype, then whether
its cast cache is on. The checkpoint saves it at forward and sets it again for the recompute, the
graph's runner turns it off while recorded nodes run, and a step turns it on by a dtype's name."""

import contextlib

import torch

DEVICES = ("cpu", "cuda")


def current() -> tuple:
    return tuple((device, torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))
                 for device in DEVICES) + (torch.is_autocast_cache_enabled(),)


def set_state(state: tuple) -> None:
    for device, enabled, dtype in state[:-1]:
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(state[-1])


@contextlib.contextmanager
def off():
    """Autocast off on every device, the state before put back after."""
    previous = current()
    set_state(tuple((device, False, dtype) for device, _, dtype in previous[:-1]) + previous[-1:])
    try:
        yield
    finally:
        set_state(previous)


def autocast_context(autocast: str, device: str = "cpu"):
    """torch.autocast for a dtype name ("bfloat16"), or no context for ""."""
    if not autocast:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=getattr(torch, autocast))
