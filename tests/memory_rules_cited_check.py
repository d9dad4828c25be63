#!/usr/bin/env python3
"""docs/memory-model.md's named rules against the code and the tests that cite them (issue 64).

    python3 tests/memory_rules_cited_check.py --root REPO

A rule is a heading `### [name]` of docs/memory-model.md. The check fails (exit 1), naming each
problem, when
  - a rule is cited as `[name]` by no file of the engine (SOURCE_FOLDERS): the rule is stated but
    nothing says where it is applied;
  - no test holds a rule: no GoogleTest name under tests/ contains the rule's name in CamelCase
    ([held-use-gradient]: HeldUseGradient) and no CTest name contains it in snake_case
    (held_use_gradient);
  - a file of the engine or the tests cites a hyphenated `[name]` that is neither a memory rule
    nor a legality rule of cut_rules.h (a rule renamed or removed, or a typo);
  - a rule is stated twice.
Exit 2: the check could not run (no page, no rules). Plain Python 3: no torch, no pytest.
"""

import argparse
import pathlib
import re
import sys
from typing import Dict, List, Set

PAGE = "docs/memory-model.md"
RULE_HEADING = re.compile(r"^### \[([a-z]+(?:-[a-z]+)*)\]\s*$", re.MULTILINE)
# A citation: a bracketed lower-case name with at least one hyphen, as `[held-use-gradient]`. Names
# of one word ([temporary]) are looked for by name only, so that `list[str]` is no citation.
CITATION = re.compile(r"(?<![\w\]])\[([a-z]+(?:-[a-z]+)+)\]")
# The other named rules of the engine: the legality rules of a segment, stated in cut_rules.h.
CUT_RULES = "profiler/format/include/acprof/cut_rules.h"
CUT_RULE_LINE = re.compile(r"^//\s+\[([a-z]+(?:-[a-z]+)*)\]", re.MULTILINE)
SOURCE_FOLDERS = ("planner", "rewriter", "profiler", "python/acprof")
SOURCE_SUFFIXES = (".h", ".cpp", ".py")
TEST_SUFFIXES = (".cpp", ".cmake", ".py", ".txt")
GTEST_NAME = re.compile(r"^\s*TEST(?:_F|_P)?\(\s*\w+\s*,\s*(\w+)\s*\)", re.MULTILINE)
CTEST_NAME = re.compile(r"add_test\(\s*NAME\s+([\w.-]+)")


class CannotCheck(Exception):
    """The check has nothing to compare: no page, or a page without rules."""


def rules_of(page: str) -> List[str]:
    return RULE_HEADING.findall(page)


def camel(rule: str) -> str:
    return "".join(word.capitalize() for word in rule.split("-"))


def files_under(root: pathlib.Path, folders, suffixes) -> List[pathlib.Path]:
    found = []
    for folder in folders:
        found += [p for p in sorted((root / folder).rglob("*")) if p.is_file() and p.suffix in suffixes]
    return found


def problems(root: pathlib.Path) -> List[str]:
    page_path = root / PAGE
    if not page_path.is_file():
        raise CannotCheck(f"{PAGE} is missing under {root}")
    rules = rules_of(page_path.read_text())
    if not rules:
        raise CannotCheck(f"{PAGE} states no rule (no '### [name]' heading)")
    out = [f"{PAGE} states [{r}] twice" for r in sorted({r for r in rules if rules.count(r) > 1})]
    cut_rules = root / CUT_RULES
    known: Set[str] = set(rules) | set(CUT_RULE_LINE.findall(cut_rules.read_text()) if cut_rules.is_file() else [])

    cited_in_source: Dict[str, List[str]] = {r: [] for r in rules}
    sources = files_under(root, SOURCE_FOLDERS, SOURCE_SUFFIXES)
    tests = [p for p in files_under(root, ("tests",), TEST_SUFFIXES) if p.name != pathlib.Path(__file__).name]
    for path in sources + tests:
        text = path.read_text(errors="replace")
        where = str(path.relative_to(root))
        for rule in rules:
            if f"[{rule}]" in text and path in sources:
                cited_in_source[rule].append(where)
        for name in sorted(set(CITATION.findall(text)) - known):
            out.append(f"{where} cites [{name}], which {PAGE} does not state")
    for rule, files in cited_in_source.items():
        if not files:
            out.append(f"[{rule}] is cited by no file under {', '.join(SOURCE_FOLDERS)}: cite it where it is applied")

    test_names: List[str] = []
    for path in tests:
        text = path.read_text(errors="replace")
        test_names += GTEST_NAME.findall(text) + CTEST_NAME.findall(text)
    for rule in rules:
        if not any(camel(rule) in n or rule.replace("-", "_") in n for n in test_names):
            out.append(f"[{rule}] is held by no test: name one {camel(rule)}... (GoogleTest) "
                       f"or ..{rule.replace('-', '_')}.. (CTest)")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    try:
        found = problems(args.root)
    except CannotCheck as e:
        print(f"memory_rules_cited_check: cannot check: {e}", file=sys.stderr)
        return 2
    for line in found:
        print(f"memory_rules_cited_check: {line}", file=sys.stderr)
    if not found:
        print(f"memory_rules_cited_check: {len(rules_of((args.root / PAGE).read_text()))} rules, "
              "each cited in the engine and held by a test")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
