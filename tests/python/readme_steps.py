"""What the two README step tests share: the fenced blocks of a README section, running a step
with its output kept for the failure message, and a fresh `pip install` of the acprof package."""

import os
import re
import shutil
import subprocess
import sys


class StepFailed(SystemExit):
    """A step of the README did not do what the section says; the message names it."""


def section_blocks(readme_text, section):
    """The fenced blocks of `section`, as (language, text), in order."""
    start = readme_text.find(section)
    if start < 0:
        raise StepFailed(f"the README has no '{section}' section")
    end = readme_text.find("\n## ", start + len(section))
    text = readme_text[start:end if end >= 0 else len(readme_text)]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w+)\n(.*?)```", text, re.S)]


def run(command, cwd, env, what, allowed=(0,)):
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode not in allowed:
        raise StepFailed(f"{what} failed (exit {result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


def install_package(package, work):
    """pip installs a copy of the package source into work/site, as a user's `pip install ./python`
    does; returns that directory, for PYTHONPATH."""
    site = os.path.join(work, "site")
    source = os.path.join(work, "package")
    shutil.copytree(package, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps",
         "--no-cache-dir", "--target", site, source], work, None, "pip install ./python")
    return site
