"""The errors acprof's Python API raises: one type per error kind of contract.json, each with the
one-line message (the problem and the fix) and the kind's name as `kind`, so that a script tells
them apart by type or by `kind` and never by parsing the message. The acprof binary maps the same
kinds to its exit codes (contract.EXIT_CODES)."""

from typing import Optional


class AcprofError(Exception):
    """Any error of acprof's Python API."""
    kind = "internal"


class BadInput(AcprofError, ValueError):
    """What the caller passed cannot be used: not a module, a plan made for another model, a
    truncated plan, inputs of a shape the model refuses."""
    kind = "bad_input"


class InfeasibleBudget(AcprofError):
    """No plan fits the budget. `floor_bytes` is the smallest peak the planner reached and
    `floor` what it is made of (the planner's composition: shares by category, largest first)."""
    kind = "infeasible_budget"

    def __init__(self, message: str, floor_bytes: int, floor: Optional[dict] = None):
        super().__init__(message)
        self.floor_bytes, self.floor = floor_bytes, floor


class VerificationFailed(AcprofError):
    """The checkpointed module does not train like the model: acprof's fault, to be reported."""
    kind = "verification_failed"


class BudgetExceeded(AcprofError):
    """The checkpointed module was measured above the budget: acprof's prediction missed."""
    kind = "budget_exceeded"


class ModelFails(AcprofError):
    """The model's own training step fails, or is not reproducible, with acprof or without it."""
    kind = "model_fails"


class StepDeparts(ModelFails):
    """A step of a planned module ran other ops than the profiled step from some node on: an op
    returned another shape or value (the module's Python took another branch or routing), so the
    plan, made for the profiled ops, cannot run it."""
