"""Running a graph as a sequence of instructions that frees each value after its last reader.

Both the profiled step (one instruction per node) and the cut module (a segment as one
instruction) run through here, so the two release a value at the same point: right after its last
reader, as the FX graph module's generated code and TorchScript's interpreter do. Values in `keep`
(the graph's outputs) are left to the caller.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence


@dataclass
class Instruction:
    reads: List[int]                                  # value ids it reads (repeats allowed)
    run: Callable[[Dict[int, Any]], Dict[int, Any]]   # env -> the values it makes


def run_program(instructions: Sequence[Instruction], env: Dict[int, Any], keep: Sequence[int]) -> None:
    """Runs the instructions over env (value id -> object), deleting each value of env after the
    last instruction that reads it, or right after it is made if none does, unless it is in keep."""
    last_reader: Dict[int, int] = {}
    for i, instruction in enumerate(instructions):
        for v in instruction.reads:
            last_reader[v] = i
    kept = set(keep)
    for i, instruction in enumerate(instructions):
        made = instruction.run(env)
        env.update(made)
        dead = [v for v in made if last_reader.get(v, -1) <= i and v not in kept]
        dead += [v for v in set(instruction.reads) if last_reader.get(v) == i and v not in kept]
        del made
        for v in dead:
            env.pop(v, None)
