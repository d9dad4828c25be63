#!/usr/bin/env bash
# `pip install .` as a user runs it, on a fresh clone: into a new virtual environment that has
# torch (the project venv's, reached by a .pth file, as a venv with torch installed has it), then
# the README's acprof.fit block with that environment's Python alone (no PYTHONPATH, no build
# tree), and the installed `acprof` command.
#
#   tests/pip_install_test.sh SOURCE_DIR WORK_DIR PYTHON_WITH_TORCH
#
# Prints how long the install took. Exits non-zero with the reason.
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 SOURCE_DIR WORK_DIR PYTHON_WITH_TORCH" >&2
  exit 2
fi
source_dir=$1 work=$2 python=$3

rm -rf "$work"
mkdir -p "$work"
git clone --quiet --no-local "$source_dir" "$work/acprof"
"$python" -m venv --without-pip "$work/venv"
site=$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > "$site/torch_environment.pth"
"$work/venv/bin/python" -c "import torch" || { echo "pip_install_test: the new venv cannot import torch" >&2; exit 1; }

start=$(date +%s)
# The project venv's pip installs into the new venv (--python): a venv made without pip has none.
# One compile at a time: CTest runs another test beside this one on each core it has, and those
# that time what they run must not share their core with a second compiler.
CMAKE_BUILD_PARALLEL_LEVEL=1 "$python" -m pip --python "$work/venv/bin/python" install --quiet --disable-pip-version-check "$work/acprof" \
  > "$work/install.log" 2>&1 || { tail -30 "$work/install.log" >&2; echo "pip_install_test: pip install . failed" >&2; exit 1; }
echo "pip_install_test: pip install . took $(( $(date +%s) - start )) s"

# What the install promises: the command, its runtime beside it, the package with its engine.
"$work/venv/bin/acprof" --version
[ -f "$work/venv/lib/libacprof_ops.so" ] || { echo "pip_install_test: no lib/libacprof_ops.so in the venv" >&2; exit 1; }
cd "$work"
env -u PYTHONPATH "$work/venv/bin/python" -c "
import acprof, acprof.engine, sys
assert acprof.__file__.startswith(sys.prefix), acprof.__file__
acprof.engine.require()
print('pip_install_test: acprof', acprof.__version__, 'from', acprof.__file__)
"
# The README's fit block, run by the installed package (readme_fit_test.py, --python: no pip install
# of the source tree, no PYTHONPATH).
env -u PYTHONPATH "$python" "$source_dir/tests/python/readme_fit_test.py" --readme "$source_dir/README.md" \
  --python "$work/venv/bin/python"
