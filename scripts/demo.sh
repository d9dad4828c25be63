#!/usr/bin/env bash
# The main job on the bundled default model: installs everything (apt, and torch into .venv),
# builds, exports the GPT-style decoder (6 layers, 128 wide, 8 x 256 tokens) and
# runs profile -> plan ->
# rewrite in demo/, exactly as a user types them there.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p demo
.venv/bin/python models export-all --set demo --out demo
acprof="$(pwd)/build/cli/acprof"
cd demo
"$acprof" profile gpt_traced.pt
"$acprof" plan --budget 60%
"$acprof" rewrite
echo
echo "before/after memory timelines: $(pwd)/report.html"
