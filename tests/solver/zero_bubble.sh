#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --schedule zb-h1 (docs/solver.md, "Schedules") on a 4-block GPT
# swept on 1x4 H100 at 8 micro-batches, one block per stage (--parallel
# dp=1,tp=1,pp=4): the sweep stores each backward's weight-gradient
# seconds (schema 12, wgrad_cost); ZB-H1's iteration time is 1F1B's less
# (4 - 1) x min over the stages of W + min(W, F, B), computed here by hand
# from the database; every stage keeps min(B, 4) = 4 micro-batches, 1F1B's
# first stage's count (a deferred W's saved inputs counted as a whole
# micro-batch's activations: an upper bound), so the first stage needs
# what it needs under 1F1B and the later ones more; no framework runs it
# (the verdict), and the auto search, which tries it, keeps a schedule a
# framework runs. The stored plan: apsolve --plan prices it again the same,
# apreport simulates it (ZB-H1 faster than 1F1B in its simulation too, the
# memory per stage apsolve's) and its launch files run 1F1B, each saying
# why. Refusals: a sweep without the split (the column emptied as a
# database before schema 12 or an import reads), by apsolve and apreport,
# and fewer micro-batches than stages.
# Usage: zero_bubble.sh APPROF APSOLVE PYTHON SQLITE3 APREPORT
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4 apreport=$5
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/g.db
"$approf" sweep --db "$db" --quiet --model gpt --num-layers 4 --hidden 512 --heads 8 \
  --seq-len 256 --vocab 1000 --cluster 1x4 --hardware h100-sxm --batch 32 --micro-batches 8 \
  --layers 4 >"$w/out" 2>&1 || fail_with "$w/out" "gpt sweep"
[ "$("$sq" "$db" "select count(*) from stage_profile where phase = 1 and status = 'ok' and wgrad_cost is null")" = 0 ] ||
  fail "a measured backward without its weight-gradient seconds"
[ "$("$sq" "$db" "select count(*) from stage_profile where phase = 0 and wgrad_cost is not null")" = 0 ] ||
  fail "a forward with weight-gradient seconds"
[ "$("$sq" "$db" "select count(*) from stage_profile where phase = 1 and status = 'ok' and not (wgrad_cost > 0 and wgrad_cost < compute_cost)")" = 0 ] ||
  fail "a backward whose W is not within (0, compute_cost)"
for s in 1f1b zb-h1; do
  "$apsolve" --db "$db" --no-store --format json --schedule $s --parallel dp=1,tp=1,pp=4 \
    >"$w/$s.json" 2>"$w/err" || fail_with "$w/err" "--schedule $s"
done
# W of each stage's backward entry, from the database
"$sq" -separator ' ' "$db" "select start_layer, wgrad_cost from stage_profile where phase = 1 and start_layer = end_layer and submesh_index = 0 and config_index = 0 order by start_layer" >"$w/wgrad"
"$py" - "$w/1f1b.json" "$w/zb-h1.json" "$w/wgrad" <<'PY' || fail "zb-h1 against 1f1b"
import json, sys
one = json.load(open(sys.argv[1]))["plans"][0]
zb = json.load(open(sys.argv[2]))["plans"][0]
wg = {int(a): float(b) for a, b in (l.split() for l in open(sys.argv[3]))}
assert zb["schedule"] == "zb-h1" and one["schedule"] == "1f1b", (zb["schedule"], one["schedule"])
S, B = len(zb["stages"]), zb["micro_batches"]
assert S == 4 and B == 8 and zb["feasible"], (S, B, zb["feasible"])
for a, b in zip(one["stages"], zb["stages"]):
    assert a["layers"] == b["layers"] and a["cost"] == b["cost"], (a, b)
# Alpa's T of the stage costs, then the fill each stage's deferred W gives
T = sum(s["cost"] for s in one["stages"]) + (B - 1) * max(s["cost"] for s in one["stages"])
assert abs(one["cost"] - T) <= 1e-12 * T, (one["cost"], T)
fill = min(wg[s["layers"][0]] + min(wg[s["layers"][0]], s["fwd_cost"], s["bwd_cost"] - wg[s["layers"][0]]) for s in zb["stages"])
want = T - (S - 1) * fill
assert abs(zb["cost"] - want) <= 1e-12 * T, (zb["cost"], want)
assert one["cost"] - zb["cost"] > 0.05 * one["cost"], (one["cost"], zb["cost"])
# memory: every stage keeps min(B, S) micro-batches, the peak is 1F1B's
assert [s["in_flight"] for s in zb["stages"]] == [4, 4, 4, 4], [s["in_flight"] for s in zb["stages"]]
assert [s["in_flight"] for s in one["stages"]] == [4, 3, 2, 1]
assert zb["stages"][0]["memory_needed"] == one["stages"][0]["memory_needed"]
for a, b in zip(one["stages"][1:], zb["stages"][1:]):
    assert b["memory_needed"] > a["memory_needed"], (a, b)
# no framework runs ZB-H1 on one stage per rank
fw = zb["frameworks"]
text = json.dumps(fw)
assert "no zero-bubble" in text and "2 or more stages per rank" in text, fw
print("1f1b %.9g s, zb-h1 %.9g s, difference %.9g s = 3 x %.9g s" % (one["cost"], zb["cost"], one["cost"] - zb["cost"], fill))
PY
grep -q "ZB-H1: sum of stage costs" "$w/err" || true
"$apsolve" --db "$db" --no-store --schedule zb-h1 --parallel dp=1,tp=1,pp=4 >"$w/text" 2>&1 ||
  fail_with "$w/text" "text output"
grep -q "Estimated iteration latency: .* (ZB-H1: sum of stage costs .* less .* of the bubble the deferred weight-gradient passes fill)" "$w/text" ||
  fail_with "$w/text" "the ZB-H1 latency line"
# the auto search tries zb-h1 but keeps a schedule a framework runs
"$apsolve" --db "$db" --no-store --format json >"$w/auto.json" 2>"$w/err" || fail_with "$w/err" "auto"
"$py" -c "import json,sys; p=json.load(open(sys.argv[1])); p=p['plans'][0] if 'plans' in p else p; assert p['schedule'] != 'zb-h1' and p['feasible'], p['schedule']" "$w/auto.json" ||
  fail "the auto plan took a schedule no framework runs"
# the stored plan, priced again and reported
"$apsolve" --db "$db" --format json --schedule zb-h1 --parallel dp=1,tp=1,pp=4 >"$w/stored.json" \
  2>"$w/err" || fail_with "$w/err" "storing the zb-h1 plan"
id=$("$sq" "$db" "select max(id) from plan")
"$apsolve" --db "$db" --no-store --format json --plan "$id" >"$w/again.json" 2>"$w/err" ||
  fail_with "$w/err" "--plan $id"
"$apreport" --db "$db" --plan "$id" --name zb --out "$w/r" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport of the zb-h1 plan"
"$py" - "$w/zb-h1.json" "$w/again.json" "$w/r/report.json" <<'PY' || fail "the stored zb-h1 plan"
import json, sys
zb = json.load(open(sys.argv[1]))["plans"][0]
again = json.load(open(sys.argv[2]))
again = again["plans"][0] if "plans" in again else again
rep = json.load(open(sys.argv[3]))
assert again["schedule"] == "zb-h1" and again["cost"] == zb["cost"], (again["schedule"], again["cost"], zb["cost"])
sc = rep["schedules"]
assert sc["selected"] == "zb-h1", sc.get("selected")
assert sc["zb-h1"]["iteration_time"] < sc["1f1b"]["iteration_time"], sc
assert sc["zb-h1"]["peak_in_flight"] == [4, 4, 4, 4], sc["zb-h1"]["peak_in_flight"]
assert [s["memory_needed"] for s in rep["stages"]] == [s["memory_needed"] for s in zb["stages"]], (
    [s["memory_needed"] for s in rep["stages"]], [s["memory_needed"] for s in zb["stages"]])
PY
grep -q '^pipeline_parallel_schedule = "1F1B"' "$w/r/zb_torchtitan.toml" ||
  fail_with "$w/r/zb_torchtitan.toml" "torchtitan's file runs 1F1B"
grep -q "torchtitan cannot express the zero-bubble ZB-H1 schedule on one stage per rank" "$w/r/zb_torchtitan.toml" ||
  fail_with "$w/r/zb_torchtitan.toml" "torchtitan's file says why"
grep -q "Megatron-LM cannot express the zero-bubble ZB-H1 schedule" "$w/r/zb_megatron.args" ||
  fail_with "$w/r/zb_megatron.args" "Megatron-LM's file says why"
grep -q '"W0", "cat": "weight gradient"' "$w/r/trace.json" || fail "no W pass in the trace"
# fewer micro-batches than stages, and chunks: usage errors
"$apsolve" --db "$db" --no-store --schedule zb-h1 --parallel dp=1,tp=1,pp=4 --micro-batches 2 \
  >"$w/out" 2>"$w/err"
expect_rc 2 $? "$w/err" "zb-h1 with 2 micro-batches on 4 stages"
grep -q "zb-h1: micro-batches (2) must be at least the pipeline stages (4)" "$w/err" ||
  fail_with "$w/err" "the B < stages refusal"
"$apsolve" --db "$db" --no-store --schedule zb-h1 --parallel dp=2,tp=1,pp=2,vpp=2 \
  >"$w/out" 2>"$w/err"
expect_rc 2 $? "$w/err" "zb-h1 with vpp=2"
grep -q "vpp= is the interleaved schedule" "$w/err" || fail_with "$w/err" "the vpp refusal"
# a sweep without the split: refused, database untouched
"$sq" "$db" "update stage_cost set wgrad_cost = null" || fail "emptying wgrad_cost"
sum=$(cksum <"$db")
"$apsolve" --db "$db" --no-store --schedule zb-h1 --parallel dp=1,tp=1,pp=4 >"$w/out" 2>"$w/err"
expect_rc 2 $? "$w/err" "zb-h1 without the split"
grep -q "schedule zb-h1: sweep 1 has entries without the weight-gradient seconds of their backward.*cannot be priced exactly" "$w/err" ||
  fail_with "$w/err" "the refusal names the missing split"
[ "$(cksum <"$db")" = "$sum" ] || fail "the refused run changed the database"
"$apreport" --db "$db" --plan "$id" --name zb --out "$w/r2" --quiet >"$w/out" 2>"$w/err"
rc=$?
[ $rc != 0 ] || fail "apreport simulated zb-h1 without the split"
not_crashed "$w/err" "apreport without the split"
grep -q "stage 0's backward has no weight-gradient seconds" "$w/err" ||
  fail_with "$w/err" "apreport's refusal names the missing split"
"$apsolve" --db "$db" --no-store --schedule 1f1b --parallel dp=1,tp=1,pp=4 >"$w/out" 2>"$w/err" ||
  fail_with "$w/err" "1f1b without the split"
echo "ok"
