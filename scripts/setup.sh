#!/usr/bin/env bash
# Installs what acprof needs on Debian 12 (apt and npm only) and builds it.
#   scripts/setup.sh            install dependencies, configure and build into build/
#   scripts/setup.sh --deps     install dependencies only
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build git
  libtorch-dev nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev   # the C++ build
  python3 python3-torch python3-torchvision                             # exporting reference models
  clang-14 libclang-rt-14-dev                                           # fuzz/: ASan, UBSan, libFuzzer
  chromium                                                              # viz: the browser test
)
# The machine image may already carry Node.js and npm outside apt; use apt's only if none.
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(nodejs npm)

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "acprof setup: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The charting library embedded into report pages, pinned by package-lock.json.
if [ -f package-lock.json ] && [ ! -f node_modules/.package-lock.json -o package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

[ "${1:-}" = "--deps" ] && exit 0

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
