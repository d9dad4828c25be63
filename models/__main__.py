"""The reference models' commands.

    python3 models export MODEL --out FILE [--mode traced|scripted]
        exports one model of the catalogue (reference_models.CATALOGUE, e.g. gpt_small)
    python3 models export-all --set test|demo|gpu --out DIR [--force]
        exports a named set (model_sets.py) into DIR, skipping files newer than every models/*.py
    python3 models check --dir DIR [--set test|demo|gpu] [--device cpu|cuda]
        trains each exported model one step as acprof will, against its eager model

`python3 -m models ...` with the repository root on PYTHONPATH does the same.
"""

import argparse
import os
import sys
import time
from typing import List

if __package__ in (None, ""):
    # Run as `python3 models`: the folder is on sys.path, the package is not. Import it as the
    # package it is, so that its modules' relative imports resolve.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "models"  # noqa: A001


def export_one(argv: List[str]) -> int:
    from models import export, reference_models  # torch and every model: only for this command

    parser = argparse.ArgumentParser(prog="python3 models export", description="Export one catalogue model.")
    parser.add_argument("model", choices=sorted(reference_models.CATALOGUE))
    parser.add_argument("--out", required=True, help="file to write, e.g. mlp_traced.pt")
    parser.add_argument("--mode", choices=export.MODES, default="traced")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    reference_models.CATALOGUE[args.model].export(args.out, args.mode)
    print(f"{args.out}  {time.perf_counter() - started:.2f} s")
    return 0


def export_all(argv: List[str]) -> int:
    from models import export_all as command  # torch-free until a model needs exporting

    return command.main(argv)


def check(argv: List[str]) -> int:
    from models import check_exports

    return check_exports.main(argv)


COMMANDS = {"export": export_one, "export-all": export_all, "check": check}


def main(argv: List[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        print(f"\nusage: python3 models {{{','.join(COMMANDS)}}} ...", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
