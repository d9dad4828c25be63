#!/usr/bin/env bash
# Builds acprof and runs the whole test suite (unit, end-to-end, browser).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
