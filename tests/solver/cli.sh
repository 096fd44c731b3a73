#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve command line: JSON shape, stored plans, and
# the documented exit codes (0 ok, 1 failure, 2 usage, 3 infeasible).
# With hardware and placements (TEST_SOLVER_BEYOND's fixture): the full
# estimate lines, --plan ID --batch B (exact sweep, invalid dp), and the
# micro-batch warnings for auto plans.
# Variants (TEST_SOLVER_VARIANTS' fixture): the full objective by default,
# --objective alpa, the variant column. Micro-batch sizes (the beyond
# fixture's sweeps 1 and 2 at micro-batch 8 and 4): the search over sizes,
# --micro-batch-size, --global-batch, --micro-batches changing the global
# batch, --parallel knobs (mbs, vpp, sp, zero, recompute) and schedules.
# Usage: cli.sh APSOLVE TEST_SOLVER_DB TEST_SOLVER_BEYOND TEST_SOLVER_VARIANTS
set -eu
apsolve=$1
mkdb=$2
mkhw=$3
mkvar=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
. "$(dirname "$0")/../lib.sh"

"$mkdb" --make-fixture "$tmp/f.db"

# The plan texts (auto, 3-D, manual, full estimate) are golden cases in
# tests/golden/cases/solver-*; this script checks the rest.

# Warnings go to stderr: 2 micro-batches for 2 stages.
"$apsolve" --db "$tmp/f.db" --no-store --micro-batches 2 --stage-option uniform \
  --num-stages 2 --submesh 1x2 >/dev/null 2>"$tmp/err"
grep -q "micro-batches < 2 x 2 stages" "$tmp/err" || fail "no micro-batch warning"

# JSON, and plans stored with increasing ids.
"$apsolve" --db "$tmp/f.db" --quiet --format json >"$tmp/a.json"
"$apsolve" --db "$tmp/f.db" --quiet --format json --inference >"$tmp/b.json"
python3 - "$tmp/a.json" "$tmp/b.json" <<'PY' || fail "JSON output"
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
assert abs(a["cost"] - 0.12) < 1e-12, a["cost"]
assert a["stages"][0]["layers"] == [0, 1, 2, 3]
assert a["stages"][0]["submesh"] == [1, 4] and a["stages"][0]["logical_mesh"] == [4, 1]
assert a["stages"][0]["options"] == {"force_batch_dim_to_mesh_dim": 0}
assert a["solve_seconds"] >= 0 and a["objective"] == "training"
assert b["objective"] == "inference" and b["plan_id"] == a["plan_id"] + 1
PY

# Exit codes.
rc=0; "$apsolve" --db "$tmp/f.db" --no-store --memory-budget 1536M 2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 3 ] || fail "infeasible budget: exit $rc, expected 3"
grep -q "the plan needing the least memory needs 3.000 GiB per device (stage 0, layers 0-3 on (1, 4); stages 0-3 on (1, 4)) but 1.500 GiB are available" "$tmp/err" || fail "memory message"
# a byte size: the suffixes K/M/G (binary), optionally B or iB after them;
# 'iB' alone is no unit (it was read as 5 bytes)
for v in 5iB 5Gi 5iK 1.5G 0 -1G; do
  rc=0; "$apsolve" --db "$tmp/f.db" --no-store --memory-budget "$v" 2>"$tmp/err" >/dev/null || rc=$?
  [ "$rc" = 2 ] || fail "--memory-budget $v: exit $rc, expected 2"
  grep -q "bad --memory-budget '$v'" "$tmp/err" || fail "--memory-budget $v: message"
done
for v in 1536M 1536MiB 1536MB 1610612736 1610612736B; do
  rc=0; "$apsolve" --db "$tmp/f.db" --no-store --memory-budget "$v" 2>"$tmp/err" >/dev/null || rc=$?
  [ "$rc" = 3 ] || fail "--memory-budget $v: exit $rc, expected 3 (1.5 GiB is too little)"
done
rc=0; "$apsolve" --db "$tmp/f.db" --bogus 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "unknown option: exit $rc, expected 2"
grep -q "Try 'apsolve --help'" "$tmp/err" || fail "usage hint"
# without --db: approf sweep's results.db (absent here: exit 1, named)
abs=$(cd "$(dirname "$apsolve")" && pwd)/$(basename "$apsolve")
rc=0; (cd "$tmp" && "$abs" --no-store 2>"$tmp/err") || rc=$?
[ "$rc" = 1 ] || fail "missing results.db: exit $rc"
grep -q "results.db" "$tmp/err" || fail "results.db not named"
cp "$tmp/f.db" "$tmp/results.db"
(cd "$tmp" && "$abs" --no-store --quiet >/dev/null) || fail "the default results.db"
rm -f "$tmp/results.db"
# --schedule interleaved alone takes two chunks per device, as apreport
"$apsolve" --db "$tmp/f.db" --no-store --quiet --schedule interleaved --micro-batches 4 \
  --format json >"$tmp/il2.json" || fail "--schedule interleaved without --virtual-stages"
grep -q '"virtual_stages": 2' "$tmp/il2.json" || fail "interleaved default chunks"
rc=0; "$apsolve" --db "$tmp/f.db" --stage-option manual --forward-stage-layer-ids '[[0, 2]]' \
  --submesh-shapes '[(1, 4)]' --no-store 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "bad layer ids: exit $rc"
rc=0; "$apsolve" --db "$tmp/none.db" --no-store 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "missing database: exit $rc, expected 1"
for opt in --micro-batches --batch --plan --stage-option --parallel --inference \
  --memory-budget --max-stages --no-store --format --quiet full_cost --objective \
  --global-batch --micro-batch-size --schedule --virtual-stages recompute=; do
  "$apsolve" --help | grep -q -- "$opt" || fail "--help does not document $opt"
done
"$apsolve" --version | grep -q "^apsolve " || fail "--version"
# Beyond Alpa's T on the 2x2 fixture with hardware and placements (sweep 1
# at micro-batch 8; sweep 2 the same model at micro-batch 4).
"$mkhw" --make-fixture "$tmp/hw.db"
"$apsolve" --db "$tmp/hw.db" --sweep 1 --quiet >"$tmp/full.txt" || fail "full estimate"
"$apsolve" --db "$tmp/hw.db" --sweep 1 --quiet --format json --no-store >"$tmp/full.json"
python3 - "$tmp/full.json" "$tmp/hw.db" <<'PY' || fail "full estimate JSON or stored full_cost"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
b = d["breakdown"]
# NCCL's ring in Simple (docs/nccl-tuning.md): 8.4 us base latency a call
assert abs(d["full_cost"] - 0.2228604) < 1e-12, d["full_cost"]
assert abs(b["transfers"] - 3.4e-4) < 1e-15 and b["apply_stage"] == 0
assert [abs(s["grad_sync"] - w) < 1e-15 for s, w in zip(b["stages"], (0.0040104, 1.44e-5))] == [True, True]
row = sqlite3.connect(sys.argv[2]).execute("SELECT full_cost FROM plan ORDER BY id").fetchone()
assert abs(row[0] - 0.2228604) < 1e-12, row
PY
rc=0; "$apsolve" --db "$tmp/hw.db" --plan 1 --batch 16 --quiet >"$tmp/b16.txt" || rc=$?
[ "$rc" = 0 ] || fail "--plan 1 --batch 16: exit $rc"
grep -q "^At global batch 16 (micro-batch 8 -> 4, exact, from the entries of sweep 2): estimated latency 0.095 s, full estimate 0.12746 s; fits in memory" "$tmp/b16.txt" ||
  fail_with "$tmp/b16.txt" "--batch 16 should use sweep 2 exactly"
rc=0; "$apsolve" --db "$tmp/hw.db" --plan 1 --batch 4 --quiet >"$tmp/b4.txt" || rc=$?
[ "$rc" = 3 ] || fail "--batch 4 (micro-batch 1, dp 2): exit $rc, expected 3"
says_text "$tmp/b4.txt" "INVALID: stage 0 forces the batch over a data-parallel axis of 2 that does not divide the micro-batch of 1" "no INVALID line at --batch 4"
rc=0; "$apsolve" --db "$tmp/hw.db" --plan 1 --batch 128 --quiet >"$tmp/b128.txt" || rc=$?
[ "$rc" = 3 ] || fail_with "$tmp/b128.txt" "--batch 128 should not fit: exit $rc, expected 3"
says_text "$tmp/b128.txt" "DOES NOT FIT: stage 0 needs 6.750 GiB, 4.000 GiB available" "--batch 128 should not fit"
rc=0; "$apsolve" --db "$tmp/hw.db" --plan 1 --parallel dp=2,tp=1,pp=2 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--plan with --parallel: exit $rc, expected 2"
rc=0; "$apsolve" --db "$tmp/hw.db" --plan 99 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "--plan 99: exit $rc, expected 1"
# Warnings for auto plans: the optimum has 2 stages.
# One micro-batch is singular (costdb_plural, util/plural.h), in the
# warning and in the plan's batch line.
"$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --micro-batches 1 >"$tmp/out" 2>"$tmp/err"
grep -q "auto plan: 1 micro-batch < 2 stages: the pipeline is mostly bubble" "$tmp/err" ||
  fail "no B < stages warning for the auto plan"
grep -q "^Batch: global batch [0-9]* = 1 micro-batch x micro-batch size" "$tmp/out" ||
  fail "the batch line of one micro-batch: $(grep Batch "$tmp/out")"
! grep -q "1 micro-batches" "$tmp/out" "$tmp/err" || fail "'1 micro-batches' printed"
"$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --micro-batches 3 >/dev/null 2>"$tmp/err"
grep -q "auto plan: 3 micro-batches < 2 x 2 stages" "$tmp/err" ||
  fail "no B < 2 x stages warning for the auto plan"
"$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --micro-batches 4 >/dev/null 2>"$tmp/err"
! grep -q "warning" "$tmp/err" || fail "warning at B = 2 x stages"

# ---- variants and the full objective ----
"$mkvar" --make-fixture "$tmp/v.db"
"$apsolve" --db "$tmp/v.db" --no-store --quiet >"$tmp/v.txt"
grep -q "^Objective (full): 0.083 s = iteration latency 0.08 s + largest stage apply-grad" "$tmp/v.txt" ||
  fail_with "$tmp/v.txt" "full objective by default with apply costs"
grep -q "variant" "$tmp/v.txt" && grep -q " m0 none z0 " "$tmp/v.txt" || fail "variant column"
"$apsolve" --db "$tmp/v.db" --no-store --quiet --objective alpa --format json >"$tmp/va.json"
python3 - "$tmp/va.json" <<'PY' || fail "--objective alpa JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cost_objective"] == "alpa" and d["apply_cost"] == 0, d
assert all(s["memory_level"] == 0 and s["recompute"] == "none" and s["zero"] == 0 for s in d["stages"])
assert d["global_batch"] == 16 and d["micro_batch_size"] == 4 and d["micro_batches"] == 4
PY
# An old database (no apply costs): alpa with one notice; full is refused.
"$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store >/dev/null 2>"$tmp/err"
[ "$(grep -c "without apply_cost" "$tmp/err")" = 1 ] || fail "one notice for the alpa fallback"
rc=0; "$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --objective full 2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 2 ] && grep -q "use --objective alpa" "$tmp/err" || fail "--objective full on an old db: exit $rc"
rc=0; "$apsolve" --db "$tmp/v.db" --objective fast 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "bad --objective: exit $rc"

# ---- micro-batch sizes ----
"$apsolve" --db "$tmp/hw.db" --sweep 1 --global-batch 32 --no-store --format json >"$tmp/g.json" 2>"$tmp/err"
says_text "$tmp/err" "micro-batch size 4 (sweep 2, 8 micro-batches): objective 0.175 s" "the search over micro-batch sizes"
says_text "$tmp/err" "micro-batch size 8 (sweep 1, 4 micro-batches): objective 0.19 s" "the search over micro-batch sizes"
python3 - "$tmp/g.json" <<'PY' || fail "--global-batch 32: best micro-batch size"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["global_batch"], d["micro_batch_size"], d["micro_batches"]) == (32, 4, 8), d
assert abs(d["cost"] - 0.175) < 1e-12
PY
"$apsolve" --db "$tmp/hw.db" --sweep 1 --global-batch 24 --micro-batch-size 8 --no-store --quiet >"$tmp/g.txt"
grep -q "^Batch: global batch 24 = 3 micro-batches x micro-batch size 8$" "$tmp/g.txt" || fail "--micro-batch-size 8"
rc=0; "$apsolve" --db "$tmp/hw.db" --sweep 1 --micro-batch-size 3 --no-store 2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 2 ] && grep -q "no sweep of this model, hardware and cluster at micro-batch size 3" "$tmp/err" ||
  fail "--micro-batch-size without a sweep: exit $rc"
rc=0; "$apsolve" --db "$tmp/hw.db" --sweep 1 --global-batch 20 --no-store 2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--global-batch 20 (no size divides it): exit $rc"
"$apsolve" --db "$tmp/hw.db" --sweep 1 --micro-batches 8 --no-store >"$tmp/m.txt" 2>"$tmp/err"
grep -q "the global batch becomes 64 (the sweep's is 32)" "$tmp/err" || fail "--micro-batches notice"
grep -q "^Batch: global batch 64 = 8 micro-batches x micro-batch size 8$" "$tmp/m.txt" || fail "B=8 batch line"

# ---- --parallel knobs and schedules ----
"$apsolve" --db "$tmp/hw.db" --sweep 1 --quiet --parallel dp=2,tp=1,pp=2,mbs=2,sp=1,vpp=2,zero=0,recompute=none \
  --format json >"$tmp/p.json"
python3 - "$tmp/p.json" "$tmp/hw.db" <<'PY' || fail "--parallel mbs/vpp/sp"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))["plans"][0]
assert d["kind"] == "3d" and d["micro_batch_size"] == 4 and d["micro_batches"] == 8, d
assert d["schedule"] == "interleaved" and d["virtual_stages"] == 2
assert abs(d["cost"] - (0.04 + 15 * 0.025) / 2) < 1e-12, d["cost"]
opts = json.loads(sqlite3.connect(sys.argv[2]).execute(
    "SELECT options FROM plan WHERE kind = '3d' ORDER BY id DESC").fetchone()[0])
assert opts["parallel"]["sp"] == 1 and opts["parallel"]["mbs"] == 2 and opts["global_batch"] == 32
assert opts["micro_batch_size"] == 4
PY
# Without mbs=, the 3-D plan is priced at the micro-batch size the auto
# search would pick for it (the lowest objective over the family's sizes
# that dp divides: 4 at 0.215 s beats 8 at 0.23 s here, although the main
# sweep, sweep 1, is at 8), and says which, why and how to pick another.
"$apsolve" --db "$tmp/hw.db" --sweep 1 --global-batch 32 --no-store --parallel dp=2,tp=1,pp=2 \
  --format json >"$tmp/pm.json" 2>"$tmp/err"
says_text "$tmp/err" "3-D plan: micro-batch size 4 (8 micro-batches, sweep 2): the lowest objective of mbs=2, 4" \
  "the 3-D plan's micro-batch size without mbs="
python3 - "$tmp/pm.json" <<'PY' || fail "--parallel without mbs: the best micro-batch size"
import json, sys
d = json.load(open(sys.argv[1]))["plans"][0]
assert d["kind"] == "3d" and (d["micro_batch_size"], d["micro_batches"]) == (4, 8), d
assert abs(d["cost"] - 0.215) < 1e-12, d["cost"]
PY
# A size the options pin (--sweep without --global-batch) is kept, and said.
"$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --parallel dp=2,tp=1,pp=2 >"$tmp/pm.txt" 2>"$tmp/err"
says_text "$tmp/err" "3-D plan: micro-batch size 8 (4 micro-batches, sweep 1): the size the options ask for" \
  "the pinned micro-batch size of --parallel"
grep -q "^Batch: global batch 32 = 4 micro-batches x micro-batch size 8$" "$tmp/pm.txt" ||
  fail "--parallel at the pinned micro-batch size"
for bad in "dp=2,tp=1,pp=2,mbs=3:mbs=3" "dp=2,tp=1,pp=2,zero=5:zero must be" \
           "dp=2,tp=1,pp=2,recompute=some:recompute must be" "dp=2,tp=1,pp=2,sp=2:sp must be" \
           "dp=2,tp=1,pp=2,vpp=0:vpp must be" "dp=2,tp=1,pp=2,foo=1:unknown knob 'foo'" "dp=2,tp=1:dp, tp and pp" \
           "dp=54161,tp=39650,pp=2:dp x tp x pp = 4294967300 devices is more than"; do
  arg=${bad%%:*}; msg=${bad#*:}
  rc=0; "$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --parallel "$arg" 2>"$tmp/err" >/dev/null || rc=$?
  [ "$rc" = 2 ] && grep -q -- "$msg" "$tmp/err" || fail_with "$tmp/err" "--parallel $arg: exit $rc"
done
# a global batch of 2^40 is 2^33 micro-batches of this sweep's size: a usage
# error naming the limit (exit 1, "invalid argument" before)
rc=0; "$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --global-batch 1099511627776 2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 2 ] && grep -q "micro-batches, more than 1048576 (COSTDB_MAX_MICRO_BATCHES)" "$tmp/err" ||
  fail_with "$tmp/err" "--global-batch 2^40: exit $rc"
# a budget nothing fits in: exit 3 with the reason, never a 'nan s' latency
for fmt in text json; do
  rc=0; "$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --memory-budget 1 --format $fmt \
    >"$tmp/mb.out" 2>"$tmp/err" || rc=$?
  [ "$rc" = 3 ] && grep -q "no feasible plan" "$tmp/err" || fail_with "$tmp/err" "--memory-budget 1 ($fmt): exit $rc"
  if grep -qi "nan" "$tmp/mb.out"; then fail_with "$tmp/mb.out" "--memory-budget 1 ($fmt) printed nan"; fi
done
# the product overflowed int: never stored (it was, with submesh_gpus < 0)
n0=$(sqlite3 "$tmp/hw.db" "SELECT count(*) FROM plan" 2>/dev/null || echo none)
rc=0; "$apsolve" --db "$tmp/hw.db" --sweep 1 --parallel dp=54161,tp=39650,pp=2 2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 2 ] || fail_with "$tmp/err" "--parallel dp=54161,tp=39650,pp=2 (stored): exit $rc"
[ "$(sqlite3 "$tmp/hw.db" "SELECT count(*) FROM plan" 2>/dev/null || echo none)" = "$n0" ] ||
  fail "--parallel with an overflowing product stored a plan"
rc=0; "$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --micro-batches 3 \
  --parallel dp=2,tp=1,pp=2,vpp=2 2>"$tmp/err" >/dev/null || rc=$?
[ "$rc" = 2 ] && grep -q "vpp=2" "$tmp/err" || fail "vpp with B not a multiple of pp: exit $rc"
"$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --quiet --schedule gpipe >"$tmp/gp.txt"
grep -q "(GPipe: sum of stage costs" "$tmp/gp.txt" || fail "--schedule gpipe"
"$apsolve" --db "$tmp/hw.db" --sweep 1 --no-store --quiet --schedule interleaved --virtual-stages 2 >"$tmp/il.txt"
grep -q "(interleaved 1F1B, v = 2:" "$tmp/il.txt" || fail "--schedule interleaved"
rc=0; "$apsolve" --db "$tmp/hw.db" --schedule gpipe --virtual-stages 2 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "--virtual-stages without interleaved: exit $rc"
# --plan re-evaluates a stored plan with the schedule it was made with,
# unless --schedule says otherwise
"$apsolve" --db "$tmp/hw.db" --sweep 1 --quiet --schedule interleaved --virtual-stages 2 \
  --format json >"$tmp/il.json"
id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['plan_id'])" "$tmp/il.json")
"$apsolve" --db "$tmp/hw.db" --no-store --quiet --plan "$id" --format json >"$tmp/re.json"
"$apsolve" --db "$tmp/hw.db" --no-store --quiet --plan "$id" --schedule gpipe --format json \
  >"$tmp/re-gp.json"
python3 - "$tmp/il.json" "$tmp/re.json" "$tmp/re-gp.json" <<'PY' || fail "--plan restores the schedule"
import json, sys
first = json.load(open(sys.argv[1]))
re = json.load(open(sys.argv[2]))
re = re.get("plans", [re])[0]
gp = json.load(open(sys.argv[3]))
gp = gp.get("plans", [gp])[0]
assert re["schedule"] == "interleaved" and re["virtual_stages"] == 2, re
assert abs(re["cost"] - first["cost"]) <= 1e-12 * first["cost"], (re["cost"], first["cost"])
assert gp["schedule"] == "gpipe" and gp["cost"] != first["cost"], gp
PY
# --micro-batches has approf's bound (COSTDB_MAX_MICRO_BATCHES), not a wider one
rc=0; "$apsolve" --db "$tmp/f.db" --no-store --micro-batches 1048577 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] && grep -q "from 1 to 1048576" "$tmp/err" || fail "--micro-batches past 2^20"
echo "apsolve CLI: ok"
