#!/usr/bin/env bash
# Whole training steps from JPEGs against the same net from tensors, in one run: each bench net
# (bench/models/<net>_train_b*.prototxt, fed by an Input layer) is timed as it is and with its
# Input and DummyData layers replaced by a TRAIN Data layer over the synthetic ImageNet-style LMDB
# (data/make_synthetic_imagenet_jpeg.sh; crop to the Input's size, mirror, the mean file), for
# each precision and each data_param.decoder.
#   bench/jpeg_steps.sh BUILD                 (on a GPU; the LMDB is made first if missing)
# Settings, with their defaults: NETS="caffenet resnet50" PRECISIONS="fp32 bf16"
#   DECODERS="cpu gpu auto" ITERS=40 WARMUP=10 TRAIN_IMAGES=3000 THREADS=0 (data_param.threads)
#   GPU=0, STEP_ARGS: more train_step flags (e.g. --channels_last), none by default, and
#   STEP_PREFIX: a command train_step runs under (a profiler), none by default.
# Prints one line per run: net, precision, input, ms per step (median of steps timed one at a
# time; back to back), and peak GPU memory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:?usage: bench/jpeg_steps.sh BUILD}" && pwd)"
data="$root/data/synthetic_imagenet_jpeg"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

[[ -f "$data/mean.binaryproto" ]] || "$root/data/make_synthetic_imagenet_jpeg.sh" "$build" \
    "${TRAIN_IMAGES:-3000}" >"$work/make.log" 2>&1 || { tail -5 "$work/make.log"; exit 1; }

# The net with its Input/DummyData layers replaced by a Data layer: $1 net prototxt, $2 decoder.
jpeg_net() {
  python3 - "$1" "$2" "$data" "${THREADS:-0}" <<'PY'
import re, sys
path, decoder, data, threads = sys.argv[1:]
text = open(path).read()
blocks, depth, start = [], 0, None
for m in re.finditer(r"layer \{|\{|\}", text):  # top-level layer blocks by brace depth
    if m.group() == "layer {" and depth == 0: start = m.start()
    depth += -1 if m.group() == "}" else 1
    if depth == 0 and start is not None: blocks.append((start, m.end())); start = None
feeders = [(s, e) for s, e in blocks if re.search(r'type: "(Input|DummyData)"', text[s:e])]
dims = [int(d) for d in re.findall(r"dim: (\d+)", text[feeders[0][0]:feeders[0][1]])]
batch, crop = dims[0], dims[2]
layer = f'''layer {{
  name: "data" type: "Data" top: "data" top: "label" include {{ phase: TRAIN }}
  transform_param {{ mirror: true crop_size: {crop} mean_file: "{data}/mean.binaryproto" }}
  data_param {{ source: "{data}/train_lmdb" batch_size: {batch} backend: LMDB
               threads: {threads} decoder: {decoder.upper()} }}
}}'''
out = text
for s, e in reversed(feeders[1:]): out = out[:s] + out[e:]
out = out[:feeders[0][0]] + layer + out[feeders[0][1]:]
sys.stdout.write(out)
PY
}

step() {  # solver, precision -> "median back_to_back peak"
  ${STEP_PREFIX:-} "$build/train_step" --solver="$1" --gpu="${GPU:-0}" --precision="$2" \
      --iterations="${ITERS:-40}" --warmup="${WARMUP:-10}" ${STEP_ARGS:-} >"$work/step.log" 2>&1 ||
    { echo "failed: $(tail -1 "$work/step.log")"; return; }
  awk '/^ms\/iter: median/ {m = $3} /back to back/ {b = $NF}
       /peak GPU memory/ {p = $(NF-1)} END {printf "%s ms, back to back %s ms, peak %s MiB\n", m, b, p}' \
      "$work/step.log"
}

for net in ${NETS:-caffenet resnet50}; do
  model=$(ls "$root"/bench/models/"$net"_train_b*.prototxt)
  solver="$root/bench/models/${net}_solver.prototxt"
  for decoder in ${DECODERS:-cpu gpu auto}; do
    jpeg_net "$model" "$decoder" >"$work/$net-$decoder.prototxt"
    sed "s|^net: .*|net: \"$work/$net-$decoder.prototxt\"|" "$solver" >"$work/$net-$decoder-solver.prototxt"
  done
  for precision in ${PRECISIONS:-fp32 bf16}; do
    echo "$net $precision Input: $(cd "$root" && step "$solver" "$precision")"
    for decoder in ${DECODERS:-cpu gpu auto}; do
      echo "$net $precision JPEGs, decoder $decoder: $(step "$work/$net-$decoder-solver.prototxt" "$precision")"
    done
  done
done
