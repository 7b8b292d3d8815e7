#!/usr/bin/env bash
# Builds the Fashion-MNIST LMDBs (data/fashion_mnist/fashion_mnist_{train,test}_lmdb) from the
# IDX files of the Debian package dataset-fashion-mnist, using the built convert_mnist.
# Usage: data/get_fashion_mnist.sh [build_dir]   (default: build/)
# Running it again is harmless: existing LMDBs are kept.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
src="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
out="$root/data/fashion_mnist"
tool="$build/convert_mnist"

if [[ ! -x "$tool" ]]; then
  echo "get_fashion_mnist.sh: $tool not found; build it first:" \
       "cmake --build $build --target convert_mnist" >&2
  exit 1
fi
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz \
         t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  if [[ ! -f "$src/$f" ]]; then
    echo "get_fashion_mnist.sh: $src/$f not found; install it with" \
         "'apt-get install dataset-fashion-mnist' or set FASHION_MNIST_DIR" >&2
    exit 1
  fi
done

mkdir -p "$out"
convert() {  # prefix (train|t10k), name (train|test)
  local lmdb="$out/fashion_mnist_$2_lmdb"
  if [[ -f "$lmdb/data.mdb" ]]; then
    echo "$lmdb exists, skipping"
    return
  fi
  # Convert into a temporary name, then rename: an interrupted run leaves no half-written LMDB
  # that a later run would skip.
  rm -rf "$lmdb.tmp"
  "$tool" "$src/$1-images-idx3-ubyte.gz" "$src/$1-labels-idx1-ubyte.gz" "$lmdb.tmp"
  mv "$lmdb.tmp" "$lmdb"
}
convert train train
convert t10k test
echo "Fashion-MNIST LMDBs are in $out"
