"""The catalogue: each reference model at a named size, with its training specs.
model_sets.py says which files export_all.py writes from it."""

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Callable, Dict

import torch
from torch import nn

from . import batch_free_trace
from . import bert
from . import cnn
from . import convchain
from . import densenet_like
from . import encoder_masks
from . import export
from . import gpt
from . import inplace_view
from . import loop_lm
from . import lstm_cell_lm
from . import mlp
from . import resnet
from . import rnn_lm
from . import specs
from . import tied_list_inplace
from . import transformer_dict
from . import tuple_out
from . import vit


@dataclass(frozen=True)
class ReferenceModel:
    build: Callable[[], nn.Module]
    training: specs.TrainingSpecs
    # Trace at batch 1 (batch_free_trace.py): for models whose full-size forward is slow on a CPU.
    trace_at_batch_one: bool = False

    def export(self, path: str, mode: str) -> None:
        # Seeded before building so every export of a model, traced or scripted, has the same weights.
        torch.manual_seed(0)
        model = self.build()
        t = self.training
        if mode == "traced" and self.trace_at_batch_one:
            compiled = batch_free_trace.trace_at_batch_one(model, t.inputs)
            export.save_with_specs(compiled, path, t.inputs, t.target, t.loss, t.autocast)
        else:
            export.export(model, specs.make_tensors(t.inputs), path, mode, t.inputs, t.target, t.loss, t.autocast)


def _gpt(config: gpt.GptConfig, batch: int, trace_at_batch_one: bool = False) -> ReferenceModel:
    return ReferenceModel(partial(gpt.build, config), gpt.training_specs(config, batch), trace_at_batch_one)


def _resnet(depth: str, batch: int, image_size: int, trace_at_batch_one: bool = False) -> ReferenceModel:
    return ReferenceModel(partial(resnet.build, depth), resnet.training_specs(batch, image_size), trace_at_batch_one)


# Test-set sizes: each training step stays well under a second on a 2-core CPU.
MLP = ReferenceModel(mlp.build, mlp.training_specs())
# Deep and narrow: 24 ReLU outputs of 1 MiB against 0.4 MiB of weights.
MLP_DEEP = ReferenceModel(partial(mlp.build, hidden_layers=24, hidden=64), mlp.training_specs(batch=4096))
CNN = ReferenceModel(cnn.build, cnn.training_specs(batch=32))
CONVCHAIN9 = ReferenceModel(partial(convchain.build, layers=9), convchain.training_specs())
CONVCHAIN3 = ReferenceModel(partial(convchain.build, layers=3), convchain.training_specs())
RESNET18_SMALL = _resnet("resnet18", batch=2, image_size=64)
GPT_SMALL = _gpt(gpt.GptConfig(layers=2, width=64, heads=4, seq_len=32, vocab=128), batch=4)
# The same decoder at gpt_long's length with F.scaled_dot_product_attention (dropout inside).
GPT_SDPA = _gpt(gpt.GptConfig(layers=2, width=64, heads=4, seq_len=128, vocab=128, attention="sdpa"), batch=4)
# Long enough (128 tokens) that attention scores and MLP activations dominate the weights.
GPT_LONG = _gpt(gpt.GptConfig(layers=4, width=128, heads=4, seq_len=128, vocab=256), batch=4)
# Wide and without dropout, as the peers benchmark's decoder: at its floor the plan cuts
# segments that end with the residual add and the layer norm that reads it, whose
# checkpoint holds the residual's received gradient beside the sum it starts.
GPT_WIDE = _gpt(gpt.GptConfig(layers=4, width=256, heads=4, seq_len=128, vocab=512, dropout=0.0), batch=8)
BERT_SMALL_CONFIG = bert.BertConfig(layers=2, width=64, heads=4, seq_len=32, vocab=128, classes=4)
BERT_SMALL = ReferenceModel(partial(bert.build, BERT_SMALL_CONFIG), bert.training_specs(BERT_SMALL_CONFIG, batch=4))

# Real architecture patterns (issue 9), at test-set sizes whose peak is mostly activations:
# library modules scripted with their checks and raise branches, a constant-trip loop over
# blocks, concatenation of a growing list, tuple and dict outputs, bf16 autocast, and an
# in-place write through a view of an earlier tensor.
TRANSFORMER_DICT = ReferenceModel(transformer_dict.build, transformer_dict.training_specs())
VIT_SMALL = ReferenceModel(vit.build, vit.training_specs())
LOOP_LM = ReferenceModel(loop_lm.build, loop_lm.training_specs())
DENSENET_LIKE = ReferenceModel(densenet_like.build, densenet_like.training_specs())
TUPLE_OUT = ReferenceModel(tuple_out.build, tuple_out.training_specs())
# In-place writes into activations, a list of block outputs, a tied embedding and head: the front ends'
# equivalence check runs on it (tests/python/eager_matches_torchscript_check.py).
TIED_LIST_INPLACE = ReferenceModel(tied_list_inplace.build, tied_list_inplace.training_specs())
# 128 tokens and 4 layers, as gpt_long: attention scores, not weights, set the peak, and
# recompute can remove 71 % of what it could (at 2 layers, 53 %: one block's recompute
# and backward then stay live beside the other's kept inputs).
GPT_AUTOCAST_CONFIG = gpt.GptConfig(layers=4, width=64, heads=4, seq_len=128, vocab=128)
GPT_AUTOCAST = ReferenceModel(
    partial(gpt.build, GPT_AUTOCAST_CONFIG),
    dataclasses.replace(gpt.training_specs(GPT_AUTOCAST_CONFIG, batch=4), autocast="bfloat16"),
)
INPLACE_VIEW = ReferenceModel(inplace_view.build, inplace_view.training_specs())
# A hand-stepped LSTMCell: traced, in-place writes to gate chunks and to a tuple's element.
LSTM_CELL_LM = ReferenceModel(lstm_cell_lm.build, lstm_cell_lm.training_specs())
# nn.LSTM and nn.GRU as they are: scripted, each reads its weights as one list attribute.
RNN_LM = ReferenceModel(rnn_lm.build, rnn_lm.training_specs())
# A library module scripted as it is, forward's optional masks left to their defaults.
ENCODER_MASKS = ReferenceModel(encoder_masks.build, encoder_masks.training_specs())

# The README's default model: a CPU training step of a few seconds whose peak is mostly
# activations, so that the demo's 60 % budget is reachable (ResNet-18 at CPU-friendly
# sizes is mostly weights and gradients).
GPT_DEMO = _gpt(gpt.GptConfig(layers=6, width=128, heads=4, seq_len=256, vocab=256), batch=8)
RESNET18_DEMO = _resnet("resnet18", batch=8, image_size=128)

# What a command costs in training steps (bench/command_cost.py): steps of about a second on
# the 2-core CPU, where the fixed costs (process start, loading, hashing, writing files) weigh
# on the step as on a model users train, not as on the test sizes' steps of milliseconds.
GPT_COST = _gpt(gpt.GptConfig(layers=8, width=256, heads=8, seq_len=256, vocab=512), batch=8)
RESNET18_COST = _resnet("resnet18", batch=16, image_size=192)
VIT_COST = ReferenceModel(partial(vit.build, image_size=96, layers=6, width=192),
                          vit.training_specs(batch=32, image_size=96))

# Benchmark sizes for the GPU machine. A full-size forward takes minutes on a CPU, so they are
# traced at batch 1 once batch_free_trace.py has shown the graph does not depend on the batch;
# the sequence length and image size are traced at their real values.
RESNET50_GPU = _resnet("resnet50", batch=64, image_size=224, trace_at_batch_one=True)
GPT2_GPU = _gpt(gpt.GPT2_SMALL, batch=8, trace_at_batch_one=True)

# By the names that model_sets.py uses.
CATALOGUE: Dict[str, ReferenceModel] = {
    "mlp": MLP,
    "mlp_deep": MLP_DEEP,
    "cnn": CNN,
    "convchain9": CONVCHAIN9,
    "convchain3": CONVCHAIN3,
    "resnet18_small": RESNET18_SMALL,
    "gpt_small": GPT_SMALL,
    "gpt_long": GPT_LONG,
    "gpt_wide": GPT_WIDE,
    "gpt_sdpa": GPT_SDPA,
    "bert_small": BERT_SMALL,
    "transformer_dict": TRANSFORMER_DICT,
    "vit_small": VIT_SMALL,
    "loop_lm": LOOP_LM,
    "densenet_like": DENSENET_LIKE,
    "tuple_out": TUPLE_OUT,
    "tied_list_inplace": TIED_LIST_INPLACE,
    "gpt_autocast": GPT_AUTOCAST,
    "inplace_view": INPLACE_VIEW,
    "lstm_cell_lm": LSTM_CELL_LM,
    "rnn_lm": RNN_LM,
    "encoder_masks": ENCODER_MASKS,
    "resnet18_demo": RESNET18_DEMO,
    "gpt_demo": GPT_DEMO,
    "gpt_cost": GPT_COST,
    "resnet18_cost": RESNET18_COST,
    "vit_cost": VIT_COST,
    "resnet50_gpu": RESNET50_GPU,
    "gpt2_gpu": GPT2_GPU,
}
