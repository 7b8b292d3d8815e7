#!/bin/sh
# On the GPU machine: configure and build crema (CUDA on, OpenCV off) in $BUILD (default /tmp/b;
# TARGETS limits what is built, CMAKE_ARGS adds configure options), then run the gpu-labelled
# tests, and with --sanitize also compute-sanitizer's memcheck and racecheck over the CUDA test
# binaries. Logs go to $OUT.
set -eu
cd "$(dirname "$0")/.."
build=${BUILD:-/tmp/b}
out=${OUT:-/tmp}
[ -f .devdeps/env.sh ] && . .devdeps/env.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCREMA_OPENCV=OFF -DCREMA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 ${CMAKE_ARGS:-} >"$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target ${TARGETS:-all} >"$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
status=0
ctest --test-dir "$build" -L gpu --output-on-failure -j4 >"$out/gpu-tests.log" 2>&1 || status=1
tail -40 "$out/gpu-tests.log"
if [ "${1:-}" = "--sanitize" ]; then
  for t in "$build"/test_*_cuda; do
    for tool in memcheck racecheck; do
      echo "== compute-sanitizer --tool $tool $(basename "$t")"
      compute-sanitizer --tool "$tool" --error-exitcode 1 "$t" >"$out/$tool-$(basename "$t").log" 2>&1 \
        && tail -1 "$out/$tool-$(basename "$t").log" || { status=1; tail -20 "$out/$tool-$(basename "$t").log"; }
    done
  done
fi
exit $status
