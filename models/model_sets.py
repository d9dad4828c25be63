"""The named sets export_all.py writes: file name -> (reference_models.CATALOGUE name, mode).

Kept free of torch so export_all.py can tell that every file is up to date without
importing torch and torchvision (seconds), which keeps the test fixture instant.
"""

from typing import Dict, Tuple

SETS: Dict[str, Dict[str, Tuple[str, str]]] = {
    # Small: the C++ tests train each several times on a 2-core CPU.
    "test": {
        "mlp_traced.pt": ("mlp", "traced"),
        "mlp_scripted.pt": ("mlp", "scripted"),
        "mlp_deep_traced.pt": ("mlp_deep", "traced"),
        "cnn_traced.pt": ("cnn", "traced"),
        "cnn_scripted.pt": ("cnn", "scripted"),
        "convchain9_traced.pt": ("convchain9", "traced"),
        "convchain3_traced.pt": ("convchain3", "traced"),
        "resnet18_traced.pt": ("resnet18_small", "traced"),
        "resnet18_scripted.pt": ("resnet18_small", "scripted"),
        "gpt_traced.pt": ("gpt_small", "traced"),
        "gpt_scripted.pt": ("gpt_small", "scripted"),
        "gpt_long_traced.pt": ("gpt_long", "traced"),
        "gpt_wide_traced.pt": ("gpt_wide", "traced"),
        "gpt_sdpa_traced.pt": ("gpt_sdpa", "traced"),
        "gpt_sdpa_scripted.pt": ("gpt_sdpa", "scripted"),
        "bert_traced.pt": ("bert_small", "traced"),
        "bert_scripted.pt": ("bert_small", "scripted"),
        "transformer_dict_scripted.pt": ("transformer_dict", "scripted"),
        "vit_small_scripted.pt": ("vit_small", "scripted"),
        "loop_lm_scripted.pt": ("loop_lm", "scripted"),
        "loop_lm_traced.pt": ("loop_lm", "traced"),
        "densenet_like_traced.pt": ("densenet_like", "traced"),
        "densenet_like_scripted.pt": ("densenet_like", "scripted"),
        "tuple_out_traced.pt": ("tuple_out", "traced"),
        "tuple_out_scripted.pt": ("tuple_out", "scripted"),
        "gpt_autocast_traced.pt": ("gpt_autocast", "traced"),
        "inplace_view_traced.pt": ("inplace_view", "traced"),
        "lstm_cell_lm_traced.pt": ("lstm_cell_lm", "traced"),
        "rnn_lm_scripted.pt": ("rnn_lm", "scripted"),
        "rnn_lm_traced.pt": ("rnn_lm", "traced"),
        "encoder_masks_scripted.pt": ("encoder_masks", "scripted"),
        "tied_list_inplace_traced.pt": ("tied_list_inplace", "traced"),
    },
    # The README's default model.
    "demo": {
        "gpt_traced.pt": ("gpt_demo", "traced"),
    },
    # Benchmarks for the GPU machine.
    "gpu": {
        "resnet50_traced.pt": ("resnet50_gpu", "traced"),
        "gpt2_traced.pt": ("gpt2_gpu", "traced"),
        "gpt2_scripted.pt": ("gpt2_gpu", "scripted"),
    },
}
