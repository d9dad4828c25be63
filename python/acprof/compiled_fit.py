"""fit(..., compile=True): the plan carried out inside torch.compile (eager/compiled.py), its
compiled step measured against the budget and verified against torch.compile of the model.

The planner predicts the eager step's memory to the byte; the compiled step's is inductor's
(fusion, buffer reuse, its placement of the recompute), which no profile of the eager step states.
So the budget is kept by measurement, on a ladder of plans fixed before the budget is read:
  - the eager step is profiled once, and planned from the memory alone (every op 1 us: eager's op
    times say nothing of what a recompute costs once inductor fuses it, and plans that follow from
    bytes alone are the same on every run);
  - rung k is the plan for the eager budget peak - (peak - floor) * k / (RUNGS - 1), from the eager
    step's peak (nothing checkpointed) down to its floor;
  - each rung in turn is compiled and its step measured; the first within the budget is the result.
Monotone by construction: the rungs and their compiled peaks m_0, m_1, ... do not depend on the
budget, so for budgets B1 < B2 the first fit k1 for B1 is at or after k2 for B2; where it is after,
m_k2 > B1 (else k2 fitted B1 first) >= m_k1. A smaller budget never gets a higher peak. Where no rung
fits, InfeasibleBudget names the smallest compiled peak a rung reached.

The gradients, loss and buffers are compared with torch.compile of the model itself, within the
largest difference compile itself makes against the eager step (inductor reorders floating-point
sums; a difference larger than its own is acprof's), or bit for bit where that difference is not
rounding (a model with dropout: compile draws its own masks).
"""

import copy
from typing import Any, List, Tuple

import torch

from . import engine
from .errors import BadInput, InfeasibleBudget, VerificationFailed
from .eager.apply import apply_plan
from .eager.call import positional
from .eager.compiled import CompiledPlan, traced_ops
from .eager.recorder import ProfileCost, measure_step
from .eager.verification import compare_steps

# Where torch.compile of the model differs from its eager step by more than this share of the
# largest value compared, the difference is not rounding (compile's dropout draws from inductor's own
# generator: 0.39 on a decoder whose eager and compiled steps differ by 4.4e-5 without dropout).
ROUNDING = 1e-3

# The ladder's rungs, the eager step's peak and floor among them: each rung tried is one compile of
# the step (about 10 s for a two-layer Llama on this CPU).
RUNGS = 6


class _Called(torch.nn.Module):
    """`target` called as the user calls the model (the call's own arguments, its tensors swapped
    in), for measure_step, which passes the tensors positionally."""

    def __init__(self, target: torch.nn.Module, call):
        super().__init__()
        self.target, self.call = target, call

    def forward(self, *tensors):
        args, kwargs = self.call.rebuild(tensors)
        return self.target(*args, **kwargs)


def with_unit_op_times(profile: dict) -> dict:
    """A copy of the profile with every step's and node's time 1 us: its plans follow from the
    memory alone, the same on every run and machine."""
    timeless = copy.deepcopy(profile)
    for step in timeless["steps"]:
        step["time_us"] = 1.0
    for node in timeless["nodes"]:
        node["forward_time_us"] = 1.0
    return timeless


def ladder(peak: int, floor: int) -> List[int]:
    """The rungs' eager budgets, from the peak down to the floor."""
    return sorted({int(peak - (peak - floor) * k / (RUNGS - 1)) for k in range(RUNGS)}, reverse=True)


def fit_compiled(model: torch.nn.Module, example_inputs: Any, budget, loss_fn, optimizer, verify: bool,
                 solver: str, seed: int, compile_options: dict):
    from .fit import (FitResult, _budget_text, _call, _floor_bytes, _loss, _outcome, _plan,  # fit.py calls this
                      _profile, _unwrapped, uninstall)

    ddp, _ = _unwrapped(model)
    if ddp is not None:
        raise BadInput("compile=True takes the module itself, not a DistributedDataParallel model; fit the "
                       "module, or fit without compile")
    call, loss = _call(example_inputs), _loss(loss_fn)
    args, kwargs = call.rebuild(call.tensors)
    uninstall(model)
    with positional(model, call):
        graph, profile = _profile(model, call.tensors, loss_fn, optimizer, seed, ProfileCost(), most_iterations=1)
    peak = profile["summary"]["peak_bytes"]
    try:
        budget_bytes = engine.budget_bytes(_budget_text(budget), peak)
    except engine.EngineError as e:
        raise BadInput(str(e)) from None
    timeless = with_unit_op_times(profile)
    floor = _floor_bytes(_outcome(timeless, "1B", solver), peak)
    traced = traced_ops(model, args, kwargs)  # the same trace for every rung

    def measured(target: torch.nn.Module) -> dict:
        """One step of `target` (the model, or a CompiledPlan around it), its names the model's."""
        step = measure_step(_Called(target, call), call.tensors, loss, seed=seed, optimizer=optimizer)
        return _renamed(step, "target." if target is model else "target.module.")

    tried: List[Tuple[int, int]] = []
    for eager_budget in ladder(peak, floor):
        plan = _plan(timeless, eager_budget, solver)
        checkpointed = apply_plan(model, plan, profile=timeless, graph=graph)
        module = CompiledPlan(model, checkpointed, traced, **compile_options)
        after = measured(module)
        tried.append((eager_budget, after["peak_bytes"]))
        if after["peak_bytes"] <= budget_bytes:
            break
    else:
        smallest = min(p for _, p in tried)
        raise InfeasibleBudget(
            f"no plan's compiled step fits {engine.format_bytes(budget_bytes)}: the smallest of {len(tried)} "
            f"plans from the eager step's peak to its floor ({engine.format_bytes(floor)}) compiled to "
            f"{engine.format_bytes(smallest)} ({smallest} B); ask for at least that, or fit without compile",
            smallest)
    baseline = plan.get("baseline_iteration_time_us", 0)
    result = FitResult(module, plan, profile, budget_bytes, peak, plan["predicted_peak_bytes"], after["peak_bytes"],
                       plan.get("extra_time_us", 0) / baseline if baseline > 0 else 0.0, len(plan["segments"]))
    if not verify:  # the budget is still kept: every rung tried was measured
        return result
    verdict, tolerance, original = _compare_with_compiled_model(model, measured, compile_options, after)
    policy = module.policies[-1]
    result.verification = {
        "mode": "compiled", "tolerance": tolerance, "max_abs_diff": verdict["max_abs_diff"],
        "compile_eager_difference": verdict["compile_eager_difference"],
        "gradients_compared": verdict["gradients_compared"], "buffers_compared": verdict["buffers_compared"],
        "parameters_compared": verdict["parameters_compared"],
        "compiled_original_measured_peak_bytes": original["peak_bytes"],
        "eager_plan_budgets_and_compiled_peaks": tried,
        "ops_recomputed": policy.recomputed, "ops_not_in_profile": policy.unmatched}
    return result


def _compare_with_compiled_model(model, measured, compile_options, after: dict) -> tuple:
    """The compiled plan's step against torch.compile of the model, within compile's own difference
    from the model's eager step where that difference is rounding (at most ROUNDING of the largest
    value compared); where it is more, compile drew other random numbers than eager (inductor's own
    generator for dropout), and the compiled plan must equal compile's step bit for bit."""
    eager = measured(model)
    original = measured(CompiledPlan(model, **compile_options))
    gap = compare_steps(eager, original, "", None)["max_abs_diff"]
    tolerance = gap if gap <= ROUNDING * _largest(original) else 0.0
    verdict = compare_steps(original, after, "", tolerance)
    if verdict["differences"]:
        raise VerificationFailed(f"the compiled checkpointed module does not train like torch.compile of "
                                 f"{type(model).__name__} within {tolerance:.3g} (compile's own difference from eager "
                                 f"was {gap:.3g}): {'; '.join(verdict['differences'][:2])}; please report it "
                                 "with the model")
    verdict["compile_eager_difference"] = gap
    return verdict, tolerance, original


def _largest(step: dict) -> float:
    """The largest magnitude among a measured step's loss, gradients, buffers and parameters."""
    tensors = [step["loss"]] + [t for kind in ("gradients", "buffers", "parameters") for t in step.get(kind, {}).values()]
    return max((t.detach().abs().max().item() for t in tensors if t.is_floating_point() and t.numel()), default=0.0)


def _renamed(step: dict, prefix: str) -> dict:
    """A measured step with `prefix` taken off its gradients', buffers' and parameters' names."""
    renamed = dict(step)
    for kind in ("gradients", "buffers", "parameters"):
        if kind in step:
            renamed[kind] = {name[len(prefix):] if name.startswith(prefix) else name: value
                             for name, value in step[kind].items()}
    return renamed
