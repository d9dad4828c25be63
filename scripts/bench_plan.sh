#!/bin/sh
# Builds and runs the planning-time benchmark (torch-free target, Release).
#   scripts/bench_plan.sh [build-dir] [node counts...]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build-planner"}
[ $# -gt 0 ] && shift
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DACPROF_WITH_TORCH=OFF -DACPROF_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" -j2 acprof_plan_bench
"$build/bench/acprof_plan_bench" "$@"
