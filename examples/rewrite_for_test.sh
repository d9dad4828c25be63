#!/usr/bin/env bash
# Rewrites a model with acprof in a temporary directory, then runs a command on the result.
#
#   examples/rewrite_for_test.sh ACPROF MODEL.pt BUDGET COMMAND [ARGS...]
#
# Runs `acprof profile model.pt`, `acprof plan --budget BUDGET` and `acprof rewrite` as a user
# types them in one directory (one measured iteration, no timed pairs), then COMMAND ARGS...
# --original DIR/model.pt --rewritten DIR/model.ckpt.pt, and exits with its status. The
# directory is removed afterwards.
# Used by the CTest tests of examples/ (tests/examples.cmake).
set -euo pipefail

if [ "$#" -lt 4 ]; then
  echo "usage: $0 ACPROF MODEL.pt BUDGET COMMAND [ARGS...]" >&2
  exit 2
fi
acprof=$1
# acprof runs in the temporary directory: a path to it must not be relative.
case "$acprof" in */*) acprof=$(realpath "$acprof") ;; esac
model=$2
budget=$3
shift 3

directory=$(mktemp -d "${TMPDIR:-/tmp}/acprof-example.XXXXXX")
trap 'rm -rf "$directory"' EXIT

cp "$model" "$directory/model.pt"
(
  cd "$directory"
  # The examples check training, not times: one measured iteration and no timed pairs.
  "$acprof" profile model.pt --iters 1
  "$acprof" plan --budget "$budget"
  "$acprof" rewrite --time-rounds 0
)
"$@" --original "$directory/model.pt" --rewritten "$directory/model.ckpt.pt"
