#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The full space against the plain space, and apsolve on the full space's
# database, with two release builds in one run (issue 38; docs/performance.md
# "All together"): user and system CPU seconds, peak RSS and database bytes
# from /usr/bin/time. Printed, never asserted.
# Usage: bench/full_space_ab.sh BASE_BUILD NEW_BUILD [DIR]
# FULL_126=1 adds llama-3.1-405b with its 126 layers (issue 38's 500 MB
# figure; 3.5 million tuples, minutes of CPU each), and only that with
# FULL_126=only.
set -u
B=${1:?base build dir}; N=${2:?new build dir}
T=${3:-$(mktemp -d)}; mkdir -p "$T"
run() { # tag bin args...
  local tag=$1 bin=$2; shift 2
  rm -f "$T/$tag.db"
  /usr/bin/time -f "$tag user %U sys %S rss_kb %M wall %e" $bin/profiler/cli/approf sweep "$@" --backend model --hardware h100-sxm --micro-batches 8 --quiet --db "$T/$tag.db" 2>&1 | grep "^$tag"
  echo "$tag db_bytes $(stat -c %s "$T/$tag.db")"
}
if [ "${FULL_126:-0}" != only ]; then
for i in 1 2; do
for b in base new; do bin=$B; [ $b = new ] && bin=$N
  run 8b-plain-$b $bin --model llama --preset llama-3-8b --cluster 1x8 --variants alpa
  run 8b-full-$b $bin --model llama --preset llama-3-8b --cluster 1x8 --variants all
done; done
for b in base new; do bin=$B; [ $b = new ] && bin=$N
  run 70b-plain-$b $bin --model llama --preset llama-3-70b --layers 40 --cluster 8x8 --variants alpa
  run 70b-full-$b $bin --model llama --preset llama-3-70b --layers 40 --cluster 8x8 --variants all
done
for i in 1 2 3; do for b in base new; do bin=$B; [ $b = new ] && bin=$N
  /usr/bin/time -f "apsolve-70b-$b user %U sys %S rss_kb %M" $bin/solver/apsolve --db "$T/70b-full-$b.db" --no-store --quiet 2>&1 | grep apsolve
done; done
for b in base new; do bin=$B; [ $b = new ] && bin=$N
  run 405b24-full-$b $bin --model llama --preset llama-3.1-405b --layers 24 --cluster 32x8 --variants all --allow-large
done
fi
if [ "${FULL_126:-0}" != 0 ]; then
  for b in base new; do bin=$B; [ $b = new ] && bin=$N
    run 405b126-full-$b $bin --model llama --preset llama-3.1-405b --layers 126 --cluster 32x8 --variants all --allow-large
  done
fi
