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
  # Each binary's tests are split into SHARDS gtest shards run side by side (the tools slow the
  # kernels 10-100x); SANITIZE_TIMEOUT bounds each run. Logs: $out/sanitize-logs.tar.gz, one
  # summary line per run in $out/sanitize-summary.log.
  shards=${SHARDS:-6}
  logs=$(mktemp -d)
  for t in "$build"/test_*_cuda; do
    for tool in memcheck racecheck; do
      i=0
      while [ $i -lt "$shards" ]; do
        GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${SANITIZE_TIMEOUT:-480}" \
          compute-sanitizer --tool "$tool" --error-exitcode 1 "$t" \
          >"$logs/$tool-$(basename "$t")-$i.log" 2>&1 &
        i=$((i + 1))
      done
    done
  done
  wait
  for f in "$logs"/*.log; do
    echo "$(basename "$f"): $(grep -E '^\[  (PASSED|FAILED)  \]' "$f" | head -1) $(grep -E 'ERROR SUMMARY' "$f" | tail -1)"
  done | tee "$out/sanitize-summary.log"
  grep -q -E 'ERROR SUMMARY: [1-9]|FAILED' "$out/sanitize-summary.log" && status=1
  grep -L 'ERROR SUMMARY' "$logs"/*.log | sed 's/^/unfinished: /' | tee -a "$out/sanitize-summary.log"
  tar -czf "$out/sanitize-logs.tar.gz" -C "$logs" .
fi
exit $status
