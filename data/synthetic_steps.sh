# The steps the synthetic data set scripts share (sourced by make_synthetic_imagenet*.sh, which
# set root, build and out first). Each step keeps a finished output and writes to a temporary
# name first, so an interrupted run leaves nothing half-written that a later run would skip.

# Checks that the tools the steps run are built; $1 names the calling script in the message.
check_tools() {
  local tool
  for tool in make_synthetic_images convert_imageset compute_image_mean; do
    if [[ ! -x "$build/$tool" ]]; then
      echo "$1: $build/$tool not found; build it first:" \
           "cmake --build $build --target $tool" >&2
      exit 1
    fi
  done
}

# images/ with its train.txt and val.txt lists, by make_synthetic_images with the given flags.
make_images() {
  if [[ -f "$out/images/val.txt" ]]; then
    echo "$out/images exists, skipping"
    return
  fi
  rm -rf "$out/images.tmp"
  "$build/make_synthetic_images" "$@" --seed=1 "$out/images.tmp"
  mv "$out/images.tmp" "$out/images"
}

# <list>_lmdb from images/<list>.txt (list: train or val), by convert_imageset with the given
# flags.
convert_list() {
  local list="$1" lmdb="$out/$1_lmdb"
  shift
  if [[ -f "$lmdb/data.mdb" ]]; then
    echo "$lmdb exists, skipping"
    return
  fi
  rm -rf "$lmdb.tmp"
  "$build/convert_imageset" "$@" --shuffle --seed=1 "$out/images/" "$out/images/$list.txt" \
      "$lmdb.tmp"
  mv "$lmdb.tmp" "$lmdb"
}

# mean.binaryproto, the mean image of train_lmdb.
make_mean() {
  if [[ -f "$out/mean.binaryproto" ]]; then
    echo "$out/mean.binaryproto exists, skipping"
    return
  fi
  "$build/compute_image_mean" "$out/train_lmdb" "$out/mean.binaryproto.tmp"
  mv "$out/mean.binaryproto.tmp" "$out/mean.binaryproto"
}
