"""A multilayer perceptron whose every tensor size can be computed by hand.

Architecture (tests/profiler_recorder_test.cpp computes its byte counts from this):

    input  float32[64, 256]
    Linear(256, 512, bias) -> ReLU -> Linear(512, 512, bias) -> ReLU -> Linear(512, 10, bias)
    output float32[64, 10]; loss "mean" of the output, no target.

Weights: 256*512 + 512 + 512*512 + 512 + 512*10 + 10 = 399,370 floats.
Saved for backward: each addmm keeps its input, each ReLU its output, so the two
64x512 ReLU outputs are the activations (the first addmm's input is the model input).
"""

from torch import nn

from specs import TrainingSpecs

BATCH = 64
IN_FEATURES = 256
HIDDEN = 512
CLASSES = 10


def build() -> nn.Module:
    return nn.Sequential(
        nn.Linear(IN_FEATURES, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, CLASSES),
    )


def training_specs() -> TrainingSpecs:
    return TrainingSpecs(inputs=[f"float32[{BATCH},{IN_FEATURES}]"], target="", loss="mean")
