#!/bin/sh
# Configures and builds crema in ./build (Release). Extra arguments go to CMake's configure step.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$jobs"
