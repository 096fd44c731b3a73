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
# - Llama with 2 blocks (dense): no ep line.
# - Mixtral-8x7B's blocks (2 of them, sequence 512) swept data-parallel
#   only (Megatron's tp 1 layouts; Alpa's plain space, no ZeRO) on 1x4
#   H100: every level keeps the experts whole, so each GPU runs Adam over
#   all of them; ep=2 halves that (and the experts' weights, gradients
#   and Adam state: 16 bytes an element, 704,643,072 of a block's
#   1,409,286,144 expert elements per GPU) for two token all-to-alls each
#   way per block, the probabilities' all-to-all, the sorts by local expert
#   and the token counts' all-gather (docs/expert-parallel.md); ep=2 beats
#   the plan without ep, and with cp=2 beside it (twice the micro-batches
#   of half the samples, a shorter bubble) it wins: the auto plan is the
#   --parallel dp=1,tp=1,pp=2,cp=2,ep=2,etp=1 plan, priced alike; it says
#   so, stores cp, ep and etp, apsolve --plan re-prices it alike, and
#   apreport's headline and Megatron file (which passes check_launch.py)
#   follow. (Before the ep facts' cache kept the fabric, every ep candidate
#   after the first priced its all-to-alls on a zeroed fabric and came out
#   infeasible, so cp=2 with ep=2 was never seen.)
# Usage: auto_ep.sh APPROF APSOLVE PYTHON APREPORT MANIFESTS CHECK_LAUNCH
# The sweeps of models whose training state fits one device profile Alpa's
# plain space (--variants alpa), the space these scenarios were built on;
# the default's ZeRO variants (docs/variants.md, "The default space") would
# win some of them without cp or ep.
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 apreport=$4 man=$5 check=$6
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

# where ep pays
"$approf" sweep --db "$w/dp.db" --quiet --variants alpa --model mixtral --preset mixtral-8x7b --num-layers 2 \
  --layers 2 --seq-len 512 --cluster 1x4 --hardware h100-sxm --batch 16 --micro-batches 4 \
  --logical-space data_parallel_only >"$w/out" 2>&1 || fail_with "$w/out" "data-parallel sweep"
"$apsolve" --db "$w/dp.db" >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve dp"
grep -q "^apsolve: expert parallelism ep=2 etp=1 on micro-batch size 4 (sweep 1, 4 micro-batches of 4): objective" "$w/err" ||
  fail_with "$w/err" "the ep=2 candidate line"
grep -q "^apsolve: context and expert parallelism cp=2 ep=2 etp=1 on micro-batch size 4 (sweep 1, 8 micro-batches of 2): objective" "$w/err" ||
  fail_with "$w/err" "the cp=2 ep=2 candidate line"
grep -q "^apsolve: context and expert parallelism cp=2 ep=2 etp=1 wins: objective [0-9.e-]* s against [0-9.e-]* s for the best plan without cp or ep$" "$w/err" ||
  fail_with "$w/err" "why cp and ep won"
grep -q "^Expert parallelism: ep 2 etp 1 on every stage" "$w/out" ||
  fail_with "$w/out" "apsolve's plan text does not say ep"
id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$w/out")
[ -n "$id" ] || fail_with "$w/out" "no plan stored"
"$apsolve" --db "$w/dp.db" --no-store --format json >"$w/auto.json" 2>/dev/null || fail "auto json"
"$apsolve" --db "$w/dp.db" --no-store --format json --parallel dp=1,tp=1,pp=2,cp=2 >"$w/plain.json" \
  2>/dev/null || fail "dp=1,tp=1,pp=2,cp=2"
"$apsolve" --db "$w/dp.db" --no-store --format json --parallel dp=1,tp=1,pp=2,cp=2,ep=2,etp=1 \
  >"$w/ep.json" 2>/dev/null || fail "dp=1,tp=1,pp=2,cp=2,ep=2,etp=1"
"$apsolve" --db "$w/dp.db" --no-store --format json --plan "$id" >"$w/again.json" 2>"$w/err" ||
  fail_with "$w/err" "apsolve --plan of the ep plan"
"$py" - "$w/dp.db" "$id" "$w/auto.json" "$w/plain.json" "$w/ep.json" "$w/again.json" <<'PY' ||
import json, sqlite3, sys
o = json.loads(sqlite3.connect(sys.argv[1]).execute(
    "SELECT options FROM plan WHERE id = ?", (int(sys.argv[2]),)).fetchone()[0])
p = o["parallel"]
assert (p["dp"], p["tp"], p["pp"], p["cp"], p["ep"], p["etp"]) == (1, 1, 2, 2, 2, 1), o
auto, again = json.load(open(sys.argv[3])), json.load(open(sys.argv[6]))
plain, ep = (json.load(open(f))["plans"][0] for f in sys.argv[4:6])
assert auto["cp"] == 2 and auto["ep"] == 2 and auto["etp"] == 1, auto
# the auto plan is the --parallel cp and ep plan, priced alike (and so re-priced)
for x in (ep, again):
    assert [s["memory_needed"] for s in x["stages"]] == [s["memory_needed"] for s in auto["stages"]]
    assert abs(x["total_cost"] - auto["total_cost"]) <= 1e-12 * auto["total_cost"], (x, auto)
# by hand: a block's experts are 3 x 8 x 4096 x 14336 elements, half of them
# on a GPU under ep=2, 16 bytes each (bf16 weight and gradient, f32 master
# and two moments)
half = 3 * 8 * 4096 * 14336 // 2
assert half == 704643072
for a, b in zip(plain["stages"], auto["stages"]):
    assert a["memory_needed"] - b["memory_needed"] == 16 * half, (a["memory_needed"], b["memory_needed"])
# and ep pays: less Adam per GPU than the cp plan without ep
assert auto["total_cost"] < plain["total_cost"], (auto["total_cost"], plain["total_cost"])
PY
  fail "the ep plan"
mkdir -p "$w/f"
"$apreport" --db "$w/dp.db" --plan "$id" --name a --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
grep -q '"layout": "dp 1 x tp 1 x pp 2 x cp 2 (p2p), experts on ep 2 x etp 1, ' "$w/f/report.json" ||
  fail "apreport's headline: $(grep -o '"layout": "[^"]*"' "$w/f/report.json")"
grep -q '^--expert-model-parallel-size 2$' "$w/f/a_megatron.args" || fail_with "$w/f/a_megatron.args" "ep size"
grep -q '^--expert-tensor-parallel-size 1$' "$w/f/a_megatron.args" || fail_with "$w/f/a_megatron.args" "etp size"
grep -q 'model.context_parallel_size=2 ' "$w/f/a_megatron.args" || fail_with "$w/f/a_megatron.args" "NeMo's cp size"
"$py" "$check" "$man/megatron-lm-core_v0.19.0.json" "$w/f/a_megatron.args" >"$w/chk" 2>&1 ||
  fail_with "$w/chk" "the Megatron file of the ep auto plan"

# where ep does not pay

"$approf" sweep --db "$w/mx.db" --quiet --model mixtral --preset mixtral-8x7b --seq-len 4096 \
  --cluster 8x8 --hardware h100-sxm --layers 4 --batch 64 --micro-batches 8 >"$w/out" 2>&1 ||
  fail_with "$w/out" "mixtral sweep"
"$apsolve" --db "$w/mx.db" >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve mixtral"
# ep on the plain sweep: experts whole on (8, 1) of a host, transformed
for ep in 2 4 8; do
  grep -q "^apsolve: expert parallelism ep=$ep etp=1 on micro-batch size 8 (sweep 1, 8 micro-batches of 8): " "$w/err" ||
    fail_with "$w/err" "the ep=$ep candidate line"
done
# the tie of entries as profiled: not better than cp=4 alone (the objectives
# with h100-sxm's GEMM slowdown beside NCCL's collectives, nccl_channels 24
# of 132 SMs; 0.802305 and 0.914791 s before it; and with h100-sxm's fused
# attention by key length: the ring's kernels over 4096 / 4 = 1024 keys at
# the table's 2048-key figure 0.316 against the entry's 0.4 at 4096, 8
# blocks x 7 GEMMs of 2 x 2048 x 4096 x 2048 / 4 flops a stage layer and
# micro-batch, 0.323 ms, 35 times in the pipeline's sum: 0.806618 s before)
grep -q "^apsolve: context and expert parallelism cp=4 ep=2 etp=1 on micro-batch size 8 (sweep 1, 32 micro-batches of 2): objective 0.817927 s, not better than the same candidate without ep$" "$w/err" ||
  fail_with "$w/err" "the cp=4 ep=2 tie"
grep -q "^apsolve: context parallelism cp=4 wins: objective 0.817927 s against 0.92326 s for the best plan without cp$" "$w/err" ||
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
"$approf" sweep --db "$w/l.db" --quiet --variants alpa --model llama --preset llama-3-8b --num-layers 2 \
  --layers 2 --seq-len 2048 --cluster 1x8 --hardware h100-sxm --batch 16 \
  --micro-batch-sizes 16,8 >"$w/out" 2>&1 || fail_with "$w/out" "llama sweep"
"$apsolve" --db "$w/l.db" --no-store >"$w/out" 2>"$w/err" || fail_with "$w/err" "apsolve llama"
if grep -q "expert parallelism" "$w/err"; then fail_with "$w/err" "ep lines for a dense model"; fi
if grep -q "^Expert parallelism" "$w/out"; then fail_with "$w/out" "ep in a dense plan"; fi
echo "ok"
