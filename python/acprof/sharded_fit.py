"""fit() of a model sharded by FSDP2 (fully_shard on each block, then on the root), on every rank:
a plan inside each unit (eager/sharded.py), the rank's step measured against a per-rank budget and
verified bit for bit against the same FSDP2 step without acprof.

The planner predicts one process's step to the byte; a sharded step also holds what FSDP moves
around it (each rank's shards, the gathered parameters of the unit computing and of the one
prefetched, the all-gather and reduce-scatter buffers), which no profile of a unit states. So, as
under torch.compile (compiled_fit.py), the budget is kept by measurement, on a ladder of plans fixed
before the budget is read:
  - the units are profiled with their parameters gathered (FSDPModule.unshard), on the calls they
    received in a step of the model, and planned from the memory alone (every op 1 us: the same
    plans on every rank and every run). Alike units (one class, one shape of call) are profiled as
    one chain of as many calls as there are units, whose saved activations stack up as the model's
    do, and unit i takes the decisions of call i; other units each alone;
  - rung k is the plan for the budget peak - (peak - floor) * k / (RUNGS - 1), from nothing
    recomputed (rung 0, the model's own step) to the floor, and a last rung recomputes every unit
    whole (per-block checkpointing);
  - each rung in turn is installed and the sharded step measured on every rank, STEPS_PER_RUNG
    times; its prediction is the largest rank's least peak of those, with RESERVE_UNITS of reserve
    where it checkpoints; the first rung whose prediction is within the budget is the result.
Monotone for the same reason as compile's ladder where a rung's peak is one number: the rungs do
not depend on the budget. Checkpointed sharded steps on gloo are not yet one number (STEPS_PER_RUNG).
Every rank computes the same ladder, and takes rank 0's decisions to be sure: ranks that
ran different plans would run different ops inside the units, not different collectives, but the
budget is one promise for the job.
"""

from typing import Any, Dict, List, Tuple

import torch

from . import engine
from .compiled_fit import RUNGS, with_unit_op_times
from .errors import BadInput, BudgetExceeded, InfeasibleBudget, VerificationFailed
from .eager import sharded
from .eager.apply import apply_plan
from .eager.call import positional
from .eager.compiled import aligned_decisions
from .eager.recorder import ProfileCost, TrainingStep, measure_step, other_threads_by_time
from .eager.training_state import training_state_kept
from .eager.verification import compare_steps


# How many steps each rung is measured for: a checkpointed sharded step's peak moves between steps
# on gloo, up from its least by whole multiples of one unit's gathered parameters (0 to 2 of them
# over 6 steps on the decoder: docs/data-parallel.md), for a reason not traced yet, while its least
# was the same in every run. A rung's prediction is the least of these steps plus the reserve.
STEPS_PER_RUNG = 3

# The reserve, in the largest unit's gathered parameters: above the most a checkpointed step's peak
# was seen over its least (2 of them and 129,336 B, on the decoder). A rung with nothing
# checkpointed measured one number and keeps none. Observed, not derived: predicted from the
# largest measured step with no reserve, a fit at the floor the ladder had named peaked 663,756 B
# over it when verified; from the largest with a reserve of 2, the floor named by one fit was
# 129,336 B short of the next fit's.
RESERVE_UNITS = 3


def fit_sharded(model: torch.nn.Module, example_inputs: Any, budget, loss_fn, optimizer, verify: bool,
                solver: str, seed: int):
    from .fit import FitResult, _budget_text, _call, _loss, _trainable  # fit.py calls this

    _trainable(model)
    units = sharded.units_of(model)
    sharded.finish_collectives(model)
    sharded.remove_policies(model)
    call, loss = _call(example_inputs), _loss(loss_fn)
    with positional(model, call), other_threads_by_time():
        def measured() -> dict:
            """The step, measured STEPS_PER_RUNG times from one state: the first, with the largest peak."""
            steps = [sharded.local_step(measure_step(model, call.tensors, loss, seed=seed, optimizer=optimizer))
                     for _ in range(STEPS_PER_RUNG)]
            return dict(steps[0], peak_bytes=max(step["peak_bytes"] for step in steps),
                        least_peak_bytes=min(step["peak_bytes"] for step in steps))

        with training_state_kept(model, optimizer), sharded.recording_units(units) as seen:
            TrainingStep(list(call.tensors), loss, None, seed, "", optimizer).warm_up(model, lambda: model(*call.tensors))
        profiles, decide = _planning(units, seen, seed, solver)

        before = measured()
        peak = sharded.all_ranks_max(before["peak_bytes"])
        try:
            budget_bytes = engine.budget_bytes(_budget_text(budget), peak)
        except engine.EngineError as e:
            raise BadInput(str(e)) from None
        reserve = RESERVE_UNITS * max(sum(p.numel() * p.element_size() for p in u.module.parameters()) for u in units)
        tried: List[Tuple[int, int]] = [(0, peak)]
        plans: Dict[str, dict] = {}
        after, policies = before, {}
        for k in range(1, RUNGS + 1):
            if tried[-1][1] <= budget_bytes:
                break
            if k == RUNGS:  # the last rung: every unit recomputed whole, as per-block checkpointing
                plans = {"every unit recomputed whole": {"segments": []}}
                decisions = {u.name: [True] * len(seen[u.name][1]) for u in units}
            else:
                plans, decisions = decide(k)
            decisions = sharded.same_on_every_rank(decisions)
            policies = sharded.plan_policies(units, {u.name: seen[u.name][1] for u in units}, decisions)
            after = measured()
            tried.append((k, sharded.all_ranks_max(after["least_peak_bytes"]) + reserve))
        if tried[-1][1] > budget_bytes:
            sharded.remove_policies(model)
            smallest = min(p for _, p in tried)
            raise InfeasibleBudget(
                f"no plan of {type(model).__name__}'s {len(units)} FSDP units fits {engine.format_bytes(budget_bytes)} "
                f"a rank: the smallest of {len(tried)} plans, from nothing recomputed to every unit at its floor, "
                f"peaked at {engine.format_bytes(smallest)} ({smallest} B) on the largest rank; ask for at least that, "
                "or shard over more ranks", smallest)
        rung, predicted = tried[-1]
        result = FitResult(model, _sharded_plan(units, plans, rung, budget_bytes, predicted),
                           {"planned_from": profiles}, budget_bytes, peak, predicted, None,
                           0.0, sum(len(p["segments"]) for p in plans.values()) if rung else 0)
        if not verify:
            return result
        try:
            again = measured() if rung else before
            _verify(result, before, again, policies, tried, reserve if rung else 0)
        except Exception:
            sharded.remove_policies(model)
            raise
    return result


def _planning(units, seen: Dict[str, list], seed: int, solver: str):
    """(the profiles planned, decide): decide(k) is rung k's plans and each unit's decision of each
    op it traced. Alike units are profiled as one chain of them (eager/sharded.py UnitChain), whose
    saved activations stack up as the model's do, and each unit takes the decisions of its place in
    the chain; other units each alone, which misses the stacking (docs/data-parallel.md)."""
    from .fit import _floor_bytes, _outcome, _plan, _profile
    from .errors import AcprofError

    def profiled(module, unit, tensors):
        unit.module.unshard()
        try:
            graph, profile = _profile(module, tensors, None, None, seed, ProfileCost(), most_iterations=1)
        finally:
            unit.module.reshard()
        timeless = with_unit_op_times(profile)
        peak = profile["summary"]["peak_bytes"]
        return graph, timeless, peak, _floor_bytes(_outcome(timeless, "1B", solver), peak)

    def rung_budget(peak: int, floor: int, k: int) -> int:
        return int(peak - (peak - floor) * k / (RUNGS - 1))

    calls = {u.name: seen[u.name][0] for u in units}
    if len(units) > 1 and sharded.alike(units, calls):
        first = units[0]
        chain = sharded.UnitChain(first.module, calls[first.name], len(units))
        try:
            graph, timeless, peak, floor = profiled(chain, first, calls[first.name].tensors)
        except AcprofError:
            graph = None  # a unit whose output is not its next call's input: each alone below
        if graph is not None:
            def decide_in_chain(k: int):
                plan = _plan(timeless, rung_budget(peak, floor, k), solver)
                ops = sharded.eager_ops(apply_plan(chain, plan, profile=timeless, graph=graph), timeless)
                per_unit = len(ops) // len(units)
                return {"chain of alike units": plan}, {
                    u.name: aligned_decisions(ops[i * per_unit:(i + 1) * per_unit], seen[u.name][1])
                    for i, u in enumerate(units)}
            return {"chain of alike units": timeless}, decide_in_chain

    planned = {}
    for unit in units:
        plain = sharded.ClassForward(unit.module)
        with positional(plain, calls[unit.name]):
            planned[unit.name] = (plain,) + profiled(plain, unit, calls[unit.name].tensors)

    def decide_alone(k: int):
        plans, decisions = {}, {}
        for unit in units:
            plain, graph, timeless, peak, floor = planned[unit.name]
            plans[unit.name] = _plan(timeless, rung_budget(peak, floor, k), solver)
            ops = sharded.eager_ops(apply_plan(plain, plans[unit.name], profile=timeless, graph=graph), timeless)
            decisions[unit.name] = aligned_decisions(ops, seen[unit.name][1])
        return plans, decisions
    return {u.name: planned[u.name][2] for u in units}, decide_alone


def _sharded_plan(units, plans: Dict[str, dict], rung: int, budget_bytes: int, predicted: int) -> dict:
    """What fit chose, as data: each unit's plan (none at rung 0), the rung, the budget and the
    measured prediction, per rank."""
    return {"mode": "fsdp2", "rung": rung, "rungs": RUNGS, "budget_bytes": budget_bytes,
            "predicted_peak_bytes": predicted, "world_size": torch.distributed.get_world_size(),
            "segments": [s for p in plans.values() for s in p["segments"]] if rung else [],
            "planned_as": ("each unit alone" if set(plans) == {u.name for u in units} else next(iter(plans)))
            if rung else "",
            "units": [{"name": u.name, "reshard_after_forward": u.reshard_after_forward,
                       "plan": plans.get(u.name) if rung else None} for u in units]}


def _verify(result, before: dict, after: dict, policies: Dict[str, list], tried: List[Tuple[int, int]],
            reserve: int) -> None:
    """The chosen rung's step, measured again, against the model's own sharded step on every rank:
    bit for bit, its largest rank's peak within the budget (and, recorded, within the prediction)."""
    verdict = compare_steps(before, after, "", None)
    differs = sharded.all_ranks_max(int(bool(verdict["differences"])))
    if differs:
        shown = "; ".join(verdict["differences"][:2]) or "on another rank"
        raise VerificationFailed(f"the checkpointed FSDP units do not train like {type(result.module).__name__}'s own "
                                 f"sharded step ({shown}); please report it with the model")
    result.measured_peak_bytes = sharded.all_ranks_max(after["peak_bytes"])
    recomputed = {name: made[-1].recomputed for name, made in policies.items() if made}
    result.verification = {
        "mode": "bitwise", "max_abs_diff": verdict["max_abs_diff"],
        "gradients_compared": verdict["gradients_compared"], "buffers_compared": verdict["buffers_compared"],
        "parameters_compared": verdict["parameters_compared"],
        "original_measured_peak_bytes": sharded.all_ranks_max(before["peak_bytes"]),
        "rank_measured_peak_bytes": after["peak_bytes"], "rank_least_measured_peak_bytes": after["least_peak_bytes"],
        "steps_measured_per_rung": STEPS_PER_RUNG, "rungs_tried_and_predictions": tried,
        "reserve_bytes": reserve, "within_prediction": result.measured_peak_bytes <= result.predicted_peak_bytes,
        "ops_recomputed": recomputed}
    if result.measured_peak_bytes > result.budget_bytes:
        over = result.measured_peak_bytes - result.budget_bytes
        raise BudgetExceeded(f"the checkpointed FSDP step peaked at {engine.format_bytes(result.measured_peak_bytes)} "
                             f"on its largest rank, {engine.format_bytes(over)} over the budget (predicted, with its "
                             f"reserve, {engine.format_bytes(result.predicted_peak_bytes)}); please report it with the model")
