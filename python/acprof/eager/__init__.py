"""acprof's eager front end: profile, plan and checkpoint a plain nn.Module, no TorchScript.

    from acprof import eager
    graph = eager.EagerGraph(model, inputs)                       # the ops one eager forward runs
    eager.record_profile(model, inputs, loss="cross_entropy", target=target,
                         path="profile.json", graph=graph)        # one eager training step
    # acprof plan profile.json --budget 70%                       # the same planner
    checkpointed = eager.apply_plan(model, "plan.json", graph=graph)
    loss = ...(checkpointed(*inputs)); loss.backward()            # trains model's parameters

profile.json is the format `acprof profile` writes (its schema version is contract.json's); the planner
plans it unchanged.
"""

from .apply import CheckpointedModule, PlanMismatch, apply_plan
from .graph import EagerGraph
from .recorder import compute_loss, measure_step, record_profile

__all__ = ["EagerGraph", "record_profile", "measure_step", "apply_plan", "CheckpointedModule", "PlanMismatch",
           "compute_loss"]
