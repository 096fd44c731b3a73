#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Expert parallelism in the auto search (solver/session_autoep.c,
# docs/solver.md "Expert parallelism in the auto search"):
# - Mixtral-8x7B (its 32 blocks in 4 stage layers) at sequence 4096 on 8x8
#   H100, global batch 64 in 8 micro-batches: the search tries ep on the
#   plain sweep and on each cp candidate and says so; on logical (8, 2) the
#   sharding ILP already splits the experts 2 ways on E over the tp axis,
#   so cp=4 with ep=2 etp=1 prices those entries as profiled, ties the cp=4
#   plan and must not displace it (an ep plan beats its candidate without
#   ep or stands aside); the auto plan stays the cp=4 plan, without ep in
#   its text or stored options.
# - Llama with 2 blocks (dense): no ep line, and the plan is the same.
# Usage: auto_ep.sh APPROF APSOLVE PYTHON
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --db "$w/mx.db" --quiet --model mixtral --preset mixtral-8x7b --seq-len 4096 \
  --cluster 8x8 --hardware h100-sxm --layers 4 --batch 64 --micro-batches 8 >"$w/out" 2>&1 ||
  fail_with "$w/out" "mixtral sweep"
"$apsolve" --db "$w/mx.db" >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve mixtral"
# ep on the plain sweep: experts whole on (8, 1) of a host, transformed
for ep in 2 4 8; do
  grep -q "^apsolve: expert parallelism ep=$ep etp=1 on micro-batch size 8 (sweep 1, 8 micro-batches of 8): " "$w/err" ||
    fail_with "$w/err" "the ep=$ep candidate line"
done
# the tie of entries as profiled: not better than cp=4 alone
grep -q "^apsolve: context and expert parallelism cp=4 ep=2 etp=1 on micro-batch size 8 (sweep 1, 32 micro-batches of 2): objective 0.798535 s, not better than the same candidate without ep$" "$w/err" ||
  fail_with "$w/err" "the cp=4 ep=2 tie"
grep -q "^apsolve: context parallelism cp=4 wins: objective 0.798535 s against 0.937406 s for the best plan without cp$" "$w/err" ||
  fail_with "$w/err" "the cp=4 plan"
if grep -q "^Expert parallelism" "$w/out"; then fail_with "$w/out" "ep in the plan's text"; fi
"$apsolve" --db "$w/mx.db" --no-store --format json >"$w/j" 2>/dev/null || fail "apsolve json"
"$py" - "$w/mx.db" "$w/j" <<'PY' || fail "the stored plan or the JSON has ep"
import json, sqlite3, sys
o = json.loads(sqlite3.connect(sys.argv[1]).execute("SELECT options FROM plan").fetchone()[0])
assert o["parallel"]["cp"] == 4 and "ep" not in o["parallel"], o
j = json.load(open(sys.argv[2]))
assert j["cp"] == 4 and "ep" not in j, j
PY

# dense: no ep line
"$approf" sweep --db "$w/l.db" --quiet --model llama --preset llama-3-8b --num-layers 2 \
  --layers 2 --seq-len 2048 --cluster 1x8 --hardware h100-sxm --batch 16 \
  --micro-batch-sizes 16,8 >"$w/out" 2>&1 || fail_with "$w/out" "llama sweep"
"$apsolve" --db "$w/l.db" --no-store >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve llama"
if grep -q "expert parallelism" "$w/err"; then fail_with "$w/err" "ep lines for a dense model"; fi
if grep -q "^Expert parallelism" "$w/out"; then fail_with "$w/out" "ep in a dense plan"; fi
echo "ok"
