#!/usr/bin/env bash
# Trains LeNet (batch 64), CaffeNet (256), VGG-16 (64), GoogLeNet (128) and ResNet-50 (128) on one
# GPU with crema and with PyTorch in the same run, so the ratios compare like with like, and prints
# one markdown table. Per net: crema's whole training iteration (bench/train_step) in strict fp32,
# TF32 and BF16, crema's per-layer breakdown (`crema time`, the slowest layers shown), then PyTorch
# in the same three precisions.
# A failing step prints its error and the script goes on with the next one.
#
#   bench/peers/run.sh [crema build dir, default /tmp/b]
#
# Environment: OUT (logs go to $OUT/peers, default /tmp/peers), PYTHON (default python3),
# ITERS / WARMUP (timed and untimed steps of the big nets, default 50 / 10; LeNet runs 4x as
# many), TIME_ITERS (`crema time` iterations, default 10), TOP (layers shown per net, default 12),
# NETS (the nets to run, default "lenet caffenet vgg16 googlenet resnet50").
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

PRECISIONS="fp32 tf32 bf16"
ROWS=()
declare -A CREMA TORCH
for spec in "lenet 64 lenet_time" "caffenet 256 caffenet_train_b256" "vgg16 64 vgg16_train_b64" \
  "googlenet 128 googlenet_train_b128" "resnet50 128 resnet50_train_b128"; do
  read -r net batch model <<<"$spec"
  case " ${NETS:-lenet caffenet vgg16 googlenet resnet50} " in *" $net "*) ;; *) continue ;; esac
  iters=$ITERS warmup=$WARMUP
  [ "$net" = lenet ] && iters=$((ITERS * 4)) warmup=$((WARMUP * 4))
  echo "=== $net, batch $batch ==="

  for p in $PRECISIONS; do
    log=$LOGS/${net}_crema_${p}_train_step.log
    run_logged "$log" "$BUILD/train_step" --solver="bench/models/${net}_solver.prototxt" --gpu=0 \
      --precision="$p" --iterations="$iters" --warmup="$warmup"
    CREMA[${p}_ms]=$(pick "$log" 's/^ms\/iter: median \([0-9.]*\).*/\1/p')
    CREMA[${p}_mib]=$(pick "$log" 's/^peak GPU memory allocated: \([0-9.]*\) MiB/\1/p')
    echo "crema $p: ${CREMA[${p}_ms]} ms/iter, peak ${CREMA[${p}_mib]} MiB"
  done

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
    echo "crema time (default precision): forward+backward $total ms; the $TOP slowest layers" \
      "(ms forward, backward):"
    sort -g -r "$log.layers" | head -n "$TOP" | awk '{ printf "  %-24s %9.3f %9.3f\n", $2, $3, $4 }'
  fi

  for p in $PRECISIONS; do
    log=$LOGS/${net}_torch_$p.log
    run_logged "$log" "$PYTHON" bench/peers/torch_nets.py --net="$net" --batch="$batch" \
      --mode="$p" --iterations="$iters" --warmup="$warmup"
    TORCH[${p}_ms]=$(pick "$log" 's/^RESULT .* ms=\([0-9.]*\) .*/\1/p')
    TORCH[${p}_mib]=$(pick "$log" 's/^RESULT .* peak_mib=\([0-9.]*\).*/\1/p')
    echo "PyTorch $p: ${TORCH[${p}_ms]} ms/iter (peak ${TORCH[${p}_mib]} MiB)"
  done

  row="| $net | $batch"
  for p in $PRECISIONS; do
    ratio=error
    [[ ${CREMA[${p}_ms]} != error && ${TORCH[${p}_ms]} != error ]] &&
      ratio=$(awk -v a="${CREMA[${p}_ms]}" -v b="${TORCH[${p}_ms]}" 'BEGIN { printf "%.2f", a / b }')
    row="$row | ${CREMA[${p}_ms]} / ${TORCH[${p}_ms]} = $ratio"
  done
  ROWS+=("$row | ${CREMA[fp32_mib]} / ${CREMA[bf16_mib]} | ${TORCH[fp32_mib]} / ${TORCH[bf16_mib]} |")
  echo
done

echo "Median ms per training step, crema / PyTorch in the same precision (PyTorch bf16: autocast,"
echo "channels_last for ResNet-50; crema bf16: bf16 tensor-core math on fp32 storage); peak GPU"
echo "memory allocated in fp32 / bf16. Logs: $LOGS"
echo
echo "| net | batch | fp32 | tf32 | bf16 | crema peak MiB | PyTorch peak MiB |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
