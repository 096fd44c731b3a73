#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer
# in a separate build directory and runs every test suite there; any report
# fails the run.
# Usage: tools/test-sanitize.sh [BUILD_DIR]   (default: build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan}
if [ ! -d "$dir" ]; then
  meson setup "$dir" --werror -Db_sanitize=address,undefined -Db_lundef=false
fi
ninja -C "$dir"
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
meson test -C "$dir" --print-errorlogs --num-processes 2
