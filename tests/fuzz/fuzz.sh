#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the fuzz harnesses under libFuzzer (clang, ASan + UBSan): configures
# BUILD_DIR once with -Dfuzzing=true, then fuzzes each harness for SECONDS,
# starting from the committed corpus and keeping new inputs in
# BUILD_DIR/corpus-NAME. Crashes land in BUILD_DIR/crash-NAME-*; replay one
# with `BUILD_DIR/tests/fuzz/fuzz_NAME FILE`. With --merge, the new inputs
# that add coverage are merged into the committed corpus (keep it < 2 MB).
# Usage: tests/fuzz/fuzz.sh [--merge] [SECONDS] [BUILD_DIR] [NAME...]
#        NAME: csv modelfile hwspec db cli (default: all)
set -euo pipefail
cd "$(dirname "$0")/../.."
merge=0
if [ "${1:-}" = --merge ]; then merge=1; shift; fi
secs=${1:-60}
dir=${2:-build-fuzz}
shift 2 2>/dev/null || shift $#
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(csv modelfile hwspec db cli)
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (apt-get install clang)"; exit 1; }
if [ ! -d "$dir" ]; then
  CC=clang CFLAGS=-fsanitize=fuzzer-no-link meson setup "$dir" -Dfuzzing=true \
    -Db_sanitize=address,undefined -Db_lundef=false
fi
ninja -C "$dir" $(printf 'tests/fuzz/fuzz_%s ' "${names[@]}")
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for n in "${names[@]}"; do
  mkdir -p "$dir/corpus-$n"
  echo "== $n: ${secs}s"
  "$dir/tests/fuzz/fuzz_$n" "$dir/corpus-$n" "tests/fuzz/corpus/$n" -max_total_time="$secs" \
    -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 -artifact_prefix="$dir/crash-$n-" \
    -print_final_stats=1 2>&1 | grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done|==.*ERROR|SUMMARY)' || true
  if [ $merge = 1 ]; then
    "$dir/tests/fuzz/fuzz_$n" -merge=1 -close_fd_mask=3 "tests/fuzz/corpus/$n" "$dir/corpus-$n" 2>&1 |
      grep -E '^MERGE-OUTER: [0-9]+ new files' || true
  fi
  echo "corpus tests/fuzz/corpus/$n: $(ls "tests/fuzz/corpus/$n" | wc -l) files, $(du -sk "tests/fuzz/corpus/$n" | cut -f1) KiB"
done
ls "$dir"/crash-* 2>/dev/null && { echo "fuzz.sh: crashes found (above)"; exit 1; }
exit 0
