"""The head-to-head benchmark's models (scripts/bench_head_to_head.py): Hugging Face GPT-2 and BERT
from small random configs, acprof's own GPT, torchvision's ResNet-50 and a small ViT-B/16 layout,
each with its training specs and where its blocks are (what per-block and selective checkpointing
wrap), and any model of the reference catalogue (reference_models.py) by its name.
"""

import functools
from dataclasses import dataclass
from typing import Callable, Dict

from torch import nn

from . import gpt, hugging_face, reference_models, specs


@dataclass
class BenchModel:
    build: Callable[[], nn.Module]  # called right after torch.manual_seed(0)
    training: specs.TrainingSpecs
    # The container whose children are the model's blocks, from the model: what per-block and
    # selective checkpointing wrap, as a user would place them by hand.
    blocks: Callable[[nn.Module], nn.Module]


def tokens(batch: int, length: int, vocabulary: int) -> specs.TrainingSpecs:
    spec = f"int64[{batch},{length}]:0..{vocabulary}"
    return specs.TrainingSpecs(inputs=[spec], target=spec, loss="cross_entropy")


def images(batch: int, side: int, classes: int = 1000) -> specs.TrainingSpecs:
    return specs.TrainingSpecs(inputs=[f"float32[{batch},3,{side},{side}]"], target=f"int64[{batch}]:0..{classes}",
                               loss="cross_entropy")


def torchvision_model(name: str, **kwargs) -> nn.Module:
    import torchvision
    return torchvision.models.get_model(name, weights=None, **kwargs).train()


def vision_transformer(layers: int, heads: int, width: int) -> nn.Module:
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=224, patch_size=16, num_layers=layers, num_heads=heads, hidden_dim=width,
                             mlp_dim=4 * width).train()


def resnet_blocks(model: nn.Module) -> nn.Module:
    """ResNet's bottlenecks, the four stages' children, as one list (a view: the stages keep them)."""
    return ListOfContainers([model.layer1, model.layer2, model.layer3, model.layer4])


class ListOfContainers:
    """Several block containers walked as one, for wrap_blocks."""

    def __init__(self, containers):
        self.containers = containers


# Sizes: one eager step of about a second on the 2-core CPU of docs/benchmarks.md, with a peak
# that is mostly activations (batch and length or resolution raised until they outweigh weights
# and gradients). Dropout off everywhere: with it no two engines draw the same masks.
GPT_BENCH = gpt.GptConfig(layers=4, width=256, heads=4, seq_len=256, vocab=512, dropout=0.0)
BENCH_MODELS: Dict[str, BenchModel] = {
    "gpt2_hf": BenchModel(
        lambda: hugging_face.build("GPT2LMHeadModel", "GPT2Config", vocab_size=1000, n_embd=256, n_layer=4, n_head=4,
                             n_positions=256, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                             bos_token_id=999, eos_token_id=999),
        tokens(8, 256, 1000), lambda m: m.model.transformer.h),
    "bert_hf": BenchModel(
        lambda: hugging_face.build("BertForMaskedLM", "BertConfig", vocab_size=1000, hidden_size=256, num_hidden_layers=4,
                             num_attention_heads=4, intermediate_size=1024, max_position_embeddings=256,
                             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
        tokens(8, 256, 1000), lambda m: m.model.bert.encoder.layer),
    "gpt": BenchModel(functools.partial(gpt.build, GPT_BENCH), gpt.training_specs(GPT_BENCH, batch=16),
                      lambda m: m.blocks),
    "resnet50": BenchModel(lambda: torchvision_model("resnet50"), images(8, 128), resnet_blocks),
    # ViT-B/16's layout (16-pixel patches of 224x224 images, pre-norm encoder blocks) at a quarter
    # of its width and a third of its depth: vit_b_16 itself carries 660 MiB of weights and
    # gradients, and a batch whose activations outweigh them takes over 10 s a step on this CPU.
    "vit_p16_small": BenchModel(lambda: vision_transformer(layers=4, heads=4, width=192), images(8, 224),
                                lambda m: m.encoder.layers),
    # GPU sizes (--device cuda): GPT-2 124M (GPT2Config's defaults, 12 layers, width 768, its
    # 50257-token vocabulary) at 8 x 1024 tokens, and ResNet-50 at batch 64 of 224x224 images.
    "gpt2_124m_hf": BenchModel(
        lambda: hugging_face.build("GPT2LMHeadModel", "GPT2Config", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
        tokens(8, 1024, 50257), lambda m: m.model.transformer.h),
    "resnet50_b64": BenchModel(lambda: torchvision_model("resnet50"), images(64, 224), resnet_blocks),
}


def bench_model(name: str) -> BenchModel:
    if name in BENCH_MODELS:
        return BENCH_MODELS[name]
    reference = reference_models.CATALOGUE[name]

    def blocks(model: nn.Module) -> nn.Module:
        if isinstance(getattr(model, "blocks", None), (nn.Sequential, nn.ModuleList)):
            return model.blocks
        if isinstance(model, nn.Sequential):
            return model
        raise ValueError(f"{name} has no `blocks` container and is no nn.Sequential; say where its blocks are")

    return BenchModel(reference.build, reference.training, blocks)
