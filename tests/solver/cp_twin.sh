#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The twin of a cp or ep plan (solver/session_twin.c; docs/context-parallel.md,
# docs/expert-parallel.md): the entry of the same GPUs without cp/ep that the
# cp or ep stage is priced from.
# - Its memory does not decide fit: at a --memory-budget between the two
#   needs, dp=2 (the twin of cp=2) does not fit and dp=1,cp=2 does (Llama-3-8B's
#   shape, 2 blocks at sequence 4096 on 1x2 A100-40GB).
# - A twin the sweep judges out of memory keeps the time it computed
#   (CostdbEntry.unfit_cost, in its oom row's compute_cost column; its cost
#   stays inf) and its placements: the cp or ep stage is priced from it and
#   fits or not on the transformed memory. On a small Llama at sequence
#   16384 whose dp=4 backward exceeds a 4.8 GiB copy of a100-40g, cp=4 is
#   priced as fitting (the 3-D dp=4 plan has no finite entry); at 9.4 GiB
#   the 8B's cp=2 and at 1.75 GiB the Mixtral's ep=2 are priced and do not
#   fit (exit 3, the stage OUT OF MEMORY).
# - A twin out of memory without a time (a measured OOM, a database written
#   before) is refused naming that stage and the cause, not attention or
#   experts (exit 2); a twin with no entry (what approf sweep --skip-unfit
#   leaves out) names --skip-unfit.
# - The auto search and --framework find such a plan by themselves
#   (solver/session_twin.c, apsolve_unfit_open): on the small Llama at
#   sequence 16384 no plan without cp fits, and the auto plan is a cp plan
#   on the dp=4 twin's GPUs, priced as --parallel prices it (before: exit 3, no feasible plan;
#   and the objective fell back to alpa with a notice that the sweep had no
#   apply costs, since no entry had a finite time); --framework megatron
#   finds a cp plan too. On a small Mixtral on 1x2 (bf16 Adam state, f32
#   gradient buffers, ZeRO-1: a spec where halving the experts' weights and
#   gradients outweighs what ZeRO-1 keeps) whose dp=2 backward is out of
#   memory, the auto plan is ep=2 etp=1, priced as --parallel prices it.
# Usage: cp_twin.sh APPROF APSOLVE PYTHON SQLITE3
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
llama="--model llama --preset llama-3-8b --num-layers 2 --layers 2 --seq-len 4096 --cluster 1x2
  --backend model --batch 8 --micro-batch-sizes 2"

# shellcheck disable=SC2086
"$approf" sweep --db "$w/l.db" --quiet $llama --hardware a100-40g >"$w/out" 2>&1 ||
  fail_with "$w/out" "llama sweep"
plan() { # DB KNOBS [OPTION...]: --parallel KNOBS as JSON into $w/p.json
  db=$1 knobs=$2
  shift 2
  "$apsolve" --db "$db" --no-store --format json --quiet --micro-batch-size 2 \
    --parallel "$knobs" "$@" >"$w/p.json" 2>"$w/err"
}
plan "$w/l.db" dp=2,tp=1,pp=1 --memory-budget 26500000000
"$py" - "$w/p.json" <<'EOF' || fail "dp=2 at the budget"
import json, sys
s = json.load(open(sys.argv[1]))["plans"][0]["stages"][0]
assert not s["memory_ok"] and s["memory_needed"] > 26500000000, s
EOF
plan "$w/l.db" dp=1,tp=1,pp=1,cp=2 --memory-budget 26500000000 ||
  fail_with "$w/err" "cp=2 at a budget its twin exceeds"
"$py" - "$w/p.json" <<'EOF' || fail "cp=2 at the budget"
import json, sys
p = json.load(open(sys.argv[1]))["plans"][0]
s = p["stages"][0]
assert p["feasible"] and s["memory_ok"] and 0 < s["memory_needed"] <= 26500000000, p
EOF

# a copy of a100-40g with 9.4 GiB: dp=2's backward (9.5 GB at its peak)
# is stored out of memory; one variant only, so no other level fits
"$approf" hardware show a100-40g >"$w/show" 2>"$w/err" || fail_with "$w/err" "hardware show"
sed 's/^memory_gib = .*/memory_gib = 9.4/' "$w/show" >"$w/small.spec"
# shellcheck disable=SC2086
"$approf" sweep --db "$w/s.db" --quiet $llama --hardware "$w/small.spec" --recompute none \
  --zero 0 --memory-levels 1 >"$w/out" 2>&1 || fail_with "$w/out" "llama sweep, 9.4 GiB"
plan "$w/s.db" dp=1,tp=1,pp=1,cp=2
expect_rc 3 $? "$w/err" "cp=2 on a twin out of memory"
"$py" - "$w/p.json" <<'EOF' || fail "cp=2 priced from its twin out of memory"
import json, math, sys
p = json.load(open(sys.argv[1]))
s = p["stages"][0]
assert not p["feasible"] and math.isfinite(s["cost"]) and s["cost"] > 0, p
assert not s["memory_ok"] and s["memory_needed"] > s["available_memory"], s
EOF
# the twin's oom rows without a time, as a measured OOM or an older
# database stores them
"$sq" "$w/s.db" "update stage_profile set compute_cost = 9e999 where status = 'oom'" ||
  fail "the oom rows' time removed"
plan "$w/s.db" dp=1,tp=1,pp=1,cp=2
expect_rc 2 $? "$w/err" "cp=2 on a twin out of memory without a time"
grep -q "cp=2 is priced from the stored entry of the same GPUs without it (logical mesh (2, 1), batch on axis 0), and stage 0's (layers 0-1) in sweep 1 has no time: it is stored out of memory" "$w/err" ||
  fail_with "$w/err" "the refusal of cp=2 does not name its twin out of memory"
# the twin's rows gone, as --skip-unfit leaves a tuple out
"$sq" "$w/s.db" "delete from stage_profile where start_layer = 0 and end_layer = 1 and
  (submesh_index, config_index) in (select submesh_index, config_index from sweep_config
  where logical_a = 2 and logical_b = 1 and force_batch_dim = 0)" || fail "delete the twin"
plan "$w/s.db" dp=1,tp=1,pp=1,cp=2
expect_rc 2 $? "$w/err" "cp=2 without its twin"
grep -q "sweep 1 has no entry for stage 0 (layers 0-1): approf sweep --skip-unfit" "$w/err" ||
  fail_with "$w/err" "the refusal of cp=2 does not name --skip-unfit"

# cp=4 fits where its twin does not: a small Llama at sequence 16384 on a
# copy of a100-40g with 4.8 GiB (3.8 available), under the dp=4 backward's
# 5.45 GB peak; cp=4 needs 3.5 GiB
sed 's/^memory_gib = .*/memory_gib = 4.8/' "$w/show" >"$w/c4.spec"
"$approf" sweep --db "$w/c4.db" --quiet --model llama --num-layers 2 --hidden 256 --heads 4 \
  --seq-len 16384 --vocab 1000 --layers 2 --cluster 1x4 --backend model --batch 16 \
  --micro-batch-sizes 4 --recompute none --zero 0 --memory-levels 1 \
  --hardware "$w/c4.spec" >"$w/out" 2>&1 || fail_with "$w/out" "small llama sweep, 4.8 GiB"
"$sq" "$w/c4.db" "select count(*) from stage_profile p join sweep_config c using (sweep_id,
  submesh_index, config_index) where start_layer = 0 and end_layer = 1 and logical_a = 4
  and force_batch_dim = 0 and status = 'oom'" >"$w/n" || fail "count the twin's oom rows"
[ "$(cat "$w/n")" = 1 ] || fail "the dp=4 twin's backward is not stored out of memory"
"$apsolve" --db "$w/c4.db" --no-store --format json --quiet --micro-batch-size 4 \
  --parallel dp=1,tp=1,pp=1,cp=4 >"$w/p.json" 2>"$w/err" ||
  fail_with "$w/err" "cp=4 on a twin out of memory"
"$py" - "$w/p.json" <<'EOF' || fail "cp=4 fits where its twin does not"
import json, math, sys
p = json.load(open(sys.argv[1]))
p = p["plans"][0] if "plans" in p else p
s = p["stages"][0]
assert p["feasible"] and s["memory_ok"], p
assert 0 < s["memory_needed"] <= s["available_memory"] < 5.45e9, s
assert math.isfinite(s["cost"]) and s["cost"] > 0, s
EOF
"$apsolve" --db "$w/c4.db" --no-store --format json --quiet --micro-batch-size 4 \
  --parallel dp=4,tp=1,pp=1 >"$w/p.json" 2>"$w/err"
expect_rc 3 $? "$w/err" "dp=4 out of memory"
# the auto search finds the cp plan, priced as --parallel prices it
"$apsolve" --db "$w/c4.db" --no-store --format json >"$w/auto.json" 2>"$w/err" ||
  fail_with "$w/err" "the auto search on a sweep whose plans need cp to fit"
grep -q "^apsolve: context parallelism: no plan without cp fits; the cp plan does" "$w/err" ||
  fail_with "$w/err" "the auto search does not say cp makes it fit"
if grep -q "entries without apply_cost" "$w/err"; then
  fail_with "$w/err" "the oom entries' apply costs are not counted"
fi
knobs=$("$py" -c 'import json,sys; a = json.load(open(sys.argv[1]))
print("dp=%d,tp=1,pp=1,cp=%d,cp_comm=%s" % (4 // a["cp"], a["cp"], a["cp_comm"]))' "$w/auto.json") ||
  fail "the auto plan has no cp"
"$apsolve" --db "$w/c4.db" --no-store --format json --quiet --parallel "$knobs" >"$w/p.json" \
  2>"$w/err" || fail_with "$w/err" "--parallel $knobs"
"$py" - "$w/auto.json" "$w/p.json" <<'EOF' || fail "the auto cp plan"
import json, sys
a, p = (json.load(open(f)) for f in sys.argv[1:])
p = p["plans"][0] if "plans" in p else p
assert a["kind"] == "auto" and a["cp"] in (2, 4) and a["feasible"], a
# the --parallel plan states its knobs as the auto plan does
assert (p.get("cp"), p.get("cp_comm")) == (a["cp"], a["cp_comm"]), p
assert a["cost_objective"] == "full", a["cost_objective"]
s, t = a["stages"][0], p["stages"][0]
assert s["memory_ok"] and 0 < s["memory_needed"] <= s["available_memory"] < 5.45e9, s
assert (s["logical_mesh"], s["submesh"]) == ([4, 1], [1, 4]), s
for k in ("cost", "total_cost", "full_cost"):
    assert abs(a[k] - p[k]) <= 1e-12 * p[k], (k, a[k], p[k])
assert s["memory_needed"] == t["memory_needed"], (s, t)
EOF
"$apsolve" --db "$w/c4.db" --no-store --quiet --framework megatron >"$w/out" 2>"$w/err" ||
  fail_with "$w/err" "--framework megatron on a sweep whose plans need cp to fit"
grep -q "^Best plan Megatron-LM runs as priced: --parallel dp=[12],tp=1,pp=1,.*,cp=[24]" "$w/out" ||
  fail_with "$w/out" "--framework megatron: no cp plan"

# ep: the small Mixtral of expert_parallel.sh on a copy of h100-sxm with
# 1.75 GiB, under the dp=4 entry's 0.84 GB peak
"$approf" hardware show h100-sxm >"$w/show" 2>"$w/err" || fail_with "$w/err" "hardware show"
sed 's/^memory_gib = .*/memory_gib = 1.75/' "$w/show" >"$w/m.spec"
"$approf" sweep --db "$w/m.db" --model mixtral --num-layers 2 --hidden 256 --heads 4 \
  --seq-len 128 --vocab 1000 --cluster 1x4 --hardware "$w/m.spec" --batch 16 \
  --micro-batches 4 --layers 2 --recompute none --zero 0 --memory-levels 1 --quiet \
  >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep"
"$apsolve" --db "$w/m.db" --no-store --format json --quiet --parallel dp=4,tp=1,pp=1,ep=2 \
  >"$w/p.json" 2>"$w/err"
expect_rc 3 $? "$w/err" "ep=2 on a twin out of memory"
"$py" - "$w/p.json" <<'EOF' || fail "ep=2 priced from its twin out of memory"
import json, math, sys
s = json.load(open(sys.argv[1]))["stages"][0]
assert math.isfinite(s["cost"]) and s["cost"] > 0 and not s["memory_ok"], s
EOF
"$sq" "$w/m.db" "update stage_profile set compute_cost = 9e999 where status = 'oom'" ||
  fail "the oom rows' time removed"
"$apsolve" --db "$w/m.db" --no-store --quiet --parallel dp=4,tp=1,pp=1,ep=2 >/dev/null 2>"$w/err"
expect_rc 2 $? "$w/err" "ep=2 on a twin out of memory without a time"
grep -q "ep=2 is priced from the stored entry of the same GPUs without it (logical mesh (4, 1), batch on axis 0), and stage 0's (layers 0-1) in sweep 1 has no time: it is stored out of memory" "$w/err" ||
  fail_with "$w/err" "the refusal of ep=2 does not name its twin out of memory"

# ep: a small Mixtral on 1x2 whose dp=2 backward is out of memory on a
# copy of h100-sxm with 2.1 GiB, Adam's state in bf16 without a master copy,
# gradient buffers in f32, ZeRO-1; the auto search finds ep=2 etp=1 and
# prices it as --parallel does
sed -e 's/^memory_gib = .*/memory_gib = 2.1/' -e 's/^grad_reduce_bytes = .*/grad_reduce_bytes = 4/' \
  -e 's/^optimizer_main_param_bytes = .*/optimizer_main_param_bytes = 2/' \
  -e 's/^optimizer_exp_avg_bytes = .*/optimizer_exp_avg_bytes = 2/' \
  -e 's/^optimizer_exp_avg_sq_bytes = .*/optimizer_exp_avg_sq_bytes = 2/' "$w/show" >"$w/e.spec"
"$approf" sweep --db "$w/e.db" --model mixtral --num-layers 2 --hidden 256 --heads 4 \
  --seq-len 128 --vocab 1000 --cluster 1x2 --hardware "$w/e.spec" --batch 16 \
  --micro-batches 4 --layers 2 --recompute none --zero 1 --memory-levels 1 \
  --logical-space data_parallel_only --quiet >"$w/out" 2>&1 || fail_with "$w/out" "mixtral 1x2 sweep"
"$sq" "$w/e.db" "select count(*) from stage_profile p join sweep_config c using (sweep_id,
  submesh_index, config_index) where start_layer = 0 and end_layer = 1 and logical_a = 2
  and status = 'oom'" >"$w/n" || fail "count the ep twin's oom rows"
[ "$(cat "$w/n")" -ge 1 ] || fail "the dp=2 twin is not stored out of memory"
"$apsolve" --db "$w/e.db" --no-store --format json >"$w/auto.json" 2>"$w/err" ||
  fail_with "$w/err" "the auto search on a sweep whose plans need ep to fit"
grep -q "^apsolve: expert parallelism: no plan without ep fits; the ep plan does" "$w/err" ||
  fail_with "$w/err" "the auto search does not say ep makes it fit"
"$apsolve" --db "$w/e.db" --no-store --format json --quiet \
  --parallel dp=2,tp=1,pp=1,zero=1,ep=2,etp=1 >"$w/p.json" 2>"$w/err" ||
  fail_with "$w/err" "--parallel ep=2"
"$py" - "$w/auto.json" "$w/p.json" <<'EOF' || fail "the auto ep plan"
import json, sys
a, p = (json.load(open(f)) for f in sys.argv[1:])
p = p["plans"][0] if "plans" in p else p
assert a["kind"] == "auto" and (a["ep"], a["etp"]) == (2, 1) and a["feasible"], a
assert (p.get("ep"), p.get("etp")) == (2, 1), p
s, t = a["stages"][0], p["stages"][0]
assert len(a["stages"]) == 1 and s["logical_mesh"] == [2, 1] and s["zero"] == 1, s
assert s["memory_ok"] and s["memory_needed"] <= s["available_memory"], s
for k in ("cost", "total_cost", "full_cost"):
    assert abs(a[k] - p[k]) <= 1e-12 * p[k], (k, a[k], p[k])
assert s["memory_needed"] == t["memory_needed"], (s, t)
EOF
