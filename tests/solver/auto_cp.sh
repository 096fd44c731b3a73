#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Context parallelism in the auto search (solver/session_autocp.c,
# docs/solver.md "Context parallelism in the auto search"):
# - Llama-3-8B with 8 blocks at sequence 32768 on 1x8 H100, global batch 16
#   in 2 micro-batches of 8: no plan without cp fits (one sample of 32768
#   tokens per GPU holds too many activations), the cp=2 plan does; the
#   auto plan takes it, says the candidates it tried, stores cp in its
#   options, and apreport's headline and Megatron file follow (the file
#   passes check_launch.py against the Megatron manifest).
# - Llama with 2 blocks at sequence 2048 with micro-batch sizes 16,8,4,2
#   and ResNet-50: the auto plan has no cp, says nothing of it, and is the
#   same plan as with cp out of reach (every cp entry at micro-batch m is
#   the same work as the plain entry at m / cp, which the plain search has).
# Usage: auto_cp.sh APPROF APSOLVE APREPORT PYTHON MANIFESTS CHECK_LAUNCH
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 apreport=$3 py=$4 man=$5 check=$6
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --db "$w/long.db" --quiet --model llama --preset llama-3-8b --num-layers 8 \
  --layers 4 --seq-len 32768 --cluster 1x8 --hardware h100-sxm --batch 16 --micro-batches 2 \
  >"$w/out" 2>&1 || fail_with "$w/out" "long llama sweep"
"$apsolve" --db "$w/long.db" >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve long"
grep -q "^apsolve: context parallelism cp=2 on micro-batch size 8 (sweep 1, 4 micro-batches of 4): objective" "$w/err" ||
  fail_with "$w/err" "the cp=2 candidate line"
grep -q "^apsolve: context parallelism cp=8 on micro-batch size 8 (sweep 1, 16 micro-batches of 1)" "$w/err" ||
  fail_with "$w/err" "the cp=8 candidate line"
grep -q "^apsolve: context parallelism: no plan without cp fits; the cp plan does" "$w/err" ||
  fail_with "$w/err" "why cp won"
grep -q "^Batch: global batch 16 = 4 micro-batches x micro-batch size 4$" "$w/out" ||
  fail_with "$w/out" "the cp plan's batch"
# the plan's own text says cp, as apreport's headline does
grep -q "^Context parallelism: cp 2 (the ring, p2p) on every stage" "$w/out" ||
  fail_with "$w/out" "apsolve's plan text does not say cp"
id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$w/out")
[ -n "$id" ] || fail_with "$w/out" "no plan stored"
"$py" - "$w/long.db" "$id" <<'PY' || fail "the stored options"
import json, sqlite3, sys
o = json.loads(sqlite3.connect(sys.argv[1]).execute(
    "SELECT options FROM plan WHERE id = ?", (int(sys.argv[2]),)).fetchone()[0])
p = o.get("parallel", {})
assert o["stage_option"] == "auto", o
assert p.get("cp") == 2 and p.get("cp_comm") == "p2p", o
assert (p["dp"], p["tp"], p["pp"]) == (4, 1, 1), o
assert o["micro_batches"] == 4 and o["micro_batch_size"] == 4, o
PY
mkdir -p "$w/f"
"$apreport" --db "$w/long.db" --plan "$id" --name a --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
grep -q '"layout": "dp 4 x tp 1 x pp 1 x cp 2 (p2p), 4 micro-batches of 1 sample per replica' \
  "$w/f/report.json" || fail "apreport's headline: $(grep -o '"layout": "[^"]*"' "$w/f/report.json")"
grep -q '^--context-parallel-size 2$' "$w/f/a_megatron.args" || fail_with "$w/f/a_megatron.args" "cp size"
"$py" "$check" "$man/megatron-lm-core_v0.19.0.json" "$w/f/a_megatron.args" >"$w/chk" 2>&1 ||
  fail_with "$w/chk" "the Megatron file of the cp auto plan"

# where cp does not pay: no cp lines, no cp option, the same plan text
"$approf" sweep --db "$w/short.db" --quiet --model llama --preset llama-3-8b --num-layers 2 \
  --layers 2 --seq-len 2048 --cluster 1x8 --hardware h100-sxm --batch 16 \
  --micro-batch-sizes 16,8,4,2 >"$w/out" 2>&1 || fail_with "$w/out" "short llama sweep"
"$approf" sweep --db "$w/r.db" --quiet --model resnet50 --cluster 1x4 --hardware h100-sxm \
  --batch 32 --micro-batches 2 >"$w/out" 2>&1 || fail_with "$w/out" "resnet50 sweep"
for d in short r; do
  "$apsolve" --db "$w/$d.db" >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve $d"
  if grep -q "context parallelism" "$w/err"; then fail_with "$w/err" "$d: cp lines"; fi
  if grep -q "^Context parallelism" "$w/out"; then fail_with "$w/out" "$d: cp in the plan"; fi
  "$py" -c "import sqlite3,sys; o=sqlite3.connect(sys.argv[1]).execute('select options from plan').fetchone()[0]; sys.exit('\"cp\"' in o)" "$w/$d.db" ||
    fail "$d: the stored plan has cp"
done
echo "ok"
