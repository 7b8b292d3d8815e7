#!/usr/bin/env bash
# Data-parallel scaling on one host against PyTorch DistributedDataParallel, in one run: per net
# and precision, the median step of one GPU and of N GPUs (batch per GPU) for crema, one process
# (bench/train_step --gpus) and one process per GPU (mpirun), and PyTorch (torch_nets.py under
# torchrun), and the scaling N * t1 / tN (N would be perfect). Prints one markdown table.
#
#   bench/peers/scale.sh [crema build dir, default /tmp/b]
#
# Environment: GPUS (default 2), NETS (default "caffenet:256 resnet50:128"), MODES (default
# "tf32 bf16"), ITERS / WARMUP (default 30 / 10), OUT (logs in $OUT/scale), PYTHON.
set -u
BUILD=$(cd "${1:-/tmp/b}" && pwd) || exit 1
cd "$(dirname "$0")/../.." || exit 1
LOGS=${OUT:-/tmp}/scale
mkdir -p "$LOGS"
PYTHON=${PYTHON:-python3}
GPUS=${GPUS:-2}
NETS=${NETS:-"caffenet:256 resnet50:128"}
MODES=${MODES:-"tf32 bf16"}
ITERS=${ITERS:-30}
WARMUP=${WARMUP:-10}
LIST=$(seq -s, 0 $((GPUS - 1)))

# The median ms of a run's log ("error" when the run failed).
crema_ms() {
  timeout 600 "$BUILD/train_step" "$@" >"$LOG" 2>&1 || { echo error; return; }
  sed -n 's/^ms\/iter: median \([0-9.]*\).*/\1/p' "$LOG"
}
crema_mpi_ms() {
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 600 \
    mpirun -np "$GPUS" --bind-to none "$BUILD/train_step" "$@" >"$LOG" 2>&1 || { echo error; return; }
  sed -n 's/^ms\/iter: median \([0-9.]*\).*/\1/p' "$LOG"
}
torch_ms() {
  timeout 600 "$@" >"$LOG" 2>&1 || { echo error; return; }
  sed -n 's/^RESULT .* ms=\([0-9.]*\) .*/\1/p' "$LOG"
}
scaling() { awk -v n="$GPUS" -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", n * a / b; else print "-" }'; }

echo "| net | batch per GPU | precision | crema 1 GPU ms | crema $GPUS GPUs ms | crema scaling | crema mpirun $GPUS ms | mpirun scaling | PyTorch 1 GPU ms | PyTorch DDP $GPUS GPUs ms | PyTorch scaling |"
echo "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"
for entry in $NETS; do
  net=${entry%%:*}
  batch=${entry##*:}
  for mode in $MODES; do
    common=(--solver="bench/models/${net}_solver.prototxt" --precision="$mode"
            --iterations="$ITERS" --warmup="$WARMUP")
    LOG=$LOGS/crema_${net}_${mode}_1.log; c1=$(crema_ms "${common[@]}" --gpu=0)
    LOG=$LOGS/crema_${net}_${mode}_$GPUS.log; cn=$(crema_ms "${common[@]}" --gpus="$LIST")
    LOG=$LOGS/crema_${net}_${mode}_mpi$GPUS.log; cm=$(crema_mpi_ms "${common[@]}")
    targs=(bench/peers/torch_nets.py --net="$net" --batch="$batch" --mode="$mode"
           --iterations="$ITERS" --warmup="$WARMUP")
    LOG=$LOGS/torch_${net}_${mode}_1.log; t1=$(torch_ms "$PYTHON" "${targs[@]}")
    LOG=$LOGS/torch_${net}_${mode}_$GPUS.log
    tn=$(torch_ms "$PYTHON" -m torch.distributed.run --standalone --nproc_per_node="$GPUS" "${targs[@]}")
    echo "| $net | $batch | $mode | $c1 | $cn | $(scaling "$c1" "$cn") | $cm | $(scaling "$c1" "$cm") | $t1 | $tn | $(scaling "$t1" "$tn") |"
  done
done
