#!/bin/sh
# Installs every system package crema needs on Debian 12 with apt-get. Idempotent and quiet
# when everything is already there. Runs apt-get through sudo when not root.
set -eu
packages="build-essential cmake pkg-config protobuf-compiler libprotobuf-dev libgoogle-glog-dev
libgflags-dev liblmdb-dev libleveldb-dev libhdf5-dev libopenblas-dev libopencv-dev libjpeg62-turbo-dev
libgtest-dev zlib1g-dev
libopenmpi-dev openmpi-bin graphviz python3-matplotlib dataset-fashion-mnist python3-dev
pybind11-dev python3-numpy python3-pytest python3-protobuf libonnx-dev python3-onnx"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
