#!/usr/bin/env bash
# Installs what acprof needs on Debian 12 and builds it.
#   apt:  compilers, the C++ libraries, chromium and its driver (browser test), dygraphs (charts)
#   pip:  torch and torchvision (requirements.txt) into the project venv .venv; LibTorch is that torch's
#   scripts/setup.sh            install dependencies, configure and build into build/
#   scripts/setup.sh --deps     install dependencies only
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build git
  nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev               # the C++ build
  pybind11-dev                                                          # python/engine: acprof._engine
  libssl-dev                                                            # profiler/recorder: a model file's SHA-256 (libcrypto)
  libjs-dygraphs                                                        # viz: the report's charts, embedded at build time
  clang-14 libclang-rt-14-dev                                           # fuzz/: ASan, UBSan, libFuzzer
  chromium chromium-driver python3-selenium                             # viz: the browser test
)

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

# The project venv: torch (and so LibTorch) and what the model exporters import.
# Re-installed only when requirements.txt is newer than the venv's stamp.
PYTHON_FOR_VENV="${ACPROF_VENV_PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "acprof setup: creating .venv with $("$PYTHON_FOR_VENV" --version)"
  "$PYTHON_FOR_VENV" -m venv .venv
fi
if [ ! -f .venv/.acprof-requirements -o requirements.txt -nt .venv/.acprof-requirements ]; then
  echo "acprof setup: pip install -r requirements.txt into .venv (torch is several GB the first time)"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  touch .venv/.acprof-requirements
fi

[ "${1:-}" = "--deps" ] && exit 0

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DACPROF_PYTHON="$(pwd)/.venv/bin/python" \
    | { grep "^-- acprof" || true; }
cmake --build build -j "$(nproc)"
