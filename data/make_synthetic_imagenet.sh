#!/usr/bin/env bash
# Builds a small synthetic ImageNet-style data set in data/synthetic_imagenet/:
#   images/class<k>/img<i>.jpg   20 classes x 25 JPEGs of 64..160 px whose colors and stripe
#                                patterns depend on the class (tools/make_synthetic_images)
#   images/train.txt, val.txt    "<path> <label>" lists (20 and 5 images per class)
#   train_lmdb, val_lmdb         the lists resized to 64x64 by convert_imageset
#   mean.binaryproto             compute_image_mean of train_lmdb
# Usage: data/make_synthetic_imagenet.sh [build_dir]   (default: build/)
# Running it again is harmless: finished outputs are kept, and every step writes to a temporary
# name first, so an interrupted run leaves nothing half-written that a later run would skip.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
out="$root/data/synthetic_imagenet"
size=64

for tool in make_synthetic_images convert_imageset compute_image_mean; do
  if [[ ! -x "$build/$tool" ]]; then
    echo "make_synthetic_imagenet.sh: $build/$tool not found; build it first:" \
         "cmake --build $build --target $tool" >&2
    exit 1
  fi
done
mkdir -p "$out"

if [[ -f "$out/images/val.txt" ]]; then
  echo "$out/images exists, skipping"
else
  rm -rf "$out/images.tmp"
  "$build/make_synthetic_images" --classes=20 --train_per_class=20 --val_per_class=5 \
      --min_size=64 --max_size=160 --seed=1 "$out/images.tmp"
  mv "$out/images.tmp" "$out/images"
fi

convert() {  # list name (train|val)
  local lmdb="$out/$1_lmdb"
  if [[ -f "$lmdb/data.mdb" ]]; then
    echo "$lmdb exists, skipping"
    return
  fi
  rm -rf "$lmdb.tmp"
  "$build/convert_imageset" --resize_height=$size --resize_width=$size --shuffle --seed=1 \
      "$out/images/" "$out/images/$1.txt" "$lmdb.tmp"
  mv "$lmdb.tmp" "$lmdb"
}
convert train
convert val

if [[ -f "$out/mean.binaryproto" ]]; then
  echo "$out/mean.binaryproto exists, skipping"
else
  "$build/compute_image_mean" "$out/train_lmdb" "$out/mean.binaryproto"
fi
echo "Synthetic ImageNet-style set in $out (${size}x${size} LMDBs, mean.binaryproto)"
