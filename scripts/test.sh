#!/bin/sh
# The test command: installs the dependencies, builds, and runs every test with ctest.
set -eu
cd "$(dirname "$0")/.."
scripts/setup_debian.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
