#!/bin/sh
# Fuzzes crema's readers of untrusted files under AddressSanitizer + UndefinedBehaviorSanitizer:
# builds the CPU backend with clang, the sanitizers and libFuzzer into build-fuzz (CREMA_FUZZ),
# then runs every target of tests/fuzz over its corpus and fuzzes it.
#
#   scripts/fuzz.sh              each target: its corpus, then 20000 runs from seed 1 (repeatable:
#                                what CI runs)
#   scripts/fuzz.sh --seconds N  each target: its corpus, then N seconds of fuzzing (a campaign)
#   scripts/fuzz.sh --runs N     each target: its corpus, then N runs from seed 1 (fuzz_hdf5:
#                                N / 4, its inputs are read twice, in two processes)
#   scripts/fuzz.sh --tests      also the CPU test suite, under the sanitizers
#   scripts/fuzz.sh --only NAME  only target NAME (e.g. fuzz_jpeg; repeatable)
#
# A target's corpus: tests/fuzz/corpus/<target>/ (every input that once failed, kept as a
# regression case), the prototxt files of models/ and tests/ (text targets) or build-fuzz's
# generated binary seeds. A finding stops the script with the sanitizer's report; the input is
# written to build-fuzz/findings/<target>/ (add it to tests/fuzz/corpus/<target>/ with the fix).
# Installs clang and its sanitizer runtimes with apt-get when missing.
set -eu
cd "$(dirname "$0")/.."
mode=runs
seconds=0
runs=20000
tests=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) mode=time; seconds=$2; shift 2 ;;
    --runs) mode=runs; runs=$2; shift 2 ;;
    --tests) tests=1; shift ;;
    --only) only="$only $2"; shift 2 ;;
    *) echo "usage: scripts/fuzz.sh [--seconds N | --runs N] [--only NAME]... [--tests]" >&2; exit 2 ;;
  esac
done

scripts/setup_debian.sh
if ! dpkg-query -W -f='${Status}' clang libclang-rt-14-dev 2>/dev/null | grep -q "ok installed"; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi

B=build-fuzz
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DCREMA_FUZZ=ON -DCREMA_CUDA=OFF -DCREMA_OPENCV=OFF -DCREMA_MPI=OFF \
  >/dev/null
if [ "$tests" -eq 1 ]; then
  cmake --build "$B" -j "$jobs"
else
  cmake --build "$B" -j "$jobs" --target fuzz_targets
fi

# Seeds: the prototxt files, split into nets and solvers, and the generated binary inputs.
seeds="$B/seeds"
rm -rf "$seeds"
mkdir -p "$seeds/fuzz_net_text" "$seeds/fuzz_net_build" "$seeds/fuzz_solver_text"
nets=""
for f in models/*/*.prototxt bench/models/*.prototxt tests/*/*.prototxt; do
  [ -f "$f" ] || continue
  name=$(echo "$f" | tr '/' '_')
  case "$f" in
    *solver*) cp "$f" "$seeds/fuzz_solver_text/$name" ;;
    *)
      cp "$f" "$seeds/fuzz_net_text/$name"
      cp "$f" "$seeds/fuzz_net_build/$name"
      nets="$nets $f"
      ;;
  esac
done
# shellcheck disable=SC2086
"$B/fuzz_make_seeds" "$seeds" $nets

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS="suppressions=$(pwd)/tests/fuzz/lsan.supp:print_suppressions=0"
for target in "$B"/fuzz_*; do
  name=$(basename "$target")
  [ "$name" = fuzz_make_seeds ] && continue
  [ -x "$target" ] || continue
  [ -z "$only" ] || case " $only " in *" $name "*) ;; *) continue ;; esac
  work="$B/corpus/$name"
  findings="$B/findings/$name"
  rm -rf "$work"
  mkdir -p "$work" "$findings"
  dirs="$work"
  [ -d "tests/fuzz/corpus/$name" ] && dirs="$dirs tests/fuzz/corpus/$name"
  [ -d "$seeds/$name" ] && dirs="$dirs $seeds/$name"
  if [ "$mode" = time ]; then
    limit="-max_total_time=$seconds"
  else
    # fuzz_hdf5 reads each input in the checking process, and again in its own where that read
    # succeeded (hdf5::check_in_child), and LeakSanitizer scans the heap after most runs (libhdf5
    # keeps freed blocks on its lists): about 70 runs a second on the 2-core VM, a quarter of
    # the runs.
    n=$runs
    [ "$name" = fuzz_hdf5 ] && n=$(((runs + 3) / 4))
    limit="-runs=$n -seed=1"
  fi
  # A damaged HDF5 file can make libhdf5 work for seconds in the checking process before its
  # memory limit stops it, and an input is read three ways.
  timeout=10
  [ "$name" = fuzz_hdf5 ] && timeout=30
  echo "== $name"
  # shellcheck disable=SC2086
  "$target" $limit -timeout=$timeout -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$findings/" $dirs 2>"$B/$name.log" || {
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$B/$name.log" | head -20
    echo "fuzz.sh: $name found a failure; log $B/$name.log, input in $findings/" >&2
    exit 1
  }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$B/$name.log" | tr '\n' ' '
  echo
done

if [ "$tests" -eq 1 ]; then
  ctest --test-dir "$B" --output-on-failure -j "$jobs" -L cpu
fi
