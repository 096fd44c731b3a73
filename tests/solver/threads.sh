#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --threads N (docs/performance.md, "apsolve's independent searches
# on several cores"): the auto search's chunked schedules side by side and
# its cp candidates searched ahead give the output of one thread, whatever
# N. Three small llama sweeps on 1x8 H100: a long sequence, where cp wins
# (cp=2, so the candidates after it are searched again in the serial
# order), a short one with every variant, where the chunked schedules
# (interleaved, interleaved ZB, ZB-V) compete, and a long one at four
# micro-batch sizes; each under one or more option sets, --threads 1 against 3 and the default: the JSON less solve_seconds
# and stderr less the `solved in` line the same, the exit status too.
# With SQLITE3, a small GPT whose auto plan is a zero-bubble one, and the
# same sweep without the weight-gradient seconds (the zero-bubble families'
# tasks, which say on a thread of their own whether they run, then run
# none): the same plan at every N, a zero-bubble one only with the split.
# Usage: threads.sh APPROF APSOLVE [SQLITE3]
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 sq=$3
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --db "$w/long.db" --quiet --variants alpa --model llama --preset llama-3-8b \
  --num-layers 8 --layers 4 --seq-len 32768 --cluster 1x8 --hardware h100-sxm --batch 16 \
  --micro-batches 2 >"$w/out" 2>&1 || fail_with "$w/out" "long llama sweep"
"$approf" sweep --db "$w/all.db" --quiet --variants all --model llama --preset llama-3-8b \
  --num-layers 8 --layers 8 --cluster 1x8 --hardware h100-sxm --batch 32 --micro-batches 8 \
  >"$w/out" 2>&1 || fail_with "$w/out" "short llama sweep, every variant"
"$approf" sweep --db "$w/sizes.db" --quiet --variants all --model llama --preset llama-3-8b \
  --num-layers 8 --layers 4 --seq-len 32768 --cluster 1x8 --hardware h100-sxm --batch 16 \
  --micro-batch-sizes 16,8,4,2 >"$w/out" 2>&1 || fail_with "$w/out" "long llama sweep, four sizes"

# run DB NAME THREADS OPTIONS...: the normalized output of one run in $w/NAME.THREADS
run() {
  db=$1 name=$2 t=$3
  shift 3
  if [ "$t" = default ]; then
    "$apsolve" --db "$w/$db.db" --no-store --format json "$@" >"$w/j" 2>"$w/e"
  else
    "$apsolve" --db "$w/$db.db" --no-store --format json --threads "$t" "$@" >"$w/j" 2>"$w/e"
  fi
  rc=$?
  grep -q "Sanitizer\|runtime error" "$w/e" && fail_with "$w/e" "$name --threads $t: crashed"
  { echo "exit $rc"; sed -E 's/"solve_seconds": *[0-9.e+-]+//g' "$w/j"; grep -v "solved in" "$w/e"; } \
    >"$w/$name.$t"
}

# check NAME DB OPTIONS...: --threads 1, 3 and the default give the same
check() {
  name=$1 db=$2
  shift 2
  for t in 1 3 default; do
    run "$db" "$name" "$t" "$@"
  done
  for t in 3 default; do
    cmp -s "$w/$name.1" "$w/$name.$t" ||
      { diff "$w/$name.1" "$w/$name.$t" | head -20; fail "$name: --threads $t differs from 1"; }
  done
}

check long long
grep -q "^apsolve: context parallelism cp=2 wins" "$w/long.1" || fail_with "$w/long.1" "long: cp wins"
check long-headroom0 long --memory-headroom 0
check long-alpa long --objective alpa
check all all
grep -q '^exit 0' "$w/all.1" || fail_with "$w/all.1" "all: exit status"
check all-30g all --memory-budget 30G
check all-alpa all --objective alpa
check all-headroom20 all --memory-headroom 20%
check all-zbv all --schedule zbv
# four sizes, Alpa's objective: cp plans at two sizes beat the plain one,
# the later size's candidates searched from the earlier size's cp plan
check sizes-alpa sizes --objective alpa
grep -q "^apsolve: context parallelism cp=4 cp_comm=a2a wins" "$w/sizes-alpa.1" ||
  fail_with "$w/sizes-alpa.1" "sizes: cp wins"
[ -n "$sq" ] || { echo "ok (no sqlite3: the zero-bubble cases skipped)"; exit 0; }
"$approf" sweep --db "$w/zb.db" --quiet --model gpt --num-layers 8 --hidden 512 --heads 8 \
  --seq-len 256 --vocab 1000 --cluster 1x4 --hardware h100-sxm --batch 32 --micro-batches 8 \
  --layers 8 --dtype bf16 >"$w/out" 2>&1 || fail_with "$w/out" "gpt sweep"
cp "$w/zb.db" "$w/nowg.db" || fail "copying the gpt sweep"
"$sq" "$w/nowg.db" "update stage_cost set wgrad_cost = null" || fail "emptying wgrad_cost"
check zb zb
grep -q '"schedule": *"\(interleaved-zb\|zbv\)"' "$w/zb.1" || fail_with "$w/zb.1" "zb: a zero-bubble plan"
check nowg nowg
grep -q '^exit 0' "$w/nowg.1" || fail_with "$w/nowg.1" "nowg: exit status"
grep -q '"schedule": *"\(interleaved-zb\|zbv\)"' "$w/nowg.1" &&
  fail_with "$w/nowg.1" "nowg: a zero-bubble plan without the split"
echo "ok"
