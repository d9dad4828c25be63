#!/usr/bin/env bash
# The model zoo (issue 10): profiles, plans and rewrites every torchvision classification model
# and a few nn.Transformer stacks with build/cli/acprof, writes docs/zoo.md and exits non-zero if
# any model broke a rule. Options: scripts/zoo.py --help (--only REGEX, --limit N, --jobs N,
# --results DIR, --acprof PATH, --force). Build acprof first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# The project venv's python (scripts/setup.sh): the torch acprof is built on exports the models.
exec .venv/bin/python scripts/zoo.py "$@"
