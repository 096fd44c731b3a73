#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer
# in a separate build directory and runs every test suite there (unit,
# integration, fuzz corpora, reliability); any sanitizer report fails the
# run: ASan and UBSan halt on the first error, LeakSanitizer reports leaks at
# exit. Timeouts are tripled (sanitized code runs 2-3x slower). The valgrind
# test skips itself here (valgrind cannot run ASan binaries).
# Usage: tools/test-sanitize.sh [BUILD_DIR]   (default: build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan}
if [ ! -d "$dir" ]; then
  meson setup "$dir" --werror -Db_sanitize=address,undefined -Db_lundef=false
else
  meson configure "$dir" --werror -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
ninja -C "$dir"
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
meson test -C "$dir" --print-errorlogs --num-processes 2 --timeout-multiplier 3
