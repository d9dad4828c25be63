"""acprof's C++ engine in this process: the profile's derivation and the planner.

The Python package collects (the eager recorder writes an event-stream document); the engine,
the same C++ the acprof binary runs, derives profile.json from it and plans it, so each rule is
stated once, in C++ (python/engine/engine_module.cpp). Documents cross as JSON, checked by the
formats' own readers. An engine error is EngineError, whose `kind` is the error kind's name in
contract.json ("bad_input", "infeasible_budget", ...).
"""

import json
import os
from typing import Optional

from .contract import EVENT_STREAM_SCHEMA_VERSION

try:
    from . import _engine
except ImportError as _missing:  # the package's files without the build that makes the module
    _engine = None
    _why_missing = f"{type(_missing).__name__}: {_missing}"

__all__ = ["EngineError", "EngineMissing", "require", "profile_from_event_stream", "plan_outcome", "plan",
           "budget_bytes", "format_bytes", "write_json", "more_iterations_wanted", "timing_stop", "another_pair_fits",
           "process_age_seconds", "step_times", "default_timed_rounds", "default_measured_iterations"]


class EngineMissing(ImportError):
    """acprof._engine is not beside this package: it was installed or copied without the build."""


def require():
    """The engine module; raises EngineMissing naming the fix where it is absent or from another build."""
    return _module()


def _module():
    if _engine is None:
        raise EngineMissing(
            f"acprof: the engine module acprof._engine is missing beside {os.path.dirname(os.path.abspath(__file__))} "
            f"({_why_missing}); build acprof (scripts/setup.sh builds it into python/acprof/) before using this package")
    if _engine.event_stream_schema_version != EVENT_STREAM_SCHEMA_VERSION:
        raise EngineMissing(
            f"acprof: the engine module reads event streams of version {_engine.event_stream_schema_version}, this "
            f"package writes version {EVENT_STREAM_SCHEMA_VERSION}; rebuild acprof so that both come from one build")
    return _engine


# The exception type the engine raises (acprof._engine.Error, with `kind`); without the engine,
# the calls raise EngineMissing before any could.
EngineError = _engine.Error if _engine is not None else EngineMissing


def profile_from_event_stream(stream: dict, source_name: str = "event stream") -> dict:
    """profile.json's content derived by the engine from an event-stream document
    (profiler/format/include/acprof/event_stream_format.h)."""
    return json.loads(_module().profile_from_event_stream(json.dumps(stream), source_name))


def plan_outcome(profile: dict, budget: str, solver: str = "auto", profile_path: str = "") -> dict:
    """The planner's outcome for a profile and a budget as users type it ("6GB", "60%"), as data:
    {"feasible": True, "plan": plan.json's content} or {"feasible": False, "smallest_peak_bytes",
    "floor": what that peak is made of, "message"}. Bad input raises EngineError."""
    return json.loads(_module().plan_outcome(json.dumps(profile), budget, solver, profile_path))


def plan(profile: dict, budget: str, solver: str = "auto", profile_path: str = "") -> dict:
    """plan.json's content for a profile and a budget; raises EngineError of kind
    "infeasible_budget", with the outcome as `outcome`, where no plan fits."""
    outcome = plan_outcome(profile, budget, solver, profile_path)
    if outcome["feasible"]:
        return outcome["plan"]
    error = EngineError(outcome["message"])
    error.kind, error.outcome = "infeasible_budget", outcome
    raise error


def more_iterations_wanted(iteration_us, most_iterations: int, spent_seconds: Optional[float] = None,
                           step_seconds: float = 0.0, after_seconds: float = 0.0) -> bool:
    """Whether a profile measures one more iteration after those whose wall times (us) are
    `iteration_us`: the LibTorch recorder's rule (profiler/format/include/acprof/measured_iterations.h),
    at most `most_iterations`; given `spent_seconds` (the command's time so far), `step_seconds` (one
    plain training step) and `after_seconds` (what runs after the last iteration), only while one
    more keeps the profile within its budget of training steps."""
    return _module().more_iterations_wanted([float(t) for t in iteration_us], int(most_iterations), spent_seconds,
                                            float(step_seconds), float(after_seconds))


def default_measured_iterations() -> int:
    """The most measured iterations of a profile unless asked for others (acprof profile --iters)."""
    return _module().default_measured_iterations


def default_timed_rounds() -> int:
    """The fewest timed pairs of a rewrite unless asked for others (acprof rewrite --time-rounds)."""
    return _module().default_timed_rounds


def timing_stop(extra_shares, timed_seconds: float, min_rounds: int, another_pair_fits: bool = True) -> Optional[str]:
    """Why a rewrite's timed pairs stop ("precise", "time_limit", "step_budget", "pair_limit"), or
    None while one more pair is wanted: the TorchScript rewrite's rule
    (common/include/acprof/pair_timing.h), on the pairs' shares (rewritten - original) / original."""
    return _module().timing_stop([float(x) for x in extra_shares], float(timed_seconds), int(min_rounds),
                                 bool(another_pair_fits))


def another_pair_fits(spent_seconds: float, original_seconds: float, rewritten_seconds: float) -> bool:
    """Whether one more pair of steps keeps a rewrite within its budget of the original's steps."""
    return _module().another_pair_fits(float(spent_seconds), float(original_seconds), float(rewritten_seconds))


def process_age_seconds() -> float:
    """Wall seconds since this process started, as the binary's commands count their cost."""
    return _module().process_age_seconds()


def step_times(original_us, rewritten_us, timed_seconds: float, stopped_by: str) -> dict:
    """The rewrite outcome's `time` from the pairs' step times: the original's median step, the
    median extra share and its standard error, the pairs, why they stopped and the verdict."""
    return json.loads(_module().step_times([float(x) for x in original_us], [float(x) for x in rewritten_us],
                                           float(timed_seconds), stopped_by))


def budget_bytes(budget: str, profiled_peak_bytes: int) -> int:
    """The bytes of a budget as users type it ("6GB", "512MiB", "60%" of the profiled peak), read
    by the planner's own parser (planner/include/acprof/budget.h); raises EngineError."""
    return _module().budget_bytes(budget, int(profiled_peak_bytes))


def format_bytes(count: int) -> str:
    """Bytes as acprof prints them everywhere ("1.50 MiB")."""
    return _module().format_bytes(int(count))


def write_json(content: dict, path: str, indent: Optional[int] = 1) -> None:
    """Writes content as JSON to path, whole or not at all, as every acprof file is written."""
    _module().write_file_atomically(path, json.dumps(content, indent=indent) + "\n")
