#!/usr/bin/env bash
# Trains LeNet (batch 64), CaffeNet (256) and ResNet-50 (128) on one GPU with crema and with
# PyTorch in the same run, so the ratios compare like with like, and prints one markdown table.
# Per net: crema's whole training iteration (bench/train_step), crema's per-layer breakdown
# (`crema time`, the slowest layers shown), then PyTorch in strict fp32 and in TF32.
# A failing step prints its error and the script goes on with the next one.
#
#   bench/peers/run.sh [crema build dir, default /tmp/b]
#
# Environment: OUT (logs go to $OUT/peers, default /tmp/peers), PYTHON (default python3),
# ITERS / WARMUP (timed and untimed steps of the big nets, default 50 / 10; LeNet runs 4x as
# many), TIME_ITERS (`crema time` iterations, default 10), TOP (layers shown per net, default 12).
set -u
BUILD=$(cd "${1:-/tmp/b}" && pwd) || exit 1
cd "$(dirname "$0")/../.." || exit 1  # prototxt paths are relative to the repository root
LOGS=${OUT:-/tmp}/peers
mkdir -p "$LOGS"
PYTHON=${PYTHON:-python3}
ITERS=${ITERS:-50}
WARMUP=${WARMUP:-10}
TIME_ITERS=${TIME_ITERS:-10}
TOP=${TOP:-12}
LIMIT=600  # seconds any one command may take

# Runs a command with its output in log $1; on failure says so with the log's last lines.
run_logged() {
  local log=$1
  shift
  echo "\$ $*" >"$log"
  timeout "$LIMIT" "$@" >>"$log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAILED (exit $rc): $* -- last lines of $log:"
    tail -n 5 "$log" | sed 's/^/    /'
  fi
  return $rc
}

# Prints the first match of sed expression $2 in file $1, or "error".
pick() {
  local v
  v=$(sed -n "$2" "$1" 2>/dev/null | head -n 1)
  echo "${v:-error}"
}

ROWS=()
declare -A TORCH
for spec in "lenet 64 lenet_time" "caffenet 256 caffenet_train_b256" \
  "resnet50 128 resnet50_train_b128"; do
  read -r net batch model <<<"$spec"
  iters=$ITERS warmup=$WARMUP
  [ "$net" = lenet ] && iters=$((ITERS * 4)) warmup=$((WARMUP * 4))
  echo "=== $net, batch $batch ==="

  log=$LOGS/${net}_crema_train_step.log
  run_logged "$log" "$BUILD/train_step" --solver="bench/models/${net}_solver.prototxt" --gpu=0 \
    --iterations="$iters" --warmup="$warmup"
  crema_ms=$(pick "$log" 's/^ms\/iter: median \([0-9.]*\).*/\1/p')
  crema_mib=$(pick "$log" 's/^peak GPU memory allocated: \([0-9.]*\) MiB/\1/p')
  echo "crema: $crema_ms ms/iter, peak $crema_mib MiB"

  log=$LOGS/${net}_crema_time.log
  if run_logged "$log" "$BUILD/crema" time --model="bench/models/$model.prototxt" --gpu=0 \
    --iterations="$TIME_ITERS"; then
    # glog lines "I... crema.cpp:N] <layer>\tforward: <ms> ms." and the same for backward.
    sed -n 's/^[^]]*\] //p' "$log" | awk '
      $2 == "forward:" { if (!($1 in f)) order[n++] = $1; f[$1] = $3 }
      $2 == "backward:" { b[$1] = $3 }
      END { for (i = 0; i < n; i++) { k = order[i]; print f[k] + b[k], k, f[k], b[k] } }
    ' >"$log.layers"
    total=$(pick "$log" 's/.*Average Forward-Backward: \([0-9.]*\) ms\./\1/p')
    echo "crema time: forward+backward $total ms; the $TOP slowest layers (ms forward, backward):"
    sort -g -r "$log.layers" | head -n "$TOP" | awk '{ printf "  %-24s %9.3f %9.3f\n", $2, $3, $4 }'
  fi

  for mode in fp32 tf32; do
    log=$LOGS/${net}_torch_$mode.log
    run_logged "$log" "$PYTHON" bench/peers/torch_nets.py --net="$net" --batch="$batch" \
      --mode="$mode" --iterations="$iters" --warmup="$warmup"
    TORCH[${mode}_ms]=$(pick "$log" 's/^RESULT .* ms=\([0-9.]*\) .*/\1/p')
    TORCH[${mode}_mib]=$(pick "$log" 's/^RESULT .* peak_mib=\([0-9.]*\).*/\1/p')
  done
  echo "PyTorch: fp32 ${TORCH[fp32_ms]} ms/iter (peak ${TORCH[fp32_mib]} MiB)," \
    "TF32 ${TORCH[tf32_ms]} ms/iter (peak ${TORCH[tf32_mib]} MiB)"

  ratio=error
  [[ $crema_ms != error && ${TORCH[fp32_ms]} != error ]] &&
    ratio=$(awk -v a="$crema_ms" -v b="${TORCH[fp32_ms]}" 'BEGIN { printf "%.2f", a / b }')
  row="| $net | $batch | $crema_ms | ${TORCH[fp32_ms]} | ${TORCH[tf32_ms]} | $ratio"
  ROWS+=("$row | $crema_mib | ${TORCH[fp32_mib]} / ${TORCH[tf32_mib]} |")
  echo
done

echo "Median ms per training step; peak GPU memory allocated (PyTorch: fp32 / TF32 runs)."
echo "Logs: $LOGS"
echo
echo "| net | batch | crema ms/iter | PyTorch fp32 ms/iter | PyTorch TF32 ms/iter |" \
  "crema / PyTorch fp32 | crema peak MiB | PyTorch peak MiB |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
