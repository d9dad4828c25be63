"""A rewritten model trains in Python exactly like its original.

Loads libacprof_ops.so with torch.ops.load_library, torch.jit.load's both
models, runs forward + mean loss + backward on the same inputs and seed, and
exits non-zero unless every parameter gradient and buffer is bitwise equal.
Called by rewriter_end_to_end_tests after each rewrite.
"""
import argparse
import os
import re
import sys

import torch

# The reference models' helpers: the loss takes every tensor of the output as acprof does.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from models.training_step import collect_tensors  # noqa: E402

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "int32": torch.int32,
          "bool": torch.bool}


def make_input(spec):
    match = re.fullmatch(r"(\w+)\[([\d,]*)\](?::(-?\d+)\.\.(-?\d+))?", spec)
    if not match:
        raise SystemExit(f"unsupported input spec {spec!r}")
    dtype = DTYPES[match.group(1)]
    shape = [int(d) for d in match.group(2).split(",") if d]
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype)
    low, high = (int(match.group(3)), int(match.group(4))) if match.group(3) else (0, 2)
    return torch.randint(low, high, shape, dtype=dtype)


def train_step(path, inputs):
    module = torch.jit.load(path)
    module.train()
    torch.manual_seed(1)
    output = module(*inputs)
    tensors = collect_tensors(output)
    sum(t.float().mean() for t in tensors if t.is_floating_point()).backward()
    grads = {name: p.grad for name, p in module.named_parameters()}
    buffers = {name: b for name, b in module.named_buffers()}
    return grads, buffers


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", required=True, help="path of libacprof_ops.so")
    parser.add_argument("--original", required=True)
    parser.add_argument("--rewritten", required=True)
    parser.add_argument("--input", action="append", required=True, help="input spec, one per forward argument")
    args = parser.parse_args()
    torch.ops.load_library(args.ops)
    torch.manual_seed(0)
    inputs = [make_input(spec) for spec in args.input]
    expected_grads, expected_buffers = train_step(args.original, inputs)
    grads, buffers = train_step(args.rewritten, inputs)
    if "acprof::checkpoint" not in str(torch.jit.load(args.rewritten).graph):
        raise SystemExit(f"{args.rewritten} calls no acprof::checkpoint")
    failures = []
    for kind, expected, actual in (("gradient", expected_grads, grads), ("buffer", expected_buffers, buffers)):
        if expected.keys() != actual.keys():
            failures.append(f"{kind} names differ")
            continue
        for name, tensor in expected.items():
            other = actual[name]
            if (tensor is None) != (other is None) or (tensor is not None and not torch.equal(tensor, other)):
                failures.append(f"{kind} {name} differs")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print(f"python: {len(grads)} gradients and {len(buffers)} buffers equal bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
