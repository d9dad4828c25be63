"""The eager rewrite's extra time, measured as the TorchScript rewrite measures it: one training
step of the original module and one of the checkpointed module, alternated in one process so that
both see the same machine, after one untimed step each (the optimizers' state). How many pairs,
and whether their median is a measurement to state, is the engine's rule
(common/include/acprof/pair_timing.h), which both rewrites follow; only the steps run here.
"""

import statistics
import time
from typing import Callable

import torch

from .. import engine

# One training step of a module: forward, loss, backward and its optimizer's step.
Step = Callable[[torch.nn.Module], None]


def time_pairs(original: torch.nn.Module, checkpointed: torch.nn.Module, step: Step, min_rounds: int) -> dict:
    """The rewrite outcome's `time` (engine.step_times) for pairs of steps of the two modules,
    at least `min_rounds`, more while the rule wants them and one more keeps the command within its
    budget of the original's steps; every other pair runs the checkpointed module first, so that
    neither always inherits the other's caches and allocator state."""
    for module in (original, checkpointed):
        step(module)
    original_us, rewritten_us, shares = [], [], []
    timed_seconds = 0.0

    def timed(module) -> float:
        start = time.perf_counter()
        step(module)
        return (time.perf_counter() - start) * 1e6

    def another_pair_fits() -> bool:
        if not original_us:
            return True
        return engine.another_pair_fits(engine.process_age_seconds(), statistics.median(original_us) / 1e6,
                                        statistics.median(rewritten_us) / 1e6)

    while True:
        stop = engine.timing_stop(shares, timed_seconds, min_rounds, another_pair_fits())
        if stop is not None:
            break
        checkpointed_first = len(shares) % 2 == 1
        if checkpointed_first:
            rewritten_us.append(timed(checkpointed))
        original_us.append(timed(original))
        if not checkpointed_first:
            rewritten_us.append(timed(checkpointed))
        shares.append((rewritten_us[-1] - original_us[-1]) / original_us[-1])
        timed_seconds += (original_us[-1] + rewritten_us[-1]) / 1e6
    return engine.step_times(original_us, rewritten_us, timed_seconds, stop)
