"""The eager front end as a command: what `acprof profile --module` and `acprof rewrite --module`
run, and usable on its own.

    python -m acprof.eager profile --module pkg.mod:make_model --input float32[32,256] [-o profile.json]
    python -m acprof.eager rewrite --module pkg.mod:make_model [plan.json] [--profile-after profile.after.json]

The factory is `module.path:function` (imported as Python imports it, the working directory
first) or `path/to/file.py:function`; it takes no argument and returns the nn.Module to train.
`profile` records one training step of that module into profile.json (recorder.py) and records
the factory in meta.model_path as `eager:<factory>`, so a later rewrite of its plan finds it.
`rewrite` rebuilds the module, applies the plan (apply.py), and checks one training step of the
result against the original's: loss, gradients and buffers bit for bit, and the measured peak
against the plan's prediction and budget. It writes no model: the plan is the artifact, and a
training script rebuilds the checkpointed module with `acprof.eager.apply_plan(model, "plan.json")`.
With `--profile-after FILE` it writes the checkpointed module's measured step there as a profile
(the acprof binary draws report.html from it and the plan's profile).

Errors are one line, `acprof: error: ...`, and an exit code as the acprof binary's (docs/manual.md,
"Exit codes"); with `--result FILE` (how the binary runs it) the line and the error's kind go to
that file as JSON instead, with the command's result, and the binary prints and exits. Where the
module's own step does not agree with the captured graph's, the error carries the largest
`difference` as data, and the binary words the tolerance that accepts it
(common/include/acprof/unreproducible_step.h, shared with the TorchScript rewrite).
"""

import argparse
import copy
import dataclasses
import importlib
import importlib.util
import json
import os
import re
import sys
import traceback
from typing import Any, Dict, List, Optional, Sequence

import torch

from ..contract import EXIT_CODES, LOSSES, OPTIMIZERS
from .apply import PlanMismatch, apply_plan
from .. import engine
from ..engine import format_bytes, write_json
from ..errors import AcprofError
from .recorder import ProfileCost, TrainingStep, measure_step, print_progress, record_profile
from .timed_pairs import time_pairs
from .step_checks import capture, first_line, torch_logs_quiet
from .verification import compare_steps

EAGER_PREFIX = "eager:"
INPUT_SPEC = re.compile(r"^(float32|float64|float16|bfloat16|int64|int32|bool|float|long)\[([0-9,]*)\]"
                        r"(?::(-?[0-9]+)\.\.(-?[0-9]+))?$")


class CommandError(Exception):
    """An error the command reports as one line with its kind (EXIT_CODES); for a measured peak
    over the budget, the result found before it; for a step that does not agree with itself, the
    largest difference."""

    def __init__(self, kind: str, message: str, result: Optional[dict] = None,
                 difference: Optional[float] = None):
        super().__init__(message)
        self.kind, self.result, self.difference = kind, result, difference


# -- the factory ---------------------------------------------------------------------------------

def factory_reference(text: str) -> str:
    """The factory as meta.model_path records it: a file's path made absolute, so that a rewrite
    from another directory finds it; a module path as given."""
    location, _, function = text.rpartition(":")
    if _is_file(location):
        location = os.path.abspath(location)
    return f"{location}:{function}"


def _is_file(location: str) -> bool:
    return location.endswith(".py") or os.sep in location


def load_factory(text: str):
    """The callable `text` names (module.path:function or path/to/file.py:function)."""
    location, colon, function = text.rpartition(":")
    if not colon or not location or not function:
        raise CommandError("usage", f"--module '{text}' names no factory; write it module.path:make_model or "
                                    "path/to/file.py:make_model")
    try:
        if _is_file(location):
            if not os.path.isfile(location):
                raise CommandError("python_import", f"--module '{text}': no file {location}; pass the path of the "
                                                    "Python file that defines the factory")
            name = "acprof_factory_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(location))[0])
            spec = importlib.util.spec_from_file_location(name, location)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # dataclasses and pickling look their module up by name
            spec.loader.exec_module(module)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())  # as `python -m` does: the working directory first
            module = importlib.import_module(location)
    except CommandError:
        raise
    except BaseException as e:  # a SyntaxError or SystemExit inside the user's module too
        raise CommandError("python_import", f"--module '{text}': {sys.executable} cannot import {location} "
                                            f"({type(e).__name__}: {first_line(e)}); fix that module, or run "
                                            "acprof from the directory it is importable from (or set PYTHONPATH)")
    factory = getattr(module, function, None)
    if not callable(factory):
        raise CommandError("python_import", f"--module '{text}': {location} has no callable {function}; name the "
                                            "function that returns the nn.Module")
    return factory


def make_module(text: str, seed: int) -> torch.nn.Module:
    factory = load_factory(text)
    torch.manual_seed(seed)  # the same weights whenever the factory draws them
    try:
        module = factory()
    except Exception as e:
        raise CommandError("model_fails", f"--module '{text}': the factory raised {type(e).__name__}: "
                                          f"{first_line(e)}")
    if not isinstance(module, torch.nn.Module):
        raise CommandError("bad_input", f"--module '{text}' returned a {type(module).__name__}, not an "
                                        "nn.Module; return the model to train")
    return module


# -- inputs --------------------------------------------------------------------------------------

def parse_input_spec(text: str):
    """(dtype, shape, range) of `float32[32,256]` or `int64[8,512]:0..50257` (input_spec.cpp)."""
    match = INPUT_SPEC.match(re.sub(r"\s", "", text))
    if not match or (match.group(3) is not None and match.group(1) not in ("int64", "int32", "long")):
        raise CommandError("bad_input", f"input spec '{text}' does not parse; write it like float32[32,3,224,224] "
                                        "or int64[8,512]:0..50257")
    dtype = {"float": "float32", "long": "int64"}.get(match.group(1), match.group(1))
    shape = [int(d) for d in match.group(2).split(",") if d]
    low_high = (int(match.group(3)), int(match.group(4))) if match.group(3) is not None else None
    if any(d <= 0 for d in shape) or (low_high and low_high[1] <= low_high[0]):
        raise CommandError("bad_input", f"input spec '{text}': dimensions must be positive and a range low..high "
                                        "not empty (high is exclusive)")
    return dtype, shape, low_high


def make_tensor(text: str) -> torch.Tensor:
    """As synthetic_inputs.cpp makes it: normal floats, integers uniform in [low, high) (default
    [0, 2)), bools from {0, 1}."""
    dtype, shape, low_high = parse_input_spec(text)
    if dtype == "bool":
        return torch.randint(0, 2, shape).to(torch.bool)
    if dtype in ("int64", "int32"):
        low, high = low_high or (0, 2)
        return torch.randint(low, high, shape, dtype=getattr(torch, dtype))
    return torch.randn(shape).to(getattr(torch, dtype))


def make_inputs(specs: Sequence[str], target_spec: str, seed: int):
    """The inputs and target of a step, drawn from one seed in order, inputs first."""
    torch.manual_seed(seed)
    inputs = [make_tensor(s) for s in specs]
    target = make_tensor(target_spec) if target_spec else None
    return inputs, target


def make_optimizer(name: str, module: torch.nn.Module) -> Optional[torch.optim.Optimizer]:
    """The optimizer --optimizer names over the module's parameters, as the C++ recorder makes
    LibTorch's (contract.json's class, lr and momentum; PyTorch's defaults otherwise); None for none."""
    if name in ("", "none"):
        return None
    entry = OPTIMIZERS.get(name)
    if entry is None:
        raise CommandError("usage", f"--optimizer {name} is not one of none, {', '.join(OPTIMIZERS)}")
    options = {"lr": entry["lr"]}
    if entry["momentum"]:
        options["momentum"] = entry["momentum"]
    return getattr(torch.optim, entry["class"])(module.parameters(), **options)


def _loss_name(loss: str, target_spec: str) -> str:
    if loss == "auto":
        return "mean"
    if loss not in LOSSES:
        raise CommandError("usage", f"--loss {loss} is not one of auto, {', '.join(LOSSES)}")
    if loss == "cross_entropy" and not target_spec:
        raise CommandError("usage", "--loss cross_entropy needs --target, e.g. --target int64[32]:0..1000")
    return loss


# -- profile -------------------------------------------------------------------------------------

def profile_command(args) -> dict:
    if not args.input:
        raise CommandError("usage", "--module needs one --input per forward argument, e.g. --input "
                                    "float32[32,256]")
    loss = _loss_name(args.loss, args.target)
    module = make_module(args.module, args.seed)
    inputs, target = make_inputs(args.input, args.target, args.seed)
    optimizer = make_optimizer(args.optimizer, module)
    cost = ProfileCost()  # from here: the capture and the warm-up are the profile's cost too
    with torch_logs_quiet():
        graph = capture(module, inputs, args.seed, args.autocast, loss, target)
        try:
            profile = record_profile(module, inputs, loss=loss, target=target, seed=args.seed, graph=graph,
                                     command=args.command or " ".join(sys.argv), autocast=args.autocast,
                                     optimizer=optimizer, cost=cost, progress=print_progress)
        except Exception as e:
            raise CommandError("model_fails", f"the training step of {args.module} failed: {type(e).__name__}: "
                                              f"{first_line(e)}")
    meta = profile["meta"]
    meta["model_path"] = EAGER_PREFIX + factory_reference(args.module)
    meta["input_specs"] = list(args.input)  # as typed: the value ranges draw the same inputs again
    meta["target_spec"] = args.target or ""
    write_json(profile, args.output)
    summary = profile["summary"]
    if not args.result:
        print(f"profiled one training step of {args.module}: peak {format_bytes(summary['peak_bytes'])}\n"
              f"wrote {args.output}")
    return {"profile": os.path.abspath(args.output), "peak_bytes": summary["peak_bytes"]}


# -- rewrite -------------------------------------------------------------------------------------

def _read_json(path: str, what: str) -> dict:
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError) as e:
        raise CommandError("bad_input", f"cannot read the {what} {path} ({first_line(e)}); pass the {what} "
                                        "acprof wrote")


def _profile_path_of(plan: dict, plan_path: str) -> str:
    """The plan's profile as it names it: from the working directory, else beside the plan."""
    named = plan.get("profile_path", "")
    for candidate in (named, os.path.join(os.path.dirname(os.path.abspath(plan_path)), named)):
        if named and os.path.isfile(candidate):
            return candidate
    raise CommandError("bad_input", f"the plan's profile '{named}' is missing; the rewrite reads the step it "
                                    "profiled from it: run it where the plan was made")


def factory_of_plan(plan: dict, given: str) -> str:
    if given:
        return given
    recorded = plan.get("model_path", "")
    if recorded.startswith(EAGER_PREFIX) and ":" in recorded[len(EAGER_PREFIX):]:
        return recorded[len(EAGER_PREFIX):]
    raise CommandError("usage", f"the plan's model '{recorded}' names no factory (it was profiled from Python); "
                                "pass --module pkg.mod:make_model naming the function that builds that module")


def _shown(differences: List[str]) -> str:
    return f"{'; '.join(differences[:3])} ({len(differences)} difference(s))"


@dataclasses.dataclass
class ProfiledStep:
    """The training step a profile recorded, as the rewrite repeats it: the module's factory and
    seed, its inputs and target, its loss, autocast and optimizer (a fresh one per measured step,
    over the measured module's parameters, as the profile's was)."""
    factory: str
    seed: int
    inputs: Sequence[Any]
    target: Optional[torch.Tensor]
    loss: str
    autocast: str
    optimizer: str = "none"

    def make_module(self) -> torch.nn.Module:
        return make_module(self.factory, self.seed)

    def training_step(self):
        """One training step of a module as the profile's, with an optimizer of the profile's kind
        per module (made at its first step), gradients dropped after it: what timed pairs time."""
        optimizers: Dict[int, Optional[torch.optim.Optimizer]] = {}

        def run(module: torch.nn.Module) -> None:
            if id(module) not in optimizers:
                optimizers[id(module)] = make_optimizer(self.optimizer, module)
            TrainingStep(self.inputs, self.loss, self.target, self.seed, self.autocast,
                         optimizers[id(module)]).run(module, lambda: module(*self.inputs))
            for parameter in module.parameters():
                parameter.grad = None
        return run

    def measure(self, module: torch.nn.Module, profile_meta: Optional[dict] = None) -> dict:
        return measure_step(module, self.inputs, self.loss, self.target, seed=self.seed, autocast=self.autocast,
                            profile_meta=profile_meta, optimizer=make_optimizer(self.optimizer, module))


def _capture_differs(step: ProfiledStep, plan: dict, profile: dict, before: dict,
                     tolerance: Optional[float]) -> Optional[dict]:
    """Where the checkpointed module failed verification: whether the captured graph with nothing
    checkpointed already differs from the module's own step (the differences), or not (None).
    A module whose step draws from outside torch's generator (numpy's) or reads a tensor made from
    Python data anew each call runs differently from the recorded ops, and then no plan can train
    like it."""
    plain = apply_plan(step.make_module(), dict(plan, segments=[]), profile=profile, example_inputs=step.inputs)
    verdict = compare_steps(before, step.measure(plain), "module.", tolerance)
    return verdict if verdict["differences"] else None


def _verify(step: ProfiledStep, plan: dict, profile: dict, original: torch.nn.Module, after: dict,
            tolerance: Optional[float]) -> dict:
    """The verification result of the outcome, or a CommandError naming who is at fault."""
    before = step.measure(original)
    verdict = compare_steps(before, after, "module.", tolerance)
    if verdict["differences"]:
        captured = _capture_differs(step, plan, profile, before, tolerance)
        if captured:
            raise CommandError(
                "model_fails",
                f"{step.factory}'s recorded ops do not train like the module itself, with nothing checkpointed: "
                f"{_shown(captured['differences'])}; the module's step is not the recorded one (random numbers from "
                "outside torch's generator, such as numpy's, or tensors made from Python data each call), so no plan "
                "can be bit for bit", difference=captured["max_abs_diff"])
        raise CommandError("verification_failed",
                           f"the checkpointed module does not train like {step.factory}: "
                           f"{_shown(verdict['differences'])}; report this profile and plan")
    mode = "bitwise" if tolerance is None else "tolerance"
    return {"mode": mode, "tolerance": tolerance, "max_abs_diff": verdict["max_abs_diff"],
            "gradients_compared": verdict["gradients_compared"], "buffers_compared": verdict["buffers_compared"],
            "parameters_compared": verdict["parameters_compared"]}


def rewrite_command(args) -> dict:
    plan_path = args.plan
    plan = _read_json(plan_path, "plan")
    if "segments" not in plan or "predicted_peak_bytes" not in plan:
        raise CommandError("bad_input", f"{plan_path} is not a plan; pass the plan.json `acprof plan` wrote")
    profile_path = _profile_path_of(plan, plan_path)
    profile = _read_json(profile_path, "profile")
    meta = profile["meta"]
    factory = factory_of_plan(plan, args.module)
    seed = int(meta.get("seed", 0))
    inputs, target = make_inputs(meta["input_specs"], meta.get("target_spec", ""), seed)
    step = ProfiledStep(factory, seed, inputs, target, meta.get("loss", "mean"), meta.get("autocast", ""),
                        meta.get("optimizer", "none"))
    module = step.make_module()
    original = copy.deepcopy(module)
    try:
        checkpointed = apply_plan(module, plan, profile=profile, example_inputs=inputs)
    except PlanMismatch as e:
        raise CommandError("bad_input", f"{plan_path} does not fit {factory}: {e}")
    if not plan["segments"]:
        print("the plan has no segment (its budget needs no recompute): the module is the original with nothing "
              "checkpointed; plan with a lower --budget to save memory")
    after_meta = None
    if args.profile_after:
        after_meta = dict(meta, model_path=f"{EAGER_PREFIX}{factory} checkpointed by {os.path.basename(plan_path)}",
                          command=" ".join(sys.argv))
    after = step.measure(checkpointed, profile_meta=after_meta)
    baseline = plan.get("baseline_iteration_time_us", 0)
    # The TorchScript rewrite's outcome, key for key; `time` is filled once the pairs are timed.
    result = {"segments": len(plan["segments"]), "verification": None, "time": None,
              "predicted_extra_share": plan.get("extra_time_us", 0) / baseline if baseline > 0 else 0,
              "peak": {"budget_bytes": plan["budget_bytes"], "predicted_bytes": plan["predicted_peak_bytes"],
                       "before_bytes": profile["summary"]["peak_bytes"], "measured_bytes": after["peak_bytes"]},
              "files": {"plan": os.path.abspath(plan_path), "profile": os.path.abspath(profile_path)}}
    print(f"applied {len(plan['segments'])} segment(s) of {plan_path} to {factory} (eager)")
    if args.no_verify:
        print("not verified (--no-verify)")
    else:
        verification = _verify(step, plan, profile, original, after, args.tolerance)
        result["verification"] = verification
        compared = f"loss, {verification['gradients_compared']} gradients and {verification['buffers_compared']} buffers"
        if args.tolerance is None:
            print(f"verified: {compared} equal the original's bit for bit (max abs diff 0)")
        else:
            print(f"verified within tolerance {args.tolerance:g} (max diff {verification['max_abs_diff']:.3g}): "
                  f"{compared} compared with the original's")
    if args.time_rounds > 0:
        # After the verification, as the TorchScript rewrite times its verified pair: the binary
        # prints the time line and draws report.html's headline from this.
        result["time"] = time_pairs(original, checkpointed, step.training_step(), args.time_rounds)
    print(f"train it in Python: from acprof import eager; model = eager.apply_plan({factory.rpartition(':')[2]}(), "
          f"\"{os.path.abspath(plan_path)}\", example_inputs=inputs)  (the plan is what is kept; its profile "
          f"{os.path.abspath(profile_path)} must stay beside it)")
    if args.profile_after:
        # Written once the module is verified, and before the budget is judged: a peak over it
        # is reported with the timeline that shows where (the TorchScript rewrite keeps its files too).
        write_json(after["profile"], args.profile_after)
        result["files"]["profile_after"] = os.path.abspath(args.profile_after)
    peak = result["peak"]
    measured, predicted = peak["measured_bytes"], peak["predicted_bytes"]
    error = 100.0 * (predicted - measured) / measured if measured > 0 else 0.0
    print(f"peak (allocated): before {format_bytes(peak['before_bytes'])}, predicted {format_bytes(predicted)}, "
          f"measured {format_bytes(measured)} ({error:+.1f}% error), budget {format_bytes(peak['budget_bytes'])}")
    over = measured - peak["budget_bytes"]
    if over > 0:
        raise CommandError("budget_exceeded",
                           f"the checkpointed module peaked at {format_bytes(measured)} ({measured} B), "
                           f"{format_bytes(over)} over the plan's budget of {format_bytes(peak['budget_bytes'])} "
                           f"(predicted {format_bytes(predicted)}); plan again with --budget "
                           f"{max(peak['budget_bytes'] - over, 1)} and report this profile and plan, as the "
                           "prediction missed", result)
    return result


# -- the command ---------------------------------------------------------------------------------

def _tolerance(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise ValueError(text)
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m acprof.eager", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command_name", required=True)
    profile = commands.add_parser("profile", help="record one eager training step into profile.json")
    profile.add_argument("--module", required=True, help="module.path:make_model or path/to/file.py:make_model")
    profile.add_argument("--input", action="append", default=[], help="one spec per forward argument")
    profile.add_argument("--target", default="", help="target spec for --loss cross_entropy")
    profile.add_argument("--loss", default="auto", help=f"auto (mean), {', '.join(LOSSES)}")
    profile.add_argument("--autocast", default="", help="bfloat16: forward and loss under CPU autocast")
    profile.add_argument("--optimizer", default="none", help=f"none, {', '.join(OPTIMIZERS)}: its step after backward")
    profile.add_argument("--seed", type=int, default=0)
    profile.add_argument("-o", "--output", default="profile.json")
    profile.add_argument("--command", default="", help="the command line to record in the profile")
    rewrite = commands.add_parser("rewrite", help="apply plan.json to the module and verify it")
    rewrite.add_argument("plan", nargs="?", default="plan.json")
    rewrite.add_argument("--module", default="", help="the factory (default: the one the profile records)")
    rewrite.add_argument("--no-verify", action="store_true")
    rewrite.add_argument("--tolerance", type=_tolerance, default=None,
                         help="verify within this absolute difference instead of bit for bit")
    rewrite.add_argument("--time-rounds", type=int, default=engine.default_timed_rounds(),
                         help="the fewest pairs of training steps (original, checkpointed) timed for the extra "
                              "time; 0 times none")
    rewrite.add_argument("--profile-after", default="",
                         help="write the checkpointed module's step here as profile.json (report.html's after side)")
    for command in (profile, rewrite):
        command.add_argument("--result", default="", help="write the outcome as JSON here (for the acprof binary)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if args.command_name == "profile" and args.autocast == "off":
        args.autocast = ""
    run = profile_command if args.command_name == "profile" else rewrite_command
    kind, message, result, difference = "", "", None, None
    try:
        result = run(args)
    except CommandError as e:
        kind, message, result, difference = e.kind, str(e), e.result, e.difference
    except AcprofError as e:  # the checks the eager command shares with acprof.fit
        kind, message = e.kind, str(e)
    except Exception as e:
        if os.environ.get("ACPROF_FULL_ERRORS"):
            traceback.print_exc()
        kind = "internal"
        message = (f"{type(e).__name__}: {first_line(e)} (an internal error of acprof's eager front end; please "
                   "report it with the command line, and with ACPROF_FULL_ERRORS=1 set for the traceback)")
    sys.stdout.flush()
    if args.result:
        error = {"kind": kind, "message": message} if kind else None
        if difference is not None:
            error["difference"] = difference
        write_json({"error": error, "result": result}, args.result)
    elif kind:
        shown = f" (differences up to {difference!r}; --tolerance accepts that)" if difference is not None else ""
        print(f"acprof: error: {message}{shown}", file=sys.stderr)
    return EXIT_CODES[kind] if kind else 0
