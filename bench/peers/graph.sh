#!/usr/bin/env bash
# LeNet's training step (batch 64, strict fp32 or TF32) with and without a CUDA graph, crema and
# PyTorch in the same run: crema's bench/train_step with --cuda_graph (the default) and
# --nocuda_graph, PyTorch's torch_nets.py plain and with --graph (the whole step captured as
# PyTorch documents). Prints one markdown table.
#
#   bench/peers/graph.sh [crema build dir, default /tmp/b]
#
# Environment: OUT (logs go to $OUT/graph, default /tmp/graph), PYTHON (default python3),
# ITERS / WARMUP (timed and untimed steps, default 1000 / 100), PRECISION (fp32 or tf32: crema's
# --precision and PyTorch's mode, default fp32).
set -u
BUILD=$(cd "${1:-/tmp/b}" && pwd) || exit 1
cd "$(dirname "$0")/../.." || exit 1
LOGS=${OUT:-/tmp}/graph
mkdir -p "$LOGS"
PYTHON=${PYTHON:-python3}
ITERS=${ITERS:-1000}
WARMUP=${WARMUP:-100}
PRECISION=${PRECISION:-fp32}

# Prints the first match of sed expression $2 in file $1, or "error".
pick() {
  local v
  v=$(sed -n "$2" "$1" 2>/dev/null | head -n 1)
  echo "${v:-error}"
}

for graph in cuda_graph nocuda_graph; do
  log=$LOGS/crema_$graph.log
  timeout 600 "$BUILD/train_step" --solver=bench/models/lenet_solver.prototxt --gpu=0 \
    --precision="$PRECISION" --iterations="$ITERS" --warmup="$WARMUP" --"$graph" >"$log" 2>&1
  declare "crema_$graph=$(pick "$log" 's/^ms\/iter: median \([0-9.]*\).*/\1/p')"
  declare "crema_b2b_$graph=$(pick "$log" 's/^ms\/iter back to back: \([0-9.]*\)/\1/p')"
done
for graph in "" --graph; do
  log=$LOGS/torch${graph:+_graph}.log
  timeout 600 "$PYTHON" bench/peers/torch_nets.py --net=lenet --batch=64 --mode="$PRECISION" \
    --iterations="$ITERS" --warmup="$WARMUP" $graph >"$log" 2>&1
  declare "torch${graph:+_graph}=$(pick "$log" 's/^RESULT .* ms=\([0-9.]*\) .*/\1/p')"
  declare "torch_b2b${graph:+_graph}=$(pick "$log" 's/^RESULT .* back_to_back_ms=\([0-9.]*\) .*/\1/p')"
done
echo "LeNet b64 $PRECISION, ms per training step: the median of steps waited for one by one, and the"
echo "mean of as many steps run back to back (one wait at the end)"
echo
echo "| | launched, one by one | launched, back to back | CUDA graph, one by one | CUDA graph, back to back |"
echo "|---|--:|--:|--:|--:|"
echo "| crema | $crema_nocuda_graph | $crema_b2b_nocuda_graph | $crema_cuda_graph | $crema_b2b_cuda_graph |"
echo "| PyTorch | $torch | $torch_b2b | $torch_graph | $torch_b2b_graph |"
echo "Logs: $LOGS"
