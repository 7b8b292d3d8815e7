#!/usr/bin/env bash
# Builds a reference-ImageNet style data set with no download, in data/synthetic_imagenet_jpeg/,
# for measuring the data path (bench/data_layer) and whole training from JPEGs:
#   images/class<k>/img<i>.jpg   1000 classes of JPEGs of ImageNet-like sizes (sides 375..500,
#                                about 500x375 on average, ~50 KB each; tools/make_synthetic_images)
#   images/train.txt, val.txt    "<path> <label>" lists
#   train_lmdb, val_lmdb         encoded Datums of the images resized to 256x256 and re-encoded as
#                                JPEG (convert_imageset --encoded, as Caffe's create_imagenet.sh
#                                resizes), which the Data layer decodes at every use
#   mean.binaryproto             compute_image_mean of train_lmdb (3x256x256)
# Usage: data/make_synthetic_imagenet_jpeg.sh [build_dir] [train_images]
#   build_dir     default build/
#   train_images  default 12000 (12 per class); validation gets a fifth of it (at least 1000)
# A build without OpenCV (where convert_imageset cannot resize) writes the images at 256x256
# directly and stores their files as they are. Running it again keeps finished outputs; every step
# writes to a temporary name first, so an interrupted run leaves nothing half-written behind.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
train_images="${2:-12000}"
out="$root/data/synthetic_imagenet_jpeg"
classes=1000
size=256

source "$root/data/synthetic_steps.sh"
check_tools make_synthetic_imagenet_jpeg.sh
if ! [[ "$train_images" =~ ^[0-9]+$ ]] || (( train_images < classes )); then
  echo "make_synthetic_imagenet_jpeg.sh: train_images must be a number >= $classes" >&2
  exit 1
fi
train_per_class=$(( train_images / classes ))
val_per_class=$(( (train_per_class + 4) / 5 ))
if grep -Eq "^(CREMA_OPENCV:STRING=OFF|OpenCV_DIR:PATH=.*NOTFOUND)" "$build/CMakeCache.txt"; then
  # Without OpenCV: images already at the training size, stored as they are.
  min_side=$size max_side=$size resize=()
else
  min_side=375 max_side=500 resize=(--resize_height=$size --resize_width=$size --encode_type=jpg)
fi
mkdir -p "$out"

# Quality 90 and noise 8: ~50 KB for a 500x375 image, as ImageNet's JPEGs average.
make_images --classes=$classes --train_per_class=$train_per_class \
    --val_per_class=$val_per_class --min_size=$min_side --max_size=$max_side --jpeg_quality=90 \
    --noise=8
for list in train val; do
  convert_list $list "${resize[@]}" --encoded
done
make_mean
du -sh "$out/images" "$out/train_lmdb" "$out/val_lmdb"
echo "Synthetic ImageNet-style JPEG set in $out ($((train_per_class * classes)) training images)"
