"""Exports the models of the zoo (scripts/zoo.py) as TorchScript archives that carry their specs.

    python3 scripts/zoo_export.py --list
    python3 scripts/zoo_export.py --model resnet18 --mode traced --out DIR/model.pt [--max-step-seconds 60]

--list prints one JSON object: the torch and torchvision versions and the model names: every
classification model builder of the installed torchvision, then small nn.TransformerEncoder and
nn.TransformerDecoder stacks (d_model 64, 2 layers, batch_first, post-norm and pre-norm).

--set tasks lists torchvision's models for the other tasks instead: segmentation (a dict output,
per-pixel cross entropy over 21 classes), video (clips [N, 3, T, H, W], 400 classes) and optical
flow (two images in, a list of flow estimates out, the mean of each as the loss); and the detection
and quantized builders, which export as skipped with the reason (a training step acprof cannot
run, or a duplicate of a classification model).

--set patterns lists and exports models/patterns.py instead: small models with IR torchvision's
classifiers lack (recurrent layers, frozen parameters, sparse gradients, sampling in forward,
buffers written in forward, lists of block outputs, ...), each with its own inputs and a mean loss.

--set transformers lists and exports models of Hugging Face's transformers library instead: GPT-2,
BERT, Llama and T5, built from their config classes at a small size with random weights (nothing
is downloaded: HF_HUB_OFFLINE=1), attention through torch's scaled_dot_product_attention, token ids
in and the logits' cross entropy against random token ids as the loss.

--set eager lists the zoo's models and the transformers set's together, each in mode `eager`:
instead of an archive, --out names a Python file the exporter writes with a factory,
`make_model()`, that builds the same model (same builder, size and seed), for `acprof profile
--module FILE:make_model`; no TorchScript is involved.

--set reference lists and exports acprof's own reference models instead: those of
models/model_sets.py's test set, at the sizes and in the modes the tests use ("modes" in the
--list answer names each model's), with their own training specs.

--model exports one model with random weights (seed 0, weights=None) in train mode, traced or
scripted, at batch 2 and the smallest square image size (from IMAGE_SIZES) whose forward runs.
The archive stores the input spec, the target and the loss (models/export.py's helper), so
`acprof profile model.pt` needs no flags. It prints one JSON object on stdout:
    {"status": "exported", "inputs": [...], "target": ..., "loss": ..., "step_seconds": ...}
or  {"status": "skipped", "reason": "one line"}
for a model that cannot be exported or whose training step takes longer than --max-step-seconds.
Progress goes to stderr.
"""

import argparse
import copy
import inspect
import json
import os
import re
import sys
import time
import warnings
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torchvision
from torch import nn

# The export helper of the reference models: one place that knows how a model and its
# specs are written (models/export.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from models import export, model_sets, patterns, reference_models, specs, training_step  # noqa: E402
from models.hugging_face import EncoderDecoderLogits, SignalLogits, TokenLogits  # noqa: E402

BATCH = 2  # the smallest batch at which BatchNorm trains on a 1x1 feature map
CLASSES = 1000
# Tried in order: 64 is small enough for a CPU and large enough for most models;
# inception_v3 needs 75, maxvit_t 224 (its grids must divide by its partition size 7).
IMAGE_SIZES = (64, 75, 96, 128, 160, 192, 224, 256, 299)

# Models whose layout is built for one image size; the builder takes it as an argument.
SIZE_ARGUMENTS = {"vit_": "image_size", "maxvit_": "input_size"}

# --set tasks: torchvision's subpackages of models for other tasks.
TASK_PACKAGES = ("segmentation", "video", "optical_flow", "detection", "quantization")
# Those whose training step acprof cannot run: listed, and exported as skipped with the reason.
UNTRAINABLE_PACKAGES = {
    "detection": "in train mode a detection model takes a list of images and a list of target dicts (boxes, "
                 "labels) and returns a dict of losses; acprof's input specs describe tensors",
    "quantization": "quantized, its int8 kernels have no autograd and it cannot train; unquantized "
                    "(quantize=False), it is the float classification model of the same name with quantization "
                    "stubs, which the zoo set trains",
}
SEGMENTATION_CLASSES = 21  # torchvision's default num_classes for its segmentation builders
VIDEO_CLASSES = 400        # and for its video builders (Kinetics-400)
# (frames, side) tried in order: r3d_18 and friends run at 8x64x64; s3d's last pooling needs
# 16x224x224, mvit its built-in 16x224x224.
VIDEO_SIZES = ((8, 64), (16, 64), (8, 112), (16, 112), (16, 160), (16, 224))

TRANSFORMER_WIDTH = 64
TRANSFORMER_HEADS = 4
TRANSFORMER_LAYERS = 2
TRANSFORMER_SEQUENCE = 32
TRANSFORMERS = ("transformer_encoder", "transformer_encoder_norm_first",
                "transformer_decoder", "transformer_decoder_norm_first")


def log(message: str) -> None:
    print(f"zoo_export: {message}", file=sys.stderr, flush=True)


def one_line(error: BaseException) -> str:
    """The first non-empty line of an exception (TorchScript errors span dozens of lines), with the
    next where it ends in a colon (load_state_dict's "Error(s) in loading state_dict for M:" says
    what is wrong on the next). An object's address (`<function f at 0x7f...>`) is left out: it
    differs from run to run, and the docs would too."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else (lines[0] if lines else "no message")
    return f"{type(error).__name__}: {re.sub(r' at 0x[0-9a-f]+', '', text)}"


def torchvision_names() -> List[str]:
    models = torchvision.models
    if hasattr(models, "list_models"):
        # list_models(module=models) names the classification builders only, not the
        # detection, segmentation, video or optical-flow ones (torchvision >= 0.14).
        return sorted(models.list_models(module=models))
    # Older torchvision: the public lower-case functions that torchvision.models itself offers
    # (the detection, segmentation and video builders live in subpackages, not here).
    names = []
    for name, value in vars(models).items():
        module = getattr(value, "__module__", "") or ""
        is_function = callable(value) and not isinstance(value, type)
        if is_function and name.islower() and not name.startswith("_") and module.startswith("torchvision.models.") \
                and not module.startswith("torchvision.models._"):
            names.append(name)
    return sorted(names)


def all_names() -> List[str]:
    return torchvision_names() + list(TRANSFORMERS)


def reference_modes() -> Dict[str, List[str]]:
    """The test set's reference models, each with the modes the tests export it in."""
    modes: Dict[str, List[str]] = {}
    for name, mode in model_sets.SETS["test"].values():
        modes.setdefault(name, [])
        if mode not in modes[name]:
            modes[name].append(mode)
    return modes


def export_reference(name: str, mode: str, out: str) -> Dict:
    if mode not in reference_modes()[name]:
        return {"status": "skipped", "reason": f"the tests export it {' and '.join(reference_modes()[name])} only"}
    reference = reference_models.CATALOGUE[name]
    try:
        reference.export(out, mode)
    except Exception as error:
        return {"status": "skipped", "reason": f"export fails: {one_line(error)}"}
    t = reference.training
    return {"status": "exported", "inputs": t.inputs, "target": t.target, "loss": t.loss}


# ---------------------------------------------------------------- torchvision models


def call_builder(name: str, **kwargs) -> nn.Module:
    """The builder with random weights: weights=None, and weights_backbone=None where it takes
    one (the segmentation builders would otherwise download an ImageNet backbone)."""
    builder = torchvision.models.get_model_builder(name) if hasattr(torchvision.models, "get_model_builder") \
        else getattr(torchvision.models, name)
    if "weights_backbone" in inspect.signature(builder).parameters:
        kwargs["weights_backbone"] = None
    with warnings.catch_warnings():
        # googlenet and inception_v3 warn that their default init will change; not our concern.
        warnings.simplefilter("ignore")
        try:
            return builder(weights=None, **kwargs)
        except TypeError:
            return builder(pretrained=False, **kwargs)  # torchvision < 0.13


def build_torchvision(name: str, image_size: int) -> nn.Module:
    kwargs = {}
    for prefix, argument in SIZE_ARGUMENTS.items():
        if name.startswith(prefix):
            kwargs[argument] = image_size if argument == "image_size" else (image_size, image_size)
    return call_builder(name, **kwargs)


def builds_per_size(name: str) -> bool:
    return any(name.startswith(prefix) for prefix in SIZE_ARGUMENTS)


def image_specs(image_size: int) -> specs.TrainingSpecs:
    return specs.TrainingSpecs(inputs=[f"float32[{BATCH},3,{image_size},{image_size}]"],
                               target=f"int64[{BATCH}]:0..{CLASSES}", loss="cross_entropy")


def forward_runs(model: nn.Module, training: specs.TrainingSpecs) -> Optional[str]:
    """None if a train-mode forward runs on the spec's inputs, else why not (one line)."""
    try:
        with torch.no_grad():
            model(*specs.make_tensors(training.inputs))
        return None
    except Exception as error:  # any failure means: this size does not fit the model
        return one_line(error)


def smallest_working(name: str, sizes: Sequence, build_at: Callable[[object], nn.Module],
                     training_at: Callable[[object], specs.TrainingSpecs],
                     rebuild_per_size: bool) -> Tuple[nn.Module, specs.TrainingSpecs]:
    """The model at the first of `sizes` whose forward runs, with its freshly initialised
    weights and buffers (the trial forwards move BatchNorm statistics)."""
    model = None
    last_error = ""
    for size in sizes:
        if model is None or rebuild_per_size:
            torch.manual_seed(0)
            try:
                model = build_at(size)
            except (ValueError, AssertionError) as error:  # maxvit_t (ValueError), vit_h_14 (patch 14) refuse sizes
                # they cannot divide when built
                last_error = one_line(error)
                log(f"{name}: cannot be built for {size}: {last_error}")
                continue
            model.train()
        training = training_at(size)
        # The trial runs on a copy, so the model returned keeps its initial state. (A
        # state_dict round trip would not do: deepcopy drops its version metadata, which
        # MNASNet's loader requires.)
        last_error = forward_runs(copy.deepcopy(model), training)
        if last_error is None:
            log(f"{name}: forward runs at {', '.join(training.inputs)}")
            return model, training
        log(f"{name}: no forward at {size}: {last_error}")
    raise RuntimeError(f"no input size in {sizes[0]}..{sizes[-1]} works; at {sizes[-1]}: {last_error}")


def smallest_working_torchvision(name: str) -> Tuple[nn.Module, specs.TrainingSpecs]:
    """A classification model at the smallest IMAGE_SIZES entry it runs at. inception_v3 ends
    up at 299: in train mode its auxiliary head needs a larger map than the 75x75 its main
    branch accepts."""
    return smallest_working(name, IMAGE_SIZES, lambda size: build_torchvision(name, size), image_specs,
                            builds_per_size(name))


# ---------------------------------------------------------------- torchvision's other tasks


class NotTrainable(Exception):
    """A model whose training step acprof cannot run; the message says why."""


def task_package(name: str) -> Optional[str]:
    for package in TASK_PACKAGES:
        if name in torchvision.models.list_models(module=getattr(torchvision.models, package)):
            return package
    return None


def task_names() -> List[str]:
    if not hasattr(torchvision.models, "list_models"):
        raise SystemExit(f"--set tasks needs torchvision >= 0.14 (list_models); this is {torchvision.__version__}")
    return sorted(name for package in TASK_PACKAGES
                  for name in torchvision.models.list_models(module=getattr(torchvision.models, package)))


def segmentation_specs(side: int) -> specs.TrainingSpecs:
    return specs.TrainingSpecs(inputs=[f"float32[{BATCH},3,{side},{side}]"],
                               target=f"int64[{BATCH},{side},{side}]:0..{SEGMENTATION_CLASSES}", loss="cross_entropy")


def video_specs(size: Tuple[int, int]) -> specs.TrainingSpecs:
    frames, side = size
    return specs.TrainingSpecs(inputs=[f"float32[{BATCH},3,{frames},{side},{side}]"],
                               target=f"int64[{BATCH}]:0..{VIDEO_CLASSES}", loss="cross_entropy")


def optical_flow_specs(side: int) -> specs.TrainingSpecs:
    image = f"float32[{BATCH},3,{side},{side}]"
    return specs.TrainingSpecs(inputs=[image, image], target="", loss="mean")


def build_task(name: str) -> Tuple[nn.Module, specs.TrainingSpecs]:
    package = task_package(name)
    if package in UNTRAINABLE_PACKAGES:
        raise NotTrainable(UNTRAINABLE_PACKAGES[package])
    if package == "segmentation":
        return smallest_working(name, IMAGE_SIZES, lambda _: call_builder(name), segmentation_specs, False)
    if package == "video":
        return smallest_working(name, VIDEO_SIZES, lambda _: call_builder(name), video_specs, False)
    return smallest_working(name, IMAGE_SIZES, lambda _: call_builder(name), optical_flow_specs, False)


# ---------------------------------------------------------------- transformer stacks


class EncoderStack(nn.Module):
    """nn.TransformerEncoder called with the sequence only. Scripted, the bare module's forward
    also takes its two optional masks, and acprof wants one input spec per forward argument."""

    def __init__(self, encoder: nn.TransformerEncoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        return self.encoder(src)


class DecoderStack(nn.Module):
    """nn.TransformerDecoder called with (tgt, memory) only, for the same reason (it has four
    optional masks)."""

    def __init__(self, decoder: nn.TransformerDecoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        return self.decoder(tgt, memory)


def build_transformer(name: str) -> Tuple[nn.Module, specs.TrainingSpecs]:
    norm_first = name.endswith("_norm_first")
    layer_arguments = dict(d_model=TRANSFORMER_WIDTH, nhead=TRANSFORMER_HEADS, dim_feedforward=4 * TRANSFORMER_WIDTH,
                           batch_first=True, norm_first=norm_first)
    # A pre-norm stack ends in a LayerNorm of its own (the last layer's output is un-normalised).
    final_norm = nn.LayerNorm(TRANSFORMER_WIDTH) if norm_first else None
    sequence = f"float32[{BATCH},{TRANSFORMER_SEQUENCE},{TRANSFORMER_WIDTH}]"
    torch.manual_seed(0)
    if name.startswith("transformer_encoder"):
        model = EncoderStack(nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer_arguments), TRANSFORMER_LAYERS,
                                                   norm=final_norm))
        inputs = [sequence]
    else:
        model = DecoderStack(nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer_arguments), TRANSFORMER_LAYERS,
                                                   norm=final_norm))
        inputs = [sequence, sequence]
    model.train()
    return model, specs.TrainingSpecs(inputs=inputs, target="", loss="mean")


# ---------------------------------------------------------------- Hugging Face transformers

# Nothing may come from a hub: each model is built from its config class, with random weights. Set
# before transformers is imported (huggingface_hub reads it then), which only the transformers set
# does: the other sets neither need the library nor pay seconds per export for its import.
os.environ["HF_HUB_OFFLINE"] = "1"

HF_VOCABULARY = 1000
HF_WIDTH = 128
HF_HEADS = 4
HF_LAYERS = 2
HF_SEQUENCE = 64
# name -> (model class, config class, the config's size arguments in that class's own names).
HF_MODELS = {
    "bert_masked_lm": ("BertForMaskedLM", "BertConfig",
                       dict(hidden_size=HF_WIDTH, num_hidden_layers=HF_LAYERS, num_attention_heads=HF_HEADS,
                            intermediate_size=4 * HF_WIDTH, max_position_embeddings=HF_SEQUENCE)),
    # GPT-2's begin and end of text are its vocabulary's last token, as 50256 is at full size.
    "gpt2_lm_head": ("GPT2LMHeadModel", "GPT2Config",
                     dict(n_embd=HF_WIDTH, n_layer=HF_LAYERS, n_head=HF_HEADS, n_positions=HF_SEQUENCE,
                          bos_token_id=HF_VOCABULARY - 1, eos_token_id=HF_VOCABULARY - 1)),
    # Grouped-query attention, as Llama 2 70B and Llama 3 have it: two key-value heads for four query heads.
    "llama_causal_lm": ("LlamaForCausalLM", "LlamaConfig",
                        dict(hidden_size=HF_WIDTH, num_hidden_layers=HF_LAYERS, num_attention_heads=HF_HEADS,
                             num_key_value_heads=HF_HEADS // 2, intermediate_size=4 * HF_WIDTH,
                             max_position_embeddings=HF_SEQUENCE)),
    "t5_conditional_generation": ("T5ForConditionalGeneration", "T5Config",
                                  dict(d_model=HF_WIDTH, d_kv=HF_WIDTH // HF_HEADS, d_ff=4 * HF_WIDTH,
                                       num_layers=HF_LAYERS, num_heads=HF_HEADS)),
    # A second grouped-query-attention decoder family, with biases on q, k and v.
    "qwen2_causal_lm": ("Qwen2ForCausalLM", "Qwen2Config",
                        dict(hidden_size=HF_WIDTH, num_hidden_layers=HF_LAYERS, num_attention_heads=HF_HEADS,
                             num_key_value_heads=HF_HEADS // 2, intermediate_size=4 * HF_WIDTH,
                             max_position_embeddings=HF_SEQUENCE)),
    # Mixture of experts: top-2 of four experts per token, routing that depends on the data.
    "mixtral_causal_lm": ("MixtralForCausalLM", "MixtralConfig",
                          dict(hidden_size=HF_WIDTH, num_hidden_layers=HF_LAYERS, num_attention_heads=HF_HEADS,
                               num_key_value_heads=HF_HEADS // 2, intermediate_size=2 * HF_WIDTH,
                               num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=HF_SEQUENCE)),
    "opt_causal_lm": ("OPTForCausalLM", "OPTConfig",
                      dict(hidden_size=HF_WIDTH, num_hidden_layers=HF_LAYERS, num_attention_heads=HF_HEADS,
                           ffn_dim=4 * HF_WIDTH, word_embed_proj_dim=HF_WIDTH, max_position_embeddings=HF_SEQUENCE)),
    "roberta_masked_lm": ("RobertaForMaskedLM", "RobertaConfig",
                          dict(hidden_size=HF_WIDTH, num_hidden_layers=HF_LAYERS, num_attention_heads=HF_HEADS,
                               intermediate_size=4 * HF_WIDTH, max_position_embeddings=HF_SEQUENCE + 2)),
    # Vision and audio, called with pixels and with a waveform (HF_SIGNALS).
    "vit_image_classification": ("ViTForImageClassification", "ViTConfig",
                                 dict(hidden_size=HF_WIDTH, num_hidden_layers=HF_LAYERS, num_attention_heads=HF_HEADS,
                                      intermediate_size=4 * HF_WIDTH, image_size=32, patch_size=4, num_labels=10)),
    "wav2vec2_ctc": ("Wav2Vec2ForCTC", "Wav2Vec2Config",
                     dict(hidden_size=HF_WIDTH, num_hidden_layers=HF_LAYERS, num_attention_heads=HF_HEADS,
                          intermediate_size=4 * HF_WIDTH, conv_dim=(32, 32), conv_stride=(5, 4), conv_kernel=(10, 8),
                          num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, vocab_size=32)),
}
# wav2vec2 without SpecAugment: its time masks are numpy's draws (_compute_mask_indices), which no
# torch seed repeats, so the model above does not train alike twice, and acprof says so.
HF_MODELS["wav2vec2_ctc_without_spec_augment"] = HF_MODELS["wav2vec2_ctc"][:2] + (
    dict(HF_MODELS["wav2vec2_ctc"][2], mask_time_prob=0.0),)
# The models above called with a signal instead of token ids: the argument and its spec.
HF_SIGNALS = {
    "vit_image_classification": ("pixel_values", f"float32[{BATCH},3,32,32]"),
    "wav2vec2_ctc": ("input_values", f"float32[{BATCH},4000]"),
    "wav2vec2_ctc_without_spec_augment": ("input_values", f"float32[{BATCH},4000]"),
}


def transformers_version() -> str:
    import transformers
    return transformers.__version__


def build_hugging_face(name: str) -> Tuple[nn.Module, specs.TrainingSpecs]:
    import transformers
    model_class, config_class, sizes = HF_MODELS[name]
    # "sdpa" named rather than left to the default, so that attention stays the op PyTorch 2 users'
    # models call (aten::scaled_dot_product_attention) should the default change. No key-value
    # cache: a training step has no use for one. Dropout is each config's default.
    sizes = dict({"vocab_size": HF_VOCABULARY}, **sizes)
    if name not in HF_SIGNALS:
        sizes["use_cache"] = False
    config = getattr(transformers, config_class)(attn_implementation="sdpa", **sizes)
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(config)
    model.train()
    if name in HF_SIGNALS:
        argument, signal = HF_SIGNALS[name]
        return SignalLogits(model, argument), specs.TrainingSpecs(inputs=[signal], target="", loss="mean")
    tokens = f"int64[{BATCH},{HF_SEQUENCE}]:0..{HF_VOCABULARY}"
    if config.is_encoder_decoder:
        return EncoderDecoderLogits(model), specs.TrainingSpecs(inputs=[tokens, tokens], target=tokens,
                                                                loss="cross_entropy")
    return TokenLogits(model), specs.TrainingSpecs(inputs=[tokens], target=tokens, loss="cross_entropy")


# ---------------------------------------------------------------- one model


def training_step_seconds(model: nn.Module, training: specs.TrainingSpecs, limit_seconds: float) -> Tuple[float, bool]:
    """Wall time of one eager forward, loss and backward, the loss as acprof computes it: what
    decides whether the model is small enough for the zoo. Returns (seconds, whole step); a forward
    that alone runs past `limit_seconds` is not followed by its backward (the step can only take
    longer), which saves minutes per mode on the video transformers. Leaves no gradients behind."""
    tensors = specs.make_tensors(training.inputs + ([training.target] if training.target else []))
    inputs = tensors[:len(training.inputs)]
    target = tensors[-1] if training.target else None
    started = time.perf_counter()
    output = model(*inputs)
    if time.perf_counter() - started > limit_seconds:
        return time.perf_counter() - started, False
    training_step.compute_loss(output, training.loss, target).backward()
    seconds = time.perf_counter() - started
    model.zero_grad(set_to_none=True)
    return seconds, True


EAGER_MODE = "eager"


def eager_names() -> List[str]:
    return all_names() + sorted(HF_MODELS)


def eager_source_set(name: str) -> str:
    """The set whose builder makes an eager-set model."""
    return "transformers" if name in HF_MODELS else "zoo"


def write_factory(name: str, out: str) -> None:
    """A Python file whose make_model() builds the model as this exporter does (acprof seeds the
    generator before calling it, as build's builders expect)."""
    scripts = os.path.dirname(os.path.abspath(__file__))
    with open(out, "w") as handle:
        handle.write(f"# Written by scripts/zoo_export.py --set eager: the zoo's {name} as an eager module.\n"
                     f"import sys\nsys.path.insert(0, {scripts!r})\nimport zoo_export  # noqa: E402\n\n\n"
                     f"def make_model():\n    return zoo_export.build({name!r}, {eager_source_set(name)!r})[0]\n")


def build(name: str, model_set: str) -> Tuple[nn.Module, specs.TrainingSpecs]:
    if model_set == "eager":
        return build(name, eager_source_set(name))
    if model_set == "tasks":
        return build_task(name)
    if model_set == "patterns":
        torch.manual_seed(0)
        return patterns.PATTERNS[name]()
    if model_set == "transformers":
        return build_hugging_face(name)
    if name in TRANSFORMERS:
        return build_transformer(name)
    return smallest_working_torchvision(name)


def export_model(name: str, mode: str, out: str, max_step_seconds: float, model_set: str) -> Dict:
    try:
        model, training = build(name, model_set)
    except NotTrainable as reason:
        return {"status": "skipped", "reason": str(reason)}
    except Exception as error:
        return {"status": "skipped", "reason": f"cannot be built: {one_line(error)}"}

    # The step time is measured on a copy: the step moves BatchNorm statistics, and the
    # exported file must hold the freshly initialised model.
    try:
        timed = copy.deepcopy(model)
    except RuntimeError:  # a non-leaf tensor attribute (nn.utils.weight_norm's weight): build it again
        timed, _ = build(name, model_set)
    step_seconds, whole_step = training_step_seconds(timed, training, max_step_seconds)
    if not whole_step:
        return {"status": "skipped", "reason": f"its forward alone takes {step_seconds:.0f} s on this CPU "
                                               f"(limit {max_step_seconds:.0f} s for the whole training step)"}
    log(f"{name}: one eager training step takes {step_seconds:.2f} s")
    if step_seconds > max_step_seconds:
        return {"status": "skipped",
                "reason": f"one training step takes {step_seconds:.0f} s on this CPU (limit {max_step_seconds:.0f} s)"}

    if mode == EAGER_MODE:
        write_factory(name, out)
        return {"status": "exported", "inputs": training.inputs, "target": training.target, "loss": training.loss,
                "step_seconds": round(step_seconds, 3)}
    example_inputs = specs.make_tensors(training.inputs)
    try:
        export.export(model, example_inputs, out, mode, training.inputs, training.target, training.loss)
    except Exception as error:
        what = "torch.jit.script" if mode == "scripted" else "torch.jit.trace"
        return {"status": "skipped", "reason": f"{what} fails: {one_line(error)}"}
    return {"status": "exported", "inputs": training.inputs, "target": training.target, "loss": training.loss,
            "step_seconds": round(step_seconds, 3)}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="print the versions and the model names as JSON")
    parser.add_argument("--model", help="name from --list")
    parser.add_argument("--mode", choices=export.MODES + (EAGER_MODE,), default="traced",
                        help="traced or scripted (an archive), or eager (a factory file; --set eager)")
    parser.add_argument("--out", help="archive to write")
    parser.add_argument("--max-step-seconds", type=float, default=60.0,
                        help="skip a model whose eager training step takes longer (default 60)")
    parser.add_argument("--set", choices=("zoo", "tasks", "patterns", "transformers", "eager", "reference"),
                        default="zoo",
                        help="torchvision's classification and nn.Transformer models (zoo), torchvision's models "
                             "for other tasks, models/patterns.py, Hugging Face transformers models, the zoo's and "
                             "the transformers' models as eager modules, or acprof's test-set reference models")
    args = parser.parse_args(argv)
    if (args.set == "eager") != (args.mode == EAGER_MODE) and not args.list:
        parser.error("--set eager exports in --mode eager, and --mode eager only for --set eager")

    names = {"zoo": all_names, "tasks": task_names, "patterns": lambda: sorted(patterns.PATTERNS),
             "transformers": lambda: sorted(HF_MODELS), "eager": eager_names,
             "reference": lambda: sorted(reference_modes())}[args.set]()
    if args.list:
        listing = {"torch": torch.__version__, "torchvision": torchvision.__version__, "models": names}
        if args.set == "reference":
            listing["modes"] = reference_modes()
        if args.set == "eager":
            listing["modes"] = {name: [EAGER_MODE] for name in names}
        if args.set in ("transformers", "eager"):
            listing["transformers"] = transformers_version()
        print(json.dumps(listing))
        return 0
    if not args.model or not args.out:
        parser.error("pass --list, or --model and --out")
    if args.model not in names:
        parser.error(f"unknown model {args.model!r}; see --list --set {args.set}")
    torch.set_grad_enabled(True)
    if args.set == "reference":
        print(json.dumps(export_reference(args.model, args.mode, args.out)), flush=True)
    else:
        print(json.dumps(export_model(args.model, args.mode, args.out, args.max_step_seconds, args.set)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
