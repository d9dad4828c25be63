"""A multilayer perceptron whose every tensor size can be computed by hand.

Architecture (tests/profiler_recorder_test.cpp computes its byte counts from this):

    input  float32[2048, 64]
    Linear(64, 256) -> ReLU -> 3 x (Linear(256, 256) -> ReLU) -> Linear(256, 10), all with bias
    output float32[2048, 10]; loss "mean" of the output, no target.

Weights: 64*256 + 256 + 3*(256*256 + 256) + 256*10 + 10 = 216,586 floats.
Saved for backward: each addmm keeps its input, each ReLU its output, so the four
2048x256 ReLU outputs are the activations (the first addmm's input is the model input).
The batch is large so that activations, not weights, dominate the peak: the
rewriter's end-to-end tests plan this model at 70 % and 50 % of its peak.
"""

from torch import nn

from specs import TrainingSpecs

BATCH = 2048
IN_FEATURES = 64
HIDDEN = 256
HIDDEN_LAYERS = 4
CLASSES = 10


def build() -> nn.Module:
    layers = [nn.Linear(IN_FEATURES, HIDDEN), nn.ReLU()]
    for _ in range(HIDDEN_LAYERS - 1):
        layers += [nn.Linear(HIDDEN, HIDDEN), nn.ReLU()]
    layers.append(nn.Linear(HIDDEN, CLASSES))
    return nn.Sequential(*layers)


def training_specs() -> TrainingSpecs:
    return TrainingSpecs(inputs=[f"float32[{BATCH},{IN_FEATURES}]"], target="", loss="mean")
