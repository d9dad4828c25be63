"""Model patterns nobody here wrote acprof for: IR that torchvision's classifiers do not have.

Each is small and trains on the CPU in under two seconds; scripts/zoo.sh --set patterns runs them
traced and scripted through the zoo's pipeline into docs/zoo-patterns.md. Four of them found
something wrong when first run (2026-11-27), fixed since:
  - rnn_stack: a scripted nn.LSTM / nn.GRU hands its weights to the op as one List[Tensor]
    attribute, which no segment could take (now it crosses as its tensors);
  - collected_outputs: scripted, `hs[2]` of a list of block outputs read the whole list, so no
    block's output could be dropped (a constant-index read is now the element);
  - sparse_embedding: verification could not compare a sparse gradient (now by its values);
  - gumbel_head: no solver tried a segment that drops no tensor but ends the only saves of its
    output (the exact search and the default's window search now do).

PATTERNS maps a name to a function returning (model, TrainingSpecs).
"""

from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .specs import TrainingSpecs


def _mean_loss(*inputs: str) -> TrainingSpecs:
    return TrainingSpecs(inputs=list(inputs), target="", loss="mean")


def _mlp_blocks(width: int, count: int, activation: Callable[[], nn.Module] = nn.ReLU) -> nn.Sequential:
    return nn.Sequential(*[nn.Sequential(nn.Linear(width, width), activation()) for _ in range(count)])


class FrozenBackbone(nn.Module):
    """Fine-tuning: the backbone's parameters do not require grad, the head's do."""

    def __init__(self):
        super().__init__()
        self.backbone = _mlp_blocks(256, 6)
        for parameter in self.backbone.parameters():
            parameter.requires_grad_(False)
        self.head = nn.Sequential(_mlp_blocks(256, 6, nn.GELU), nn.Linear(256, 10))

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.backbone(x))


class FrozenMiddle(nn.Module):
    """Frozen layers between trained ones: gradients flow through weights that take none."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(256, 256) for _ in range(8)])
        for i in (2, 3, 4):
            self.layers[i].requires_grad_(False)

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


class NoGradBlock(nn.Module):
    """`with torch.no_grad():` inside forward (scripted: a grad-mode scope; traced: ignored)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = nn.Linear(256, 256), nn.Linear(256, 256), nn.Linear(256, 256), nn.Linear(256, 10)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.relu(self.a(x))
        with torch.no_grad():
            scale = torch.sigmoid(self.b(h)).mean(dim=1, keepdim=True)
        h = torch.relu(self.c(h)) * scale
        return self.d(torch.relu(self.c(h)))


class DataDependentBranch(nn.Module):
    """`if` on a tensor's value in every block (scripted: prim::If; traced: the branch taken)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(256, 256) for _ in range(6)])

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            y = layer(x)
            if bool(y.mean() > 0):
                x = torch.relu(y) + x
            else:
                x = torch.sigmoid(y) * x
        return x


class RnnStack(nn.Module):
    """nn.LSTM (2 layers, dropout between) then nn.GRU over embedded tokens."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(1000, 64)
        self.lstm = nn.LSTM(64, 128, num_layers=2, batch_first=True, dropout=0.1)
        self.gru = nn.GRU(128, 64, batch_first=True)
        self.head = nn.Linear(64, 1000)

    def forward(self, tokens: Tensor) -> Tensor:
        h, _ = self.lstm(self.embedding(tokens))
        h, _ = self.gru(h)
        return self.head(h)


class TiedWeights(nn.Module):
    """A language model whose embedding and output layer share one parameter."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(2000, 128)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(128), nn.Linear(128, 512), nn.GELU(),
                                                   nn.Linear(512, 128)) for _ in range(4)])
        self.head = nn.Linear(128, 2000, bias=False)
        self.head.weight = self.embedding.weight

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embedding(tokens)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


class BufferUpdates(nn.Module):
    """Buffers written in forward: a step counter and an exponential moving average."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(256, 256) for _ in range(6)])
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("average", torch.zeros(256))

    def forward(self, x: Tensor) -> Tensor:
        self.steps.add_(1)
        for layer in self.layers:
            x = torch.relu(layer(x))
        with torch.no_grad():
            self.average.mul_(0.9).add_(x.mean(0) * 0.1)
        return x


class IndexOps(nn.Module):
    """Integer intermediates: topk indices, gather, masked_fill, where, scatter_add, cumsum."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(256, 512), nn.Linear(512, 512), nn.Linear(512, 10)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.relu(self.a(x))
        values, indices = torch.topk(h, 64, dim=1)
        gathered = torch.gather(h, 1, indices) * values
        h = h.masked_fill(h < 0.1, 0.0)
        h = torch.where(h > 1.0, h * 2, h)
        h = h.scatter_add(1, indices, gathered)
        return self.c(torch.relu(self.b(h)).cumsum(1) / 512)


class ConvOps(nn.Module):
    """GroupNorm, pixel_shuffle, bilinear interpolate, reflect pad, slicing, unfold."""

    def __init__(self):
        super().__init__()
        self.c1, self.norm = nn.Conv2d(3, 32, 3, padding=1), nn.GroupNorm(4, 32)
        self.c2, self.c3, self.c4 = nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.Conv2d(16, 16, 3, padding=1), nn.Conv2d(16, 8, 1)
        self.fc = nn.Linear(8 * 9 * 24 * 24, 10)

    def forward(self, x: Tensor) -> Tensor:
        h = F.silu(self.norm(self.c1(x)))
        h = F.pixel_shuffle(F.silu(self.c2(h)), 2)
        h = F.interpolate(h, scale_factor=0.5, mode="bilinear", align_corners=False)
        h = F.silu(self.c3(F.pad(h, (1, 1, 1, 1), mode="reflect")))[:, :, 1:-1, 1:-1]
        return self.fc(F.unfold(self.c4(h), 3, padding=1).flatten(1))


class EinsumAttention(nn.Module):
    """einsum attention under a causal mask built in forward; a dict output."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.ModuleList([nn.Linear(128, 384) for _ in range(3)])
        self.out = nn.Linear(128, 50)

    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        steps = x.size(1)
        mask = torch.triu(torch.ones(steps, steps, dtype=torch.bool, device=x.device), 1)
        for layer in self.qkv:
            q, k, v = layer(x).chunk(3, dim=-1)
            scores = torch.einsum("btd,bsd->bts", q, k) / 11.3
            x = x + torch.einsum("bts,bsd->btd", scores.masked_fill(mask, float("-inf")).softmax(-1), v)
        return {"logits": self.out(x), "aux": x.pow(2).mean()}


class TwoInputs(nn.Module):
    """Two inputs and an optional third left to its default."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(256, 256), nn.Linear(64, 256)
        self.layers = nn.ModuleList([nn.Linear(256, 256) for _ in range(4)])

    def forward(self, x: Tensor, y: Tensor, scale: Optional[Tensor] = None) -> Tensor:
        h = torch.relu(self.a(x)) + torch.relu(self.b(y))
        for layer in self.layers:
            h = torch.relu(layer(h))
        if scale is not None:
            h = h * scale
        return h


class PaddedAttention(nn.Module):
    """nn.MultiheadAttention with a boolean key padding mask input."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(32, 64)
        self.attention = nn.ModuleList([nn.MultiheadAttention(64, 4, batch_first=True) for _ in range(3)])
        self.norms = nn.ModuleList([nn.LayerNorm(64) for _ in range(3)])

    def forward(self, x: Tensor, padding: Tensor) -> Tensor:
        h = self.embed(x)
        for attention, norm in zip(self.attention, self.norms):
            out, _ = attention(h, h, h, key_padding_mask=padding, need_weights=False)
            h = norm(h + out)
        return h


class Float64(nn.Module):
    """float64 weights and inputs."""

    def __init__(self):
        super().__init__()
        self.layers = _mlp_blocks(128, 6, nn.Tanh).double()

    def forward(self, x: Tensor) -> Tensor:
        return self.layers(x)


class Bfloat16Weights(nn.Module):
    """bfloat16 weights on the CPU (not autocast: the parameters themselves)."""

    def __init__(self):
        super().__init__()
        self.layers = _mlp_blocks(128, 6, nn.GELU).to(torch.bfloat16)

    def forward(self, x: Tensor) -> Tensor:
        return self.layers(x.to(torch.bfloat16)).float()


class StopGradient(nn.Module):
    """detach() in the middle, mixed with the path that keeps its gradient."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(256, 256) for _ in range(6)])

    def forward(self, x: Tensor) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = torch.relu(layer(x))
            if i == 2:
                x = x.detach() * 0.5 + x * 0.5
        return x


class InputLengthLoop(nn.Module):
    """A loop whose trip count comes from the input's size (scripted: one prim::Loop)."""

    def __init__(self):
        super().__init__()
        self.step, self.out = nn.Linear(128, 128), nn.Linear(128, 128)

    def forward(self, x: Tensor) -> Tensor:
        h = x
        for _ in range(x.size(0) // 128):
            h = torch.tanh(self.step(h))
        return self.out(h)


class SharedBlock(nn.Module):
    """ALBERT-style: one block's weights applied six times."""

    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.LayerNorm(128), nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 128))

    def forward(self, x: Tensor) -> Tensor:
        for _ in range(6):
            x = x + self.block(x)
        return x


class ModuleDictTuple(nn.Module):
    """Iterates an nn.ModuleDict; returns a tuple with an int and a None."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({f"b{i}": nn.Sequential(nn.Linear(128, 128), nn.SiLU()) for i in range(5)})
        self.dropout = nn.Dropout(0.2)

    def forward(self, x: Tensor) -> Tuple[Tensor, int, Optional[Tensor]]:
        for block in self.blocks.values():
            x = self.dropout(block(x))
        return x, x.size(0), None


class CollectedOutputs(nn.Module):
    """Keeps every block's output in a list; returns a view of the last and one earlier by index."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(128, 128) for _ in range(6)])

    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor]:
        outputs: List[Tensor] = []
        for layer in self.layers:
            x = torch.relu(layer(x))
            outputs.append(x)
        return x.view(-1), outputs[2].t()


class EmbeddingBagNorm(nn.Module):
    """EmbeddingBag, F.dropout on the training flag, layer_norm over a computed shape."""

    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(1000, 128, mode="mean")
        self.layers = nn.ModuleList([nn.Linear(128, 128) for _ in range(5)])

    def forward(self, tokens: Tensor) -> Tensor:
        h = self.bag(tokens)
        for layer in self.layers:
            h = F.layer_norm(F.dropout(torch.relu(layer(h)), 0.1, self.training), h.shape[-1:])
        return h


class Vae(nn.Module):
    """Reparameterisation noise drawn in forward; returns its own scalar loss."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 128))
        self.decoder = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 256))

    def forward(self, x: Tensor) -> Tensor:
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return F.mse_loss(self.decoder(z), x) - 0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())


class GumbelHead(nn.Module):
    """Gumbel-softmax (exponential_ on a fresh tensor) and bernoulli sampling in forward."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(256, 512), nn.Linear(512, 512), nn.Linear(512, 256)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.relu(self.a(x))
        soft = F.gumbel_softmax(self.b(h), tau=0.5, hard=False)
        return self.c(soft * torch.bernoulli(torch.sigmoid(h)) + h)


class SparseEmbedding(nn.Module):
    """nn.Embedding(sparse=True): a sparse gradient."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(5000, 128, sparse=True)
        self.layers = nn.ModuleList([nn.Linear(128, 128) for _ in range(4)])

    def forward(self, tokens: Tensor) -> Tensor:
        h = self.embedding(tokens).mean(1)
        for layer in self.layers:
            h = torch.relu(layer(h))
        return h


class SpectralMix(nn.Module):
    """rfft / irfft: complex intermediates."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(256, 256), nn.Linear(256, 256), nn.Linear(256, 256)

    def forward(self, x: Tensor) -> Tensor:
        f = torch.fft.rfft(torch.relu(self.a(x)), dim=1)
        h = torch.fft.irfft(f * torch.exp(-f.abs()), n=256, dim=1)
        return self.c(torch.relu(self.b(h)))


class MaskedWrite(nn.Module):
    """`h[h < -1] = 0` on each block's pre-activation (index_put_ in place)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(256, 256) for _ in range(5)])

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            h = layer(x)
            h[h < -1.0] = 0.0
            x = torch.tanh(h)
        return x


class ChannelsLast(nn.Module):
    """Convolutions on channels_last activations."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(3, 32, 3, padding=1)
        self.convs = nn.ModuleList([nn.Conv2d(32, 32, 3, padding=1) for _ in range(4)])

    def forward(self, x: Tensor) -> Tensor:
        x = self.first(x.contiguous(memory_format=torch.channels_last))
        for conv in self.convs:
            x = F.relu(conv(x))
        return x.mean((2, 3))


class WeightNorm(nn.Module):
    """nn.utils.weight_norm: the weight recomputed from g and v by a forward pre-hook (traced only)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.utils.weight_norm(nn.Linear(256, 256)) for _ in range(5)])

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


ROWS = "float32[512,256]"
PATTERNS: Dict[str, Callable[[], Tuple[nn.Module, TrainingSpecs]]] = {
    "frozen_backbone": lambda: (FrozenBackbone(), _mean_loss(ROWS)),
    "frozen_middle": lambda: (FrozenMiddle(), _mean_loss(ROWS)),
    "no_grad_block": lambda: (NoGradBlock(), _mean_loss(ROWS)),
    "data_dependent_branch": lambda: (DataDependentBranch(), _mean_loss(ROWS)),
    "rnn_stack": lambda: (RnnStack(), _mean_loss("int64[8,64]:0..1000")),
    "tied_weights": lambda: (TiedWeights(), _mean_loss("int64[8,64]:0..2000")),
    "buffer_updates": lambda: (BufferUpdates(), _mean_loss(ROWS)),
    "index_ops": lambda: (IndexOps(), _mean_loss(ROWS)),
    "conv_ops": lambda: (ConvOps(), _mean_loss("float32[4,3,48,48]")),
    "einsum_attention": lambda: (EinsumAttention(), _mean_loss("float32[8,64,128]")),
    "two_inputs": lambda: (TwoInputs(), _mean_loss(ROWS, "float32[512,64]")),
    "padded_attention": lambda: (PaddedAttention(), _mean_loss("float32[16,48,32]", "bool[16,48]")),
    "float64": lambda: (Float64(), _mean_loss("float64[1024,128]")),
    "bfloat16_weights": lambda: (Bfloat16Weights(), _mean_loss("float32[1024,128]")),
    "stop_gradient": lambda: (StopGradient(), _mean_loss(ROWS)),
    "input_length_loop": lambda: (InputLengthLoop(), _mean_loss("float32[640,128]")),
    "shared_block": lambda: (SharedBlock(), _mean_loss("float32[1024,128]")),
    "module_dict_tuple": lambda: (ModuleDictTuple(), _mean_loss("float32[1024,128]")),
    "collected_outputs": lambda: (CollectedOutputs(), _mean_loss("float32[1024,128]")),
    "embedding_bag_norm": lambda: (EmbeddingBagNorm(), _mean_loss("int64[512,20]:0..1000")),
    "vae": lambda: (Vae(), _mean_loss("float32[1024,256]")),
    "gumbel_head": lambda: (GumbelHead(), _mean_loss("float32[1024,256]")),
    "sparse_embedding": lambda: (SparseEmbedding(), _mean_loss("int64[512,16]:0..5000")),
    "spectral_mix": lambda: (SpectralMix(), _mean_loss("float32[1024,256]")),
    "masked_write": lambda: (MaskedWrite(), _mean_loss("float32[1024,256]")),
    "channels_last": lambda: (ChannelsLast(), _mean_loss("float32[8,3,48,48]")),
    "weight_norm": lambda: (WeightNorm(), _mean_loss("float32[1024,256]")),
}
