#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# apsolve beyond Alpa's objective, end to end on a real sweep: the full
# estimate (transfers, gradient all-reduce, optimizer) is at least T, its
# parts add up and it is stored as the plan's full_cost; --batch at the
# sweep's own batch reproduces T exactly and fits; a batch whose micro-batch
# no longer divides a forced data-parallel axis is reported invalid (exit 3);
# an imported cost table has no full estimate and says why.
# Usage: beyond_alpa.sh APPROF APSOLVE SQLITE3 WORKDIR
set -u
approf=$1 apsolve=$2 sqlite=$3 work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
"$approf" sweep --model resnet50 --dataset cifar10 --layers 8 --cluster 1x4 --batch 256 \
  --micro-batches 16 --backend model --quiet --db "$work/r.db" 2>/dev/null || fail "sweep"
"$apsolve" --db "$work/r.db" --format json >"$work/plan.json" 2>/dev/null || fail "apsolve"
python3 - "$work/plan.json" <<'PY' || fail "full estimate inconsistent"
import json, sys
d = json.load(open(sys.argv[1]))
b = d["breakdown"]
assert d["full_cost"] >= d["cost"], (d["full_cost"], d["cost"])
for k in ("pipeline", "transfers", "grad_sync", "optimizer"):
    assert b[k] >= 0, k
# apply-grad: the entries' profiled apply_cost where the sweep stored it,
# else the gradient all-reduce + optimizer priced from the placements
apply = b["apply"] if b.get("apply_source") == "entries" else b["grad_sync"] + b["optimizer"]
assert apply >= 0
assert abs(b["pipeline"] + apply - d["full_cost"]) <= 1e-12 * d["full_cost"]
assert b["pipeline"] >= d["cost"]
if len(d["stages"]) > 1:
    assert b["transfer_bytes"] > 0 and b["transfers"] > 0
PY
id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['plan_id'])" "$work/plan.json")
want=$(python3 -c "import json,sys; print(repr(json.load(open(sys.argv[1]))['full_cost']))" "$work/plan.json")
same=$("$sqlite" "$work/r.db" "SELECT full_cost = $want FROM plan WHERE id=$id")
[ "$same" = 1 ] || fail "stored full_cost differs from the printed $want"

"$apsolve" --db "$work/r.db" --no-store --batch 256 --format json >"$work/same.json" 2>/dev/null ||
  fail "--batch at the sweep's batch"
python3 - "$work/same.json" <<'PY' || fail "--batch 256 should reproduce T and fit"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rebatch"]
assert r["ratio"] == 1 and r["valid"] and r["fits"], r
assert abs(r["cost"] - d["cost"]) <= 1e-12 * d["cost"], (r["cost"], d["cost"])
PY
# micro-batch 16 -> 1: a forced (4, 1) data-parallel stage cannot split one sample
"$apsolve" --db "$work/r.db" --no-store --batch 16 --stage-option manual \
  --forward-stage-layer-ids '[[0,1,2,3,4,5,6,7]]' --submesh-shapes '[(1,4)]' \
  --logical-shapes '[(4,1)]' --option-dicts '[{"force_batch_dim_to_mesh_dim":0}]' \
  >"$work/small.txt" 2>"$work/small.err"
rc=$?
[ $rc = 3 ] || fail "--batch 16 with a forced dp=4 stage: exit $rc, want 3"
says_text "$work/small.txt" "INVALID: stage 0" "no INVALID line"
"$apsolve" --db "$work/r.db" --no-store --batch 100 >/dev/null 2>&1
[ $? = 2 ] || fail "--batch not divisible by micro-batches should be a usage error"

h=start,end,submesh,logical_mesh,force_batch_dim,phase,compute_cost,peak_memory,invar_size
h=$h,outvar_size,temp_buffer_size,available_memory,intermediate_size,initial_size
printf '%s\n0,0,1x1,1x1,,fwd,1,10,1,1,1,1000,1,1\n0,0,1x1,1x1,,bwd,2,10,1,1,1,1000,1,1\n' "$h" \
  >"$work/t.csv"
"$approf" import --db "$work/i.db" --cluster 1x1 "$work/t.csv" >/dev/null 2>&1 || fail "import"
"$apsolve" --db "$work/i.db" --no-store >"$work/i.txt" 2>/dev/null || fail "apsolve on import"
says_text "$work/i.txt" "Full estimate: unavailable (the sweep names no hardware" "imported table should have no full estimate"
echo "ok: full estimate, --batch re-evaluation, imported table"
