"""A multilayer perceptron whose every tensor size can be computed by hand.

Architecture (tests/profiler_recorder_test.cpp computes its byte counts from this):

    input  float32[2048, 64]
    Linear(64, 256) -> ReLU -> 3 x (Linear(256, 256) -> ReLU) -> Linear(256, 10), all with bias
    output float32[2048, 10]; loss "mean" of the output, no target.

Weights: 64*256 + 256 + 3*(256*256 + 256) + 256*10 + 10 = 216,586 floats.
Saved for backward: each addmm keeps its input, each ReLU its output, so the four
2048x256 ReLU outputs are the activations (the first addmm's input is the model input).

build() and training_specs() take the depth, width and batch: the planner's and
rewriter's end-to-end tests use a deep narrow variant (reference_models.MLP_DEEP)
whose peak is mostly activations, so that 70 % and 50 % of it are reachable.
"""

from torch import nn

from .specs import TrainingSpecs

BATCH = 2048
IN_FEATURES = 64
HIDDEN = 256
HIDDEN_LAYERS = 4
CLASSES = 10


def build(hidden_layers: int = HIDDEN_LAYERS, hidden: int = HIDDEN) -> nn.Module:
    layers = [nn.Linear(IN_FEATURES, hidden), nn.ReLU()]
    for _ in range(hidden_layers - 1):
        layers += [nn.Linear(hidden, hidden), nn.ReLU()]
    layers.append(nn.Linear(hidden, CLASSES))
    return nn.Sequential(*layers)


def training_specs(batch: int = BATCH) -> TrainingSpecs:
    return TrainingSpecs(inputs=[f"float32[{batch},{IN_FEATURES}]"], target="", loss="mean")
