#!/bin/sh
# The first command of the README: installs the dependencies, builds crema, converts
# Fashion-MNIST (Debian package dataset-fashion-mnist) into LMDBs and trains LeNet on it.
set -eu
cd "$(dirname "$0")/.."
scripts/setup_debian.sh
scripts/build.sh
data/get_fashion_mnist.sh build
mkdir -p models/lenet_fashion/snapshots
# Each run of this script trains afresh, replacing the previous run's snapshots.
exec build/crema train --solver=models/lenet_fashion/lenet_solver.prototxt --overwrite_snapshots "$@"
