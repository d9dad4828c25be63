"""The front door: plan and checkpoint a model for a memory budget in one call, in the training
script itself, and answer before training whether it will fit.

    import acprof
    fitted = acprof.fit(model, (input_ids,), budget="6GB", loss_fn=lambda out: out.mean(),
                        optimizer=torch.optim.AdamW(model.parameters()))
    for batch in loader:                       # the user's own loop, on the model's own parameters
        loss = loss_fn(fitted.module(batch)); loss.backward(); optimizer.step(); optimizer.zero_grad()

    acprof.estimate(model, (input_ids,), budget="6GB")   # fits_as_is | fits_with_plan | cannot_fit

`fit` records one training step of the model (the optimizer's step included, so its state counts
against the budget), plans it with the C++ planner in this process (acprof.engine), applies the
plan (acprof.eager.apply_plan: the model's parameters, shared) and verifies the result: one step
of the checkpointed module against one of the model, loss, gradients, buffers and the parameters
the optimizer stepped bit for bit, and its measured peak against the prediction and the budget.
The model and the optimizer are left as they were. It takes about nine training steps of the
model and the planner's time (bench/command_cost.py). What it cannot do raises one of
acprof.errors' types with one line.
"""

import collections
import inspect
import json
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import torch

from . import engine
from .errors import AcprofError, BadInput, BudgetExceeded, InfeasibleBudget, ModelFails, VerificationFailed
from .eager import data_parallel, sharded
from .eager.apply import CheckpointedModule, PlanMismatch, apply_plan
from .eager.call import Call, positional, tensors_text
from .eager.recorder import (ProfileCost, TrainingStep, collections_of_new_objects_only, compute_loss,
                             measure_step, record_profile)
from .eager.training_state import training_state_kept
from .eager.step_checks import capture, first_line, torch_logs_quiet
from .eager.verification import compare_steps

__all__ = ["fit", "estimate", "apply", "install", "uninstall", "installed_plan", "FitResult", "Estimate"]

# A tensor or a sequence of them: the positional arguments of forward; a mapping: its keyword
# arguments (`dict(input_ids=x, labels=y)`), whose values may hold anything beside tensors.
Inputs = Union[torch.Tensor, Sequence[Any], Mapping[str, Any]]


@dataclass
class FitResult:
    """What fit made and measured.

    Attributes:
        module: the model itself, whose forward now runs the plan in training (fit installs it:
            the same object, class, attributes and state_dict keys; `remove()` takes it out);
            for a DistributedDataParallel model, the module it wraps, and the DDP model trains on;
            with compile, an eager.compiled.CompiledPlan around the model, which fit leaves
            without a plan installed (remove() then has nothing to take out).
        plan: plan.json's content (segments, predicted peak and extra time).
        profile: profile.json's content of the model's step, which the plan was made from.
        budget_bytes: the budget in bytes.
        peak_bytes: the model's own step's measured peak, without acprof.
        predicted_peak_bytes: the plan's predicted peak (of the eager step: with compile, the
            compiled step's is measured, not predicted).
        measured_peak_bytes: the checkpointed module's measured peak (None with verify=False); with
            compile, its compiled step's, measured with verify=False too.
        predicted_extra_time_share: the plan's predicted extra time over the profiled step (with
            compile, from a profile whose ops all take 1 us: a share of ops, not of time).
        segments: how many segments are checkpointed.
        verification: how the result was verified (mode, what was compared, the largest
            difference), None with verify=False.
    """
    module: torch.nn.Module
    plan: dict
    profile: dict
    budget_bytes: int
    peak_bytes: int
    predicted_peak_bytes: int
    measured_peak_bytes: Optional[int]
    predicted_extra_time_share: float
    segments: int
    verification: Optional[dict] = field(default=None)

    def remove(self) -> None:
        """Takes the plan out of the model: its forward is its class's again."""
        uninstall(self.module)

    def save(self, path: str) -> None:
        """Writes the plan to `path` and its profile beside it (`<path without .json>.profile.json`),
        which acprof.apply reads to apply the plan in another process without profiling again."""
        profile_path = os.path.splitext(path)[0] + ".profile.json"
        engine.write_json(self.profile, profile_path)
        engine.write_json(dict(self.plan, profile_path=os.path.basename(profile_path)), path)


@dataclass
class Estimate:
    """The answer before training.

    Attributes:
        verdict: "fits_as_is" (the step's peak is within the budget), "fits_with_plan" (a plan
            reaches it), "cannot_fit" (the budget is below the floor), or None without a budget.
        peak_bytes: the measured peak of one training step as it is.
        floor_bytes: the smallest peak any plan reaches.
        floor: what the floor is made of (shares by category, largest contributors first).
        budget_bytes: the budget in bytes, None without one.
        predicted_peak_bytes: the plan's predicted peak where a plan is needed and found.
        predicted_extra_time_share: that plan's predicted extra time over the step.
    """
    verdict: Optional[str]
    peak_bytes: int
    floor_bytes: int
    floor: dict
    budget_bytes: Optional[int] = None
    predicted_peak_bytes: Optional[int] = None
    predicted_extra_time_share: Optional[float] = None


def fit(model: torch.nn.Module, example_inputs: Inputs, budget: Union[str, int],
        loss_fn: Optional[Callable[[Any], torch.Tensor]] = None,
        optimizer: Optional[torch.optim.Optimizer] = None, verify: bool = True, solver: str = "auto",
        seed: int = 0, compile: Union[bool, Mapping[str, Any]] = False) -> FitResult:
    """`model` checkpointed to train within `budget` ("6GB", "512MiB", "60%" of its step's peak,
    or bytes) on inputs like `example_inputs` (a tensor, the positional arguments, or a mapping of
    keyword arguments such as `dict(input_ids=x, labels=y)`), verified. `loss_fn(output)` is the
    loss backward runs from (default: the output's own `loss` where it has one, as a transformers
    model given labels does, else the mean of its floating-point tensors); `optimizer`, over the
    model's parameters, steps after backward, as in the user's loop. With `compile` (True, or
    torch.compile's keyword arguments), `module` is the model's forward compiled with the plan
    inside it (compiled_fit.py): its compiled step measured within the budget and verified against
    torch.compile of the model."""
    if sharded.is_sharded_root(model):
        if compile:
            raise BadInput("compile=True takes an unsharded module; fit the fully_shard model without compile")
        from .sharded_fit import fit_sharded
        with collections_of_new_objects_only():
            return fit_sharded(model, example_inputs, budget, loss_fn, optimizer, verify, solver, seed)
    if compile:
        from .compiled_fit import fit_compiled
        options = dict(compile) if isinstance(compile, Mapping) else {}
        return fit_compiled(model, example_inputs, budget, loss_fn, optimizer, verify, solver, seed, options)
    with collections_of_new_objects_only():
        return _fit(model, example_inputs, budget, loss_fn, optimizer, verify, solver, seed)


def _fit(model, example_inputs, budget, loss_fn, optimizer, verify, solver, seed) -> FitResult:
    cost = ProfileCost(steps_after=VERIFICATION_STEPS if verify else 0)
    ddp, model = _unwrapped(model)
    call = _call(example_inputs)
    inputs = call.tensors
    uninstall(model)
    with positional(model, call):
        buckets = _settled_buckets(ddp, model, inputs, loss_fn, optimizer, seed)
        graph, profile = _profile(model, inputs, loss_fn, optimizer, seed, cost, extra_statics=buckets)
        plan = _plan(profile, budget, solver)
        if ddp is not None:
            plan = data_parallel.same_plan(ddp, plan)
        try:
            checkpointed = apply_plan(model, plan, profile=profile, graph=graph)
        except PlanMismatch as e:
            raise BadInput(str(e)) from None
    baseline = plan.get("baseline_iteration_time_us", 0)
    result = FitResult(model, plan, profile, plan["budget_bytes"], profile["summary"]["peak_bytes"],
                       plan["predicted_peak_bytes"], None,
                       plan.get("extra_time_us", 0) / baseline if baseline > 0 else 0.0, len(plan["segments"]))
    if not verify:
        install(model, checkpointed, call)
        return result
    loss = _loss(loss_fn)
    # The step as the user runs it: through DDP where the model is wrapped (its all-reduce, its
    # buckets), so the gradients compared are the all-reduced ones on every rank.
    stepper = ddp if ddp is not None else model
    # One warm-up of the model's own step (its optimizer's state, its first-call costs), then both
    # measured steps from that one state: the model's as it is, and the checkpointed module's,
    # called as the user calls it (the installed forward sees the call's own arguments).
    with training_state_kept(model, optimizer), collections_of_new_objects_only():
        with positional(model, call):
            TrainingStep(list(inputs), loss, None, seed, "", optimizer).warm_up(model, lambda: stepper(*inputs))
            before = measure_step(stepper, inputs, loss, seed=seed, optimizer=optimizer, warm_up=False,
                                  extra_statics=buckets)
        install(model, checkpointed, call)
        try:
            _verify(result, before, graph, call, loss, optimizer, seed, stepper, buckets)
        except AcprofError:
            uninstall(model)
            raise
    return result


def _unwrapped(model) -> tuple:
    """(the DistributedDataParallel model or None, the module to plan), the module checked."""
    ddp = data_parallel.wrapper_of(model)
    if ddp is not None:
        data_parallel.check_supported(ddp)
        model = ddp.module
    _trainable(model)
    data_parallel.refuse_sharded(model)
    return ddp, model


def _settled_buckets(ddp, model, inputs, loss_fn, optimizer, seed) -> list:
    """DDP's gradient buckets as the model's steps under it hold them (data_parallel.py), none
    without DDP, once every rank is checked to fit at the same shapes. Called inside
    positional(model, ...)."""
    if ddp is None:
        return []
    data_parallel.check_same_shapes(ddp, tensors_text(inputs))

    def one_step_under_ddp():  # the step a warm-up runs, through DDP, the model left as it was
        with training_state_kept(model, optimizer), torch_logs_quiet():
            TrainingStep(list(inputs), _loss(loss_fn), None, seed, "", optimizer).warm_up(model, lambda: ddp(*inputs))

    return data_parallel.settled_buckets(ddp, one_step_under_ddp)


def estimate(model: torch.nn.Module, example_inputs: Inputs, budget: Union[str, int, None] = None,
             loss_fn: Optional[Callable[[Any], torch.Tensor]] = None,
             optimizer: Optional[torch.optim.Optimizer] = None, solver: str = "auto", seed: int = 0) -> Estimate:
    """Whether one training step of `model` on inputs like `example_inputs` fits `budget`: as it is,
    with a plan, or not at all, with the floor and what it is made of. Without a budget, records one
    step (two with the warm-up) and searches the floor; with one, measures as many iterations as a
    profile does (their median step times weigh the plan's extra time) and plans the budget too.
    The model and the optimizer are left as they were."""
    with collections_of_new_objects_only():
        return _estimate(model, example_inputs, budget, loss_fn, optimizer, solver, seed)


def _estimate(model, example_inputs, budget, loss_fn, optimizer, solver, seed) -> Estimate:
    ddp, model = _unwrapped(model)
    call = _call(example_inputs)
    with positional(model, call):
        buckets = _settled_buckets(ddp, model, call.tensors, loss_fn, optimizer, seed)
        # Without a budget the answer is bytes only (peak, floor, what the floor is made of), which
        # the first measured iteration records whole; later iterations would only add step times
        # for a plan's extra time, which only an answer with a budget states.
        _, profile = _profile(model, call.tensors, loss_fn, optimizer, seed, ProfileCost(),
                              most_iterations=1 if budget is None else None, extra_statics=buckets)
    peak = profile["summary"]["peak_bytes"]
    floor = _outcome(profile, "1B", solver)  # no step fits in a byte: the planner's floor search
    answer = Estimate(None, peak, _floor_bytes(floor, peak), floor.get("floor", {}))
    if budget is None:
        return answer
    outcome = _outcome(profile, _budget_text(budget), solver)
    if not outcome["feasible"]:
        answer.verdict = "cannot_fit"
        answer.budget_bytes = engine.budget_bytes(_budget_text(budget), peak)
        return answer
    plan = outcome["plan"]
    answer.budget_bytes = plan["budget_bytes"]
    answer.verdict = "fits_as_is" if peak <= plan["budget_bytes"] else "fits_with_plan"
    if answer.verdict == "fits_with_plan":
        baseline = plan.get("baseline_iteration_time_us", 0)
        answer.predicted_peak_bytes = plan["predicted_peak_bytes"]
        answer.predicted_extra_time_share = plan.get("extra_time_us", 0) / baseline if baseline > 0 else 0.0
    return answer


def apply(model: torch.nn.Module, plan: Union[str, dict], example_inputs: Inputs) -> torch.nn.Module:
    """`model` with a plan made earlier (FitResult.save, or `acprof plan` of its profile) installed,
    without profiling again (see install); returns the model. The plan names its profile
    (profile_path), read from beside it."""
    if isinstance(plan, str):
        plan_path = plan
        plan = _read_json(plan_path, "plan")
        named = plan.get("profile_path", "")
        profile_path = named if os.path.isabs(named) else os.path.join(os.path.dirname(os.path.abspath(plan_path)), named)
        profile = _read_json(profile_path, "plan's profile")
    else:
        profile = plan.get("profile")
        if profile is None:
            profile = _read_json(plan.get("profile_path", ""), "plan's profile")
    if not isinstance(plan.get("segments"), list) or "predicted_peak_bytes" not in plan:
        raise BadInput("the plan is not a plan (no segments or predicted peak); pass the plan.json "
                       "FitResult.save or `acprof plan` wrote")
    if data_parallel.wrapper_of(model) is not None:
        model = model.module  # the plan runs in the module DDP wraps, as fit installs it
    data_parallel.refuse_sharded(model)
    call = _call(example_inputs)
    uninstall(model)
    with torch_logs_quiet(), positional(model, call):
        try:
            checkpointed = apply_plan(model, plan, profile=profile, example_inputs=call.tensors)
        except PlanMismatch as e:
            raise BadInput(str(e)) from None
    return install(model, checkpointed, call)


# How many other calls' recordings (install) an installed plan keeps.
RECORDED_CALLS_KEPT = 16


def install(model: torch.nn.Module, checkpointed: CheckpointedModule, fitted: Call):
    """Makes the model's own forward run the plan: an instance attribute `forward` (nn.Module's
    call finds it before the class's) with the class forward's signature (transformers' Trainer
    reads it to choose the batch's columns), so the model stays the same object, of the same class,
    with its attributes (a Hugging Face model's config and generate) and its state_dict keys.
    In training with grad, a call with tensor arguments, positional or by name, runs the plan: as
    fitted where it is fit's call, else on the forward recorded at that call, once per call's
    signature (the RECORDED_CALLS_KEPT most recent), with the same segments, where that recording has the profiled graph's nodes (a short
    last batch, a shorter sequence, Trainer's extra `num_items_in_batch`). The budget is promised
    where the recorded ops are the fitted ones at no larger shapes; the first call elsewhere warns
    in one line. Any other call runs the class's own forward: in eval or under no_grad there is
    nothing to recompute; with no tensor argument, or where the recording differs from the
    profiled graph, the plan does not apply, and the first such call warns in one line that its
    memory is not the plan's. Returns the model."""
    own_forward = type(model).forward
    # The plans recorded at other calls, the most recently used last, at most RECORDED_CALLS_KEPT:
    # a loader of many sequence lengths records each length again once it fell out, instead of
    # holding a graph per length for as long as the plan is installed. fit's own call is kept apart.
    plans = collections.OrderedDict()
    warned = set()

    def warn(kind: str, message: str) -> None:
        if kind not in warned:
            warned.add(kind)
            warnings.warn(f"acprof: {type(model).__name__} was fitted at {[list(t.shape) for t in fitted.tensors]}; "
                          f"{message}", stacklevel=5)  # warn, forward, the Module call (two frames), the caller

    def forward(*args, **kwargs):
        if model.training and torch.is_grad_enabled():
            called = Call.of(args, kwargs)
            if called.tensors:
                if called.signature == fitted.signature:
                    plan, within = checkpointed, True
                else:
                    if called.signature not in plans:
                        plans[called.signature] = _plan_at(model, checkpointed, called)
                        if len(plans) > RECORDED_CALLS_KEPT:
                            plans.popitem(last=False)
                    plans.move_to_end(called.signature)
                    plan, within = plans[called.signature]
                if plan is not None:
                    if not within:
                        warn("larger", f"this call ({called.text()}) is larger or runs other ops, and the budget is "
                                       "promised only at the fitted shapes and smaller ones: fit at the largest "
                                       "shape you train at, called as you train")
                    return plan(*called.tensors)
                warn("other", f"at this call ({called.text()}) the forward records another graph, so it runs "
                              "without the plan and its memory is not the plan's: fit at this call too")
            else:
                warn("no tensors", "a call with no tensor argument runs without the plan, so its memory is not "
                                   "the plan's: call it with the tensors fit was given")
        return own_forward(model, *args, **kwargs)

    forward.acprof_checkpointed = checkpointed
    forward.acprof_recorded_calls = plans  # what it keeps of other calls (read by tests)
    forward.__signature__ = inspect.signature(own_forward.__get__(model))
    forward.__doc__, forward.__name__ = own_forward.__doc__, own_forward.__name__
    uninstall(model)
    model.forward = forward
    return model


def _no_larger(recorded: Any, fitted: Any) -> bool:
    """A recorded result like the fitted one at no larger shape: tensors of the same dtype and rank,
    no dimension larger; tuples element by element; anything else alike."""
    if isinstance(fitted, torch.Tensor):
        return isinstance(recorded, torch.Tensor) and recorded.dtype == fitted.dtype and \
            recorded.dim() == fitted.dim() and all(r <= f for r, f in zip(recorded.shape, fitted.shape))
    if isinstance(fitted, (tuple, list)):
        return isinstance(recorded, (tuple, list)) and len(recorded) == len(fitted) and \
            all(_no_larger(r, f) for r, f in zip(recorded, fitted))
    return True


def _within_fitted(graph, fitted_graph) -> bool:
    """Whether a recorded forward runs the fitted forward's ops, in its order, at no larger shapes:
    where the budget's promise holds (the planner's peak grows with no tensor)."""
    recorded, fitted = list(graph.fx_graph.nodes), list(fitted_graph.fx_graph.nodes)
    return len(recorded) == len(fitted) and all(
        r.op == f.op and r.target == f.target and _no_larger(r.meta.get("val"), f.meta.get("val"))
        for r, f in zip(recorded, fitted))


def _plan_at(model: torch.nn.Module, checkpointed: CheckpointedModule, called: Call) -> tuple:
    """The installed plan on the forward recorded at this call, and whether that forward is within
    the fitted one; (None, False) where the recording is not the profiled graph (other nodes: the
    plan's segments do not name its values). The recording leaves the generator and the buffers as
    they were (EagerGraph keeps them)."""
    installed = model.__dict__.pop("forward")  # recorded is the class's forward, not this one
    with torch_logs_quiet():
        try:
            with positional(model, called):
                graph = capture(model, called.tensors, int((checkpointed.profile or {}).get("meta", {}).get("seed", 0)))
                return (apply_plan(model, checkpointed.plan, profile=checkpointed.profile, graph=graph),
                        _within_fitted(graph, checkpointed.graph))
        except (PlanMismatch, ModelFails):  # another graph, or one that cannot be recorded
            return None, False
        finally:
            model.forward = installed


def uninstall(model: torch.nn.Module) -> None:
    """Takes a plan that fit or apply installed out of the model (nothing where there is none),
    and the plans fit installed in the FSDP units of a sharded one."""
    installed = model.__dict__.get("forward")
    if installed is not None and hasattr(installed, "acprof_checkpointed"):
        del model.__dict__["forward"]
    if sharded.is_sharded_root(model):
        sharded.remove_policies(model)


def installed_plan(model: torch.nn.Module) -> Optional[CheckpointedModule]:
    """The checkpointed graph fit or apply installed in the model, or None."""
    installed = model.__dict__.get("forward")
    return getattr(installed, "acprof_checkpointed", None)


# -- the steps -----------------------------------------------------------------------------------

def _call(example_inputs: Inputs) -> Call:
    """The call fit and estimate make: a tensor or a sequence as positional arguments, a mapping as
    keyword arguments; it must pass at least one tensor."""
    if isinstance(example_inputs, torch.Tensor):
        call = Call.of((example_inputs,), {})
    elif isinstance(example_inputs, Mapping):
        call = Call.of((), example_inputs)
    elif isinstance(example_inputs, (tuple, list)):
        call = Call.of(example_inputs, {})
    else:
        call = None
    if call is None or not call.tensors:
        raise BadInput("example_inputs must be a tensor, a sequence of forward's positional arguments or a "
                       "mapping of its keyword arguments, with at least one tensor")
    return call


def _loss(loss_fn: Optional[Callable[[Any], torch.Tensor]]):
    """The loss backward runs from: the user's, else the model's own where its output carries one
    (a transformers model given `labels` returns its `loss`), else the mean of the output's
    floating-point tensors."""
    return loss_fn if loss_fn is not None else _own_loss_or_mean


def _own_loss_or_mean(output: Any) -> torch.Tensor:
    own = output.get("loss") if isinstance(output, Mapping) else getattr(output, "loss", None)
    if isinstance(own, torch.Tensor) and own.numel() == 1 and own.is_floating_point():
        return own
    return compute_loss(output, "mean", None)


# The training steps fit's verification runs after the profile: one warm-up, then a measured step
# of the model as it was and one with the plan.
VERIFICATION_STEPS = 3


def _trainable(model) -> None:
    if not isinstance(model, torch.nn.Module):
        raise BadInput(f"the model is a {type(model).__name__}, not a torch.nn.Module; pass the module you train")
    if not any(p.requires_grad for p in model.parameters()):
        raise BadInput(f"{type(model).__name__} has no parameter that requires grad, so a training step "
                       "stores nothing to recompute; unfreeze the parameters you train")


def _profile(model, inputs, loss_fn, optimizer, seed, cost: ProfileCost, most_iterations: Optional[int] = None,
             extra_statics: Sequence[dict] = ()) -> tuple:
    loss = _loss(loss_fn)
    with torch_logs_quiet():
        graph = capture(model, inputs, seed, loss=loss)
        try:
            return graph, record_profile(model, inputs, loss=loss, graph=graph, optimizer=optimizer, seed=seed,
                                         cost=cost, most_iterations=most_iterations,
                                         extra_statics=extra_statics)
        except Exception as e:
            raise ModelFails(f"the training step of {type(model).__name__} fails in PyTorch "
                             f"({type(e).__name__}: {first_line(e)}); fix the model or its inputs") from None


def _budget_text(budget: Union[str, int]) -> str:
    if isinstance(budget, bool) or not isinstance(budget, (str, int)):
        raise BadInput(f"budget {budget!r} is neither bytes nor text such as \"6GB\" or \"60%\"")
    return f"{budget}B" if isinstance(budget, int) else budget


def _outcome(profile: dict, budget: str, solver: str) -> dict:
    try:
        return engine.plan_outcome(profile, budget, solver)
    except engine.EngineError as e:
        raise BadInput(str(e)) from None


def _floor_bytes(floor_outcome: dict, peak: int) -> int:
    """The smallest peak a plan reaches, from the outcome of planning for one byte."""
    return peak if floor_outcome["feasible"] else floor_outcome["smallest_peak_bytes"]


def _plan(profile: dict, budget: Union[str, int], solver: str) -> dict:
    outcome = _outcome(profile, _budget_text(budget), solver)
    if not outcome["feasible"]:
        floor = outcome["smallest_peak_bytes"]
        raise InfeasibleBudget(f"no plan fits {budget}: the smallest peak a plan reaches is "
                               f"{engine.format_bytes(floor)} ({floor} B); ask for at least that, or see "
                               "acprof.estimate for what it is made of", floor, outcome["floor"])
    return outcome["plan"]


def _verify(result: FitResult, before: dict, graph, call: Call, loss, optimizer, seed, stepper, buckets) -> None:
    """One step of the model with the plan installed, called as the user calls it (`stepper`: the
    model, or the DDP module around it, whose `buckets` are statics of both steps), against
    `before`, one without it; raises where they differ or the step is over the budget (the caller
    takes the plan out)."""
    model, inputs = result.module, call.tensors
    with positional(model, call):
        after = measure_step(stepper, inputs, loss, seed=seed, optimizer=optimizer, graph=graph, warm_up=False,
                             extra_statics=buckets)
    verdict = compare_steps(before, after, "", None)
    under_ddp = stepper is not model
    differs = bool(verdict["differences"])
    if under_ddp:
        # Every rank takes the same path from here (the diagnosis runs steps through DDP): a
        # difference on one rank is one on all.
        differs = data_parallel.any_rank(stepper, differs)
    if differs:
        shown = "; ".join(verdict["differences"][:2]) or "on another rank"
        # Without DDP: the recorded ops with nothing checkpointed, against the model. A step of them
        # outside DDP all-reduces nothing, so under DDP only the model's own reproducibility is asked.
        captured = None
        if not under_ddp:
            plain = CheckpointedModule(model, graph, dict(result.plan, segments=[]))
            captured = compare_steps(before, measure_step(plain, inputs, loss, seed=seed, optimizer=optimizer,
                                                          warm_up=False), "module.", None)
        if under_ddp or captured["differences"]:
            uninstall(model)
            with positional(model, call):
                again = compare_steps(before, measure_step(stepper, inputs, loss, seed=seed, optimizer=optimizer,
                                                           warm_up=False, extra_statics=buckets), "", None)
            if again["differences"]:
                raise ModelFails(f"{type(model).__name__}'s own training step is not reproducible: two steps with "
                                 f"the same seed differ ({'; '.join(again['differences'][:2])}), so no plan can be "
                                 "verified against it; seed what else it draws from (numpy, random), or pass "
                                 "verify=False")
        if captured is not None and captured["differences"]:
            raise ModelFails(f"{type(model).__name__}'s recorded ops do not train like the module itself even with "
                             f"nothing checkpointed ({'; '.join(captured['differences'][:2])}); please report it "
                             "with the model")
        raise VerificationFailed(f"the checkpointed module does not train like {type(model).__name__} "
                                 f"({shown}); please report it with the model")
    result.measured_peak_bytes = after["peak_bytes"]
    result.verification = {"mode": "bitwise", "max_abs_diff": verdict["max_abs_diff"],
                           "gradients_compared": verdict["gradients_compared"],
                           "buffers_compared": verdict["buffers_compared"],
                           "parameters_compared": verdict["parameters_compared"],
                           "original_measured_peak_bytes": before["peak_bytes"]}
    if result.measured_peak_bytes > result.budget_bytes:
        over = result.measured_peak_bytes - result.budget_bytes
        raise BudgetExceeded(f"the checkpointed module peaked at "
                             f"{engine.format_bytes(result.measured_peak_bytes)}, {engine.format_bytes(over)} over the "
                             f"budget (predicted {engine.format_bytes(result.predicted_peak_bytes)}); please report "
                             "it with the model")


def _read_json(path: str, what: str) -> dict:
    try:
        with open(path) as handle:
            content = json.load(handle)
    except (OSError, ValueError) as e:
        raise BadInput(f"cannot read the {what} {path} ({first_line(e)}); pass the file acprof wrote") from None
    if not isinstance(content, dict):
        raise BadInput(f"the {what} {path} is not an acprof file; pass the file acprof wrote")
    return content
