#!/usr/bin/env python3
"""ARCHITECTURE.md's source-layout table against the files git tracks (issue 64).

    python3 tests/architecture_layout_check.py --root REPO

The table under "## Source layout" has one row per folder, `| `path/` | what it holds |`. The
check fails (exit 1), naming each problem, when
  - a row names a folder that holds no tracked file (a folder renamed or removed), or names it twice;
  - a tracked file lies under no row's folder (a folder added without a row), except files at
    the root and in UNLISTED_FOLDERS below.
A row covers everything under its folder, so a subfolder needs a row of its own only where the
table should say what it holds. Exit 2: the check could not run (no git checkout, no table).
Plain Python 3: no torch, no pytest.
"""

import argparse
import re
import subprocess
import sys
from typing import Dict, List, Sequence, Tuple

SECTION = "## Source layout"
# A row's first cell: one folder, in backticks, relative to the root, ending in "/".
ROW_PATH = re.compile(r"^`([^`\s]+/)`$")

# What needs no row: files at the repository root (README.md, CMakeLists.txt, pyproject.toml, ...),
# which the reader sees first anyway, and these hidden folders, which hold machinery, not source.
UNLISTED_FOLDERS = (".ci/",)


class CannotCheck(Exception):
    """The check has nothing to compare: no git checkout, no table."""


def unlisted(path: str) -> bool:
    """Whether a tracked file needs no row: it lies at the root or in one of UNLISTED_FOLDERS."""
    return "/" not in path or any(path.startswith(folder) for folder in UNLISTED_FOLDERS)


def layout_rows(text: str) -> Tuple[List[Tuple[int, str]], List[str]]:
    """The (line number, folder) of each row of the source-layout table, and the problems with
    rows that do not name one folder as the table's form asks."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == SECTION)
    except StopIteration:
        raise CannotCheck(f"ARCHITECTURE.md has no '{SECTION}' section") from None
    rows, problems, seen_header = [], [], False
    for number in range(start + 1, len(lines)):
        line = lines[number].strip()
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if not seen_header:  # | path | what it holds |
            seen_header = True
            continue
        if all(set(cell) <= set("-: ") for cell in cells):  # |---|---|
            continue
        match = ROW_PATH.match(cells[0])
        if not match or ".." in match.group(1).split("/") or match.group(1).startswith("/"):
            problems.append(f"ARCHITECTURE.md:{number + 1}: the row's first cell, {cells[0]!r}, is not one folder "
                            "in backticks relative to the root, such as `planner/src/`")
            continue
        rows.append((number + 1, match.group(1)))
    if not rows:
        raise CannotCheck(f"ARCHITECTURE.md's '{SECTION}' section holds no table rows")
    return rows, problems


def tracked_files(root: str) -> List[str]:
    """`git ls-files` of the checkout at root."""
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
    except FileNotFoundError:
        raise CannotCheck("git is not installed; the check compares the table with `git ls-files`") from None
    except subprocess.CalledProcessError as e:
        raise CannotCheck(f"`git ls-files` failed in {root} (not a git checkout?): "
                          f"{e.stderr.decode(errors='replace').strip()}") from None
    return [path for path in listed.stdout.decode().split("\0") if path]


def layout_problems(rows: Sequence[Tuple[int, str]], files: Sequence[str]) -> List[str]:
    """Rows naming no tracked folder or named twice, and folders of tracked files under no row."""
    problems = []
    first_row: Dict[str, int] = {}
    for number, folder in rows:
        if folder in first_row:
            problems.append(f"ARCHITECTURE.md:{number}: `{folder}` has a row already (line {first_row[folder]})")
            continue
        first_row[folder] = number
        if not any(path.startswith(folder) for path in files):
            problems.append(f"ARCHITECTURE.md:{number}: `{folder}` holds no tracked file; remove the row or fix its path")
    uncovered: Dict[str, List[str]] = {}
    for path in files:
        if unlisted(path) or any(path.startswith(folder) for folder in first_row):
            continue
        uncovered.setdefault(path.split("/", 1)[0] + "/", []).append(path)
    for folder, paths in sorted(uncovered.items()):
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        problems.append(f"`{folder}` holds tracked files under no row of the source layout ({shown}); "
                        "add a row for it to ARCHITECTURE.md")
    return problems


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the repository's root, a git checkout")
    args = parser.parse_args(argv)
    try:
        with open(f"{args.root}/ARCHITECTURE.md", encoding="utf-8") as handle:
            rows, problems = layout_rows(handle.read())
        files = tracked_files(args.root)
    except (OSError, CannotCheck) as e:
        print(f"architecture_layout_check: cannot check: {e}", file=sys.stderr)
        return 2
    problems += layout_problems(rows, files)
    for problem in problems:
        print(f"architecture_layout_check: {problem}", file=sys.stderr)
    if problems:
        return 1
    covered = sum(1 for path in files if not unlisted(path))
    print(f"ARCHITECTURE.md's source layout: {len(rows)} rows cover all {covered} tracked files "
          f"outside the root and {', '.join(UNLISTED_FOLDERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
