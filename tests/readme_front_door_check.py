#!/usr/bin/env python3
"""README.md is the front door (issue 36, issue 64): its first screen gives the two commands a
fresh machine needs, and they are the ones the repository runs.

    python3 tests/readme_front_door_check.py --root REPO

The first screen is the README up to its second `## ` heading. The check fails (exit 1), naming
each problem, when
  - the first screen is longer than a screen (FIRST_SCREEN_LINES) or the README is longer than
    MOST_LINES (the reference is docs/manual.md);
  - the first screen does not link ARCHITECTURE.md;
  - its first sh block is not exactly two commands (comments aside), each a script of the
    repository that exists and is executable;
  - the first command does not install everything and run the main job: it must run
    scripts/setup.sh and `acprof profile`, `plan` and `rewrite`, in that order;
  - the second is not the test command CI runs: .ci/run's last command must be it, and it must run
    scripts/setup.sh and ctest.
Plain Python 3: no torch, no pytest.
"""

import argparse
import os
import re
import sys
from typing import List

FIRST_SCREEN_LINES = 45
MOST_LINES = 200


def commands_of(script: str) -> List[str]:
    """A shell script's commands: its lines without comments and blanks."""
    lines = [line.split(" #")[0].strip() for line in script.splitlines()]
    return [line for line in lines if line and not line.startswith("#") and not line.startswith("set ")]


def problems(root: str) -> List[str]:
    read = lambda path: open(os.path.join(root, path)).read()
    readme = read("README.md")
    lines = readme.splitlines()
    out = []
    if len(lines) > MOST_LINES:
        out.append(f"README.md has {len(lines)} lines, over {MOST_LINES}: move reference text to docs/manual.md")
    headings = [i for i, line in enumerate(lines) if line.startswith("## ")]
    screen = lines[:headings[1]] if len(headings) > 1 else lines
    if len(screen) > FIRST_SCREEN_LINES:
        out.append(f"the first screen (up to the second '## ' heading) is {len(screen)} lines, over {FIRST_SCREEN_LINES}")
    text = "\n".join(screen)
    if "(ARCHITECTURE.md)" not in text:
        out.append("the first screen does not link ARCHITECTURE.md")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    commands = commands_of(block.group(1)) if block else []
    if len(commands) != 2:
        return out + [f"the first screen's first sh block has {len(commands)} commands, not 2: {commands}"]
    scripts = []
    for command in commands:
        path = os.path.join(root, command.split()[0])
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            out.append(f"'{command}' is not an executable script of the repository")
            return out
        scripts.append(open(path).read())
    main_job, tests = ("\n".join(commands_of(script)) + "\n" for script in scripts)
    order = [main_job.find(s) for s in ("scripts/setup.sh", " profile ", " plan ", " rewrite")]
    if -1 in order or order != sorted(order):
        out.append(f"'{commands[0]}' does not run scripts/setup.sh, then acprof profile, plan and rewrite")
    if "scripts/setup.sh" not in tests or "ctest" not in tests:
        out.append(f"'{commands[1]}' does not run scripts/setup.sh and ctest")
    ci = commands_of(read(".ci/run"))
    if not ci or ci[-1] != commands[1]:
        out.append(f".ci/run's last command is {ci[-1] if ci else 'none'!r}, not the README's test command {commands[1]!r}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    found = problems(parser.parse_args().root)
    for line in found:
        print(f"readme_front_door_check: {line}", file=sys.stderr)
    if not found:
        print("readme_front_door_check: the first screen's two commands install and run the main job, and run "
              "the tests as CI does")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
