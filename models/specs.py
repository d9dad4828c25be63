"""Input specs: the text form in which acprof and the exported models name their inputs.

A spec is ``dtype[d0,d1,...]``, optionally followed by ``:low..high`` for integer dtypes
(``int64[8,512]:0..50257``, high exclusive). The dtypes are float32, float64, float16,
bfloat16, int64, int32 and bool. ``make_tensors`` draws values the way acprof's recorder
does (profiler/recorder/src/training_step.cpp): one seed for all inputs, floats from a
normal distribution drawn in float32 and cast, integers uniform in [low, high) (0..2 when
no range is given), bools as 0/1 integers; so Python checks see the tensors acprof sees.
"""

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

import torch

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}
INTEGER_DTYPES = ("int64", "int32")
# Same default as the recorder's: an integer input without a range is a 0/1 value.
DEFAULT_INTEGER_RANGE = (0, 2)

_SPEC_PATTERN = re.compile(r"^(\w+)\[([0-9,\s]*)\](?::(-?\d+)\.\.(-?\d+))?$")


class SpecError(ValueError):
    pass


@dataclass(frozen=True)
class InputSpec:
    dtype: str
    shape: Tuple[int, ...]
    value_range: Optional[Tuple[int, int]] = None  # [low, high), integer dtypes only

    def __str__(self) -> str:
        text = f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"
        if self.value_range is not None:
            text += f":{self.value_range[0]}..{self.value_range[1]}"
        return text


def parse_spec(text: str) -> InputSpec:
    match = _SPEC_PATTERN.match(text.strip())
    if not match:
        raise SpecError(f"{text!r}: expected dtype[d0,d1,...] with an optional :low..high, e.g. int64[8,512]:0..50257")
    dtype, dims, low, high = match.groups()
    if dtype not in DTYPES:
        raise SpecError(f"{text!r}: unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    shape = tuple(int(d) for d in dims.split(",") if d.strip())
    value_range = None
    if low is not None:
        if dtype not in INTEGER_DTYPES:
            raise SpecError(f"{text!r}: a value range (:low..high) is only allowed for int64 and int32")
        value_range = (int(low), int(high))
        if value_range[1] <= value_range[0]:
            raise SpecError(f"{text!r}: range {low}..{high} is empty (high is exclusive)")
    return InputSpec(dtype, shape, value_range)


def make_tensor(spec: InputSpec) -> torch.Tensor:
    if spec.dtype == "bool":
        return torch.randint(0, 2, spec.shape, dtype=torch.int64).to(torch.bool)
    if spec.dtype in INTEGER_DTYPES:
        low, high = spec.value_range or DEFAULT_INTEGER_RANGE
        return torch.randint(low, high, spec.shape, dtype=DTYPES[spec.dtype])
    return torch.randn(spec.shape, dtype=torch.float32).to(DTYPES[spec.dtype])


def make_tensors(specs: List[str], seed: int = 0) -> List[torch.Tensor]:
    torch.manual_seed(seed)
    return [make_tensor(parse_spec(s)) for s in specs]


@dataclass(frozen=True)
class TrainingSpecs:
    """What one training step of a model needs: its inputs, the loss target, the loss kind
    and the autocast dtype.

    ``target`` is empty when the loss needs none; ``loss`` is one of acprof's kinds
    (mean, sum, cross_entropy); ``autocast`` is empty for a float32 step, or the dtype
    (one of AUTOCAST_DTYPES) whose autocast the forward and the loss run under, as
    `acprof profile --autocast bfloat16` does.
    """

    inputs: List[str]
    target: str
    loss: str
    autocast: str = ""


# The dtypes a stored autocast may name, and the torch dtype each means.
AUTOCAST_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


def parse_autocast(text: str) -> Optional[torch.dtype]:
    """The dtype of a stored autocast record; None when it is empty (no autocast)."""
    if not text:
        return None
    if text not in AUTOCAST_DTYPES:
        raise SpecError(f"autocast {text!r}: use one of {', '.join(AUTOCAST_DTYPES)} (or none)")
    return AUTOCAST_DTYPES[text]
