#!/usr/bin/env bash
# Builds a small synthetic ImageNet-style data set in data/synthetic_imagenet/:
#   images/class<k>/img<i>.jpg   20 classes x 25 JPEGs of 64..160 px whose colors and stripe
#                                patterns depend on the class (tools/make_synthetic_images)
#   images/train.txt, val.txt    "<path> <label>" lists (20 and 5 images per class)
#   train_lmdb, val_lmdb         the lists resized to 64x64 by convert_imageset
#   mean.binaryproto             compute_image_mean of train_lmdb
# Usage: data/make_synthetic_imagenet.sh [build_dir]   (default: build/)
# Running it again is harmless: finished outputs are kept, and every step writes to a temporary
# name first, so an interrupted run leaves nothing half-written that a later run would skip
# (data/synthetic_steps.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
out="$root/data/synthetic_imagenet"
size=64

source "$root/data/synthetic_steps.sh"
check_tools make_synthetic_imagenet.sh
mkdir -p "$out"
make_images --classes=20 --train_per_class=20 --val_per_class=5 --min_size=64 --max_size=160
for list in train val; do
  convert_list $list --resize_height=$size --resize_width=$size
done
make_mean
echo "Synthetic ImageNet-style set in $out (${size}x${size} LMDBs, mean.binaryproto)"
