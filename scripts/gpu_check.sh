#!/usr/bin/env bash
# The CUDA check, for the GPU machine (torch 2.11+cu130 in its python3, CMake and ninja,
# nothing fetchable). Two halves:
#
#   scripts/gpu_check.sh --pack    here, on a machine set up by scripts/setup.sh: copies the
#                                  C++ libraries acprof builds with (nlohmann-json, CLI11, fmt,
#                                  GoogleTest, from apt) into .gpu-deps/ (git-ignored)
#   scripts/gpu_check.sh           there, with .gpu-deps/ carried beside the tree: builds acprof
#                                  against that python3's torch, runs the unit tests, then
#                                  profile -> plan -> rewrite at --device cuda on two models,
#                                  and prints a summary (well inside 10 minutes on 16 cores)
#
# Results (profiles, plans, logs, summary.txt) go to $OUT when it is set, else gpu-check/.
set -euo pipefail
cd "$(dirname "$0")/.."
deps=.gpu-deps/usr

if [ "${1:-}" = "--pack" ]; then
  rm -rf .gpu-deps
  lib=lib/x86_64-linux-gnu
  mkdir -p "$deps/include" "$deps/share/cmake" "$deps/$lib/cmake"
  cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/fmt /usr/include/gtest "$deps/include/"
  cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$deps/share/cmake/"
  cp -r /usr/$lib/cmake/fmt /usr/$lib/cmake/GTest "$deps/$lib/cmake/"
  cp -a /usr/$lib/libfmt.so* /usr/$lib/libgtest.a /usr/$lib/libgtest_main.a "$deps/$lib/"
  mkdir -p "$deps/share/javascript/dygraphs" "$deps/share/doc/libjs-dygraphs"   # the report's charts (viz/)
  cp -L /usr/share/javascript/dygraphs/dygraph.min.js /usr/share/javascript/dygraphs/dygraph.min.css \
        "$deps/share/javascript/dygraphs/"
  cp /usr/share/doc/libjs-dygraphs/copyright "$deps/share/doc/libjs-dygraphs/"
  echo "gpu_check: packed $(du -sh .gpu-deps | cut -f1) into .gpu-deps; carry it with the run"
  exit 0
fi

results="${OUT:-$(pwd)/gpu-check}"
mkdir -p "$results"
summary="$results/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

python=${ACPROF_GPU_PYTHON:-python3}
say "gpu_check: $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
say "gpu_check: $("$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())')"

packed=()
[ -d "$deps" ] && packed=(-DCMAKE_PREFIX_PATH="$(pwd)/$deps"
                          -DACPROF_DYGRAPHS_DIR="$(pwd)/$deps/share/javascript/dygraphs"
                          -DACPROF_DYGRAPHS_COPYRIGHT="$(pwd)/$deps/share/doc/libjs-dygraphs/copyright")
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DACPROF_PYTHON="$(command -v "$python")" \
      "${packed[@]}" > "$results/configure.log" 2>&1 \
  || { tail -20 "$results/configure.log"; exit 1; }
grep "^-- acprof" "$results/configure.log" | tee -a "$summary"
cmake --build build-gpu -j "$(nproc)" > "$results/build.log" 2>&1 || { grep -m 20 -B2 -A8 "error" "$results/build.log"; exit 1; }
say "gpu_check: built in $(( $(date +%s) - start )) s; $(build-gpu/cli/acprof --version)"

# The unit tests (torch-free logic of the CUDA path included); the end-to-end suite runs in CI.
ctest --test-dir build-gpu -j "$(nproc)" -E "RewriteEndToEnd|zoo_|viz_browser|bench_|example" \
      > "$results/ctest.log" 2>&1 && ctest_status=passed || ctest_status=FAILED
say "gpu_check: ctest $ctest_status: $(grep -E 'tests passed|tests failed' "$results/ctest.log" | tail -1)"

# End to end at --device cuda: profile -> plan at 60 % -> rewrite, verified and re-profiled.
acprof="$(pwd)/build-gpu/cli/acprof"
"$python" models/export_all.py --set test --out "$results/models" > /dev/null 2>&1
for model in gpt_sdpa_traced resnet18_traced; do
  work="$results/$model"
  mkdir -p "$work"
  cp "$results/models/$model.pt" "$work/model.pt"
  (
    cd "$work"
    export CUBLAS_WORKSPACE_CONFIG=:4096:8
    "$acprof" profile model.pt --device cuda > profile.log 2>&1
    "$acprof" plan --budget 60% > plan.log 2>&1
    "$acprof" rewrite > rewrite.log 2>&1
  ) && status=ok || status=FAILED
  say "gpu_check: $model at cuda: $status"
  for log in profile plan rewrite; do
    [ -f "$work/$log.log" ] && grep -E "^(peak|predicted|measured|verification|time|acprof: error)" "$work/$log.log" \
      | sed "s/^/  $log: /" | tee -a "$summary"
  done
done
say "gpu_check: done in $(( $(date +%s) - start )) s; logs in $results"
