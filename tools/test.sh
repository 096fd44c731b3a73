#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures, builds with warnings as errors and runs every test suite.
# Usage: tools/test.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
if [ ! -d "$dir" ]; then
  meson setup "$dir" --werror
else
  meson configure "$dir" --werror >/dev/null
fi
ninja -C "$dir"
meson test -C "$dir" --print-errorlogs --num-processes 2
