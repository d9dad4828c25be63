"""A language model on library recurrent layers: nn.LSTM (two layers) then nn.GRU.

Stands for the recurrent models users build from torch.nn rather than by hand. Scripted,
each layer reads its weights as one List[Tensor] attribute (`_flat_weights`) that it
hands to aten::lstm / aten::gru whole; the graph never assigns that list, so acprof
passes it into a checkpoint as its tensors and rebuilds it inside
(profiler/graph/src/cut_facts.cpp, ValueEntry::Elements). Without that, no segment
holding either recurrent op was legal in the scripted model, while the traced one
(each weight its own attribute read) could recompute them. On the CPU the ops run
step by step under autograd, so each time step's gates are saved for backward: the
activations, not the weights, set the peak.

    input  int64[B, T] token ids in 0..vocab
    Embedding(vocab, 32) -> LSTM(32, 64, 2 layers, batch_first) -> GRU(64, 64) -> Linear(64, vocab)
    output float32[B, T, vocab] logits; target int64[B, T] in 0..vocab, loss cross_entropy.
"""

from dataclasses import dataclass

from torch import Tensor, nn

from .specs import TrainingSpecs


@dataclass(frozen=True)
class RnnLmConfig:
    width: int = 32
    hidden: int = 64
    seq_len: int = 32
    vocab: int = 64


class RnnLm(nn.Module):
    def __init__(self, config: RnnLmConfig):
        super().__init__()
        self.embedding = nn.Embedding(config.vocab, config.width)
        self.lstm = nn.LSTM(config.width, config.hidden, num_layers=2, batch_first=True)
        self.gru = nn.GRU(config.hidden, config.hidden, batch_first=True)
        self.head = nn.Linear(config.hidden, config.vocab)

    def forward(self, tokens: Tensor) -> Tensor:
        h, _ = self.lstm(self.embedding(tokens))
        h, _ = self.gru(h)
        return self.head(h)


def build(config: RnnLmConfig = RnnLmConfig()) -> nn.Module:
    return RnnLm(config)


def training_specs(config: RnnLmConfig = RnnLmConfig(), batch: int = 16) -> TrainingSpecs:
    tokens = f"int64[{batch},{config.seq_len}]:0..{config.vocab}"
    return TrainingSpecs(inputs=[tokens], target=tokens, loss="cross_entropy")
