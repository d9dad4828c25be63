"""Export a named set of reference models into a directory.

    python3 models export-all --set test|demo|gpu --out DIR [--force]

Prints one line per model: its path and how long the export took (or that it was up to
date). A model whose file is newer than every models/*.py is skipped, so re-running the
test fixture costs nothing; --force exports every model again. The sets are listed in
model_sets.py.
"""

import argparse
import glob
import os
import time
from typing import List

from .model_sets import SETS

MODELS_DIR = os.path.dirname(os.path.abspath(__file__))


def _newest_source_mtime() -> float:
    return max(os.path.getmtime(p) for p in glob.glob(os.path.join(MODELS_DIR, "*.py")))


def _is_up_to_date(path: str, newest_source: float) -> bool:
    return os.path.exists(path) and os.path.getmtime(path) > newest_source


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", dest="set_name", choices=sorted(SETS), required=True)
    parser.add_argument("--out", required=True, help="directory to write the models into")
    parser.add_argument("--force", action="store_true", help="export even models whose file is up to date")
    args = parser.parse_args(argv)

    newest_source = _newest_source_mtime()
    set_started = time.perf_counter()
    for file_name, (model_name, mode) in SETS[args.set_name].items():
        path = os.path.join(args.out, file_name)
        if not args.force and _is_up_to_date(path, newest_source):
            print(f"{path}  up to date", flush=True)
            continue
        from . import reference_models  # imports torch: only when something is exported

        started = time.perf_counter()
        reference_models.CATALOGUE[model_name].export(path, mode)
        print(f"{path}  {time.perf_counter() - started:.2f} s", flush=True)
    print(f"set {args.set_name}: {time.perf_counter() - set_started:.2f} s", flush=True)
    return 0

