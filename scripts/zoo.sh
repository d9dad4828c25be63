#!/usr/bin/env bash
# The model zoo (issue 10): profiles, plans and rewrites every torchvision classification model
# and a few nn.Transformer stacks with build/cli/acprof, writes docs/zoo.md and exits non-zero if
# any model broke a rule. Options: scripts/zoo.py --help (--only REGEX, --limit N, --jobs N,
# --results DIR, --acprof PATH, --force). Build acprof first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's python: torch and torchvision come from apt (scripts/setup.sh), never from pip.
exec /usr/bin/python3 scripts/zoo.py "$@"
