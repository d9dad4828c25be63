#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then what a C++ user does with it:
# configure and build examples/ as a project of its own (find_package(acprof),
# target acprof::ops), and run the installed acprof.
#
#   tests/install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER Torch_DIR PYTHON
#
# Leaves the prefix in WORK_DIR/prefix and the example in WORK_DIR/example/train_rewritten
# for the tests that run it (tests/examples.cmake). Prints how long the example took to build.
set -euo pipefail

if [ "$#" -ne 7 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER Torch_DIR PYTHON" >&2
  exit 2
fi
build=$1 source=$2 work=$3 generator=$4 compiler=$5 torch_dir=$6 python=$7
prefix=$work/prefix

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"

# What the package promises: the tool, the runtime, its header and the CMake package.
for path in bin/acprof bin/acprof-torch include/acprof/ops.h; do
  [ -f "$prefix/$path" ] || { echo "install_test: $prefix/$path was not installed" >&2; exit 1; }
done
for name in libacprof_ops.so acprofConfig.cmake acprofConfigVersion.cmake acprofTargets.cmake; do
  [ -n "$(find "$prefix" -name "$name" -print -quit)" ] || { echo "install_test: no $name under $prefix" >&2; exit 1; }
done

# The installed tool runs from its new place: acprof starts acprof-torch beside
# it for profile, which finds libacprof_ops.so and LibTorch.
"$prefix/bin/acprof" --help > /dev/null
"$prefix/bin/acprof" profile --help > /dev/null
# Python needs only the installed library.
"$python" -c "import sys, torch; torch.ops.load_library(sys.argv[1]); torch.ops.acprof.checkpoint" \
  "$(find "$prefix" -name libacprof_ops.so -print -quit)"

# Only the prefix: nothing of the build tree may leak into the consumer.
start=$(date +%s)
cmake -S "$source/examples" -B "$work/example" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$compiler" -DCMAKE_PREFIX_PATH="$prefix" -DTorch_DIR="$torch_dir" > "$work/configure.log"
cmake --build "$work/example" > "$work/build.log"
echo "install_test: examples/ configured and built against the installed acprof in $(( $(date +%s) - start )) s"

# The example links the installed library, not the build tree's.
linked=$(ldd "$work/example/train_rewritten" | awk '/libacprof_ops.so/ {print $3}')
case "$linked" in
  "$prefix"/*) ;;
  *) echo "install_test: train_rewritten links '$linked', not the installed libacprof_ops.so" >&2; exit 1 ;;
esac
echo "install_test: train_rewritten links $linked"
