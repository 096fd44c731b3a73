#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --schedule interleaved-zb and zbv (docs/solver.md, "Schedules"):
# PyTorch's ScheduleInterleavedZeroBubble and ScheduleZBVZeroBubble, which
# torchtitan runs, on a 4-block GPT swept on 1x4 H100 in bf16 with every
# variant, as --parallel dp=2,tp=1,pp=2,vpp=2,zero=2 (2 chunks of one
# block per device), B = 8. Each prices below interleaved 1F1B of the same
# layout and above the B x max stage cost every device works; each keeps 2
# micro-batches' worth in flight on both stages (interleaved ZB:
# ((v - 1) m + n) / v with rounds of m = 2; ZB-V: min(2n, 2B, B + k + 1) / 2),
# 1F1B's first stage's count; torchtitan runs both, Megatron-LM and
# DeepSpeed neither (the verdict). The stored plan: --plan prices it again
# the same, apreport simulates the selected schedule, and torchtitan's
# launch file writes pipeline_parallel_schedule InterleavedZeroBubble /
# ZBVZeroBubble with one block per stage, passing both manifests
# (unknowns only for v0.2.2: torchtitan has no gpt flavour). Refusals:
# zbv with vpp=3, interleaved-zb with fewer micro-batches than stages.
# Then the auto search (on 8 blocks) picks one where torchtitan runs it,
# and so does --framework torchtitan (not without the weight gradients).
# Usage: zero_bubble_multi.sh APPROF APSOLVE PYTHON APREPORT SQLITE3 MANIFEST_DIR CHECK_LAUNCH
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 apreport=$4 sq=$5 manifests=$6 check=$7
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/g.db
par=dp=2,tp=1,pp=2,vpp=2,zero=2
"$approf" sweep --db "$db" --quiet --model gpt --num-layers 4 --hidden 512 --heads 8 \
  --seq-len 256 --vocab 1000 --cluster 1x4 --hardware h100-sxm --batch 32 --micro-batches 8 \
  --layers 4 --dtype bf16 --variants all >"$w/out" 2>&1 || fail_with "$w/out" "gpt sweep"
for s in interleaved interleaved-zb zbv; do
  "$apsolve" --db "$db" --format json --schedule $s --parallel $par >"$w/$s.json" 2>"$w/err" ||
    fail_with "$w/err" "--schedule $s"
  "$sq" "$db" "select max(id) from plan" >"$w/$s.id" || fail "plan id"
done
"$py" - "$w/interleaved.json" "$w/interleaved-zb.json" "$w/zbv.json" <<'PY' || fail "the 3-D plans"
import json, sys
def plan3d(path):
    return [p for p in json.load(open(path))["plans"] if p["kind"] == "3d"][0]
one, izb, zbv = (plan3d(a) for a in sys.argv[1:4])
for p, name in ((izb, "interleaved-zb"), (zbv, "zbv")):
    assert p["schedule"] == name and p["virtual_stages"] == 2 and p["feasible"], (name, p["schedule"])
    B, st = p["micro_batches"], p["stages"]
    assert B == 8 and len(st) == 2, (B, len(st))
    assert [s["cost"] for s in st] == [s["cost"] for s in one["stages"]], name
    assert p["cost"] < one["cost"], (name, p["cost"], one["cost"])
    assert p["cost"] > B * max(s["cost"] for s in st), (name, p["cost"])
    assert [s["in_flight"] for s in st] == [2, 2], (name, [s["in_flight"] for s in st])
    fw = p["frameworks"]
    assert fw["runs"] == ["torchtitan"], (name, fw)
print("interleaved 1F1B %.9g s, interleaved-zb %.9g s, zbv %.9g s" % (one["cost"], izb["cost"], zbv["cost"]))
PY
for s in interleaved-zb zbv; do
  id=$(cat "$w/$s.id")
  "$apsolve" --db "$db" --no-store --format json --plan "$id" >"$w/again.json" 2>"$w/err" ||
    fail_with "$w/err" "--plan $id ($s)"
  "$apreport" --db "$db" --plan "$id" --name z --out "$w/r-$s" --quiet 2>"$w/err" ||
    fail_with "$w/err" "apreport of the $s plan"
  "$py" - "$w/$s.json" "$w/again.json" "$w/r-$s/report.json" "$s" <<'PY' || fail "the stored $s plan"
import json, sys
p = [q for q in json.load(open(sys.argv[1]))["plans"] if q["kind"] == "3d"][0]
again = json.load(open(sys.argv[2]))
again = again["plans"][0] if "plans" in again else again
rep = json.load(open(sys.argv[3]))
name = sys.argv[4]
assert again["schedule"] == name and again["cost"] == p["cost"], (again["schedule"], again["cost"], p["cost"])
sc = rep["schedules"]
assert sc["selected"] == name, sc.get("selected")
sim = sc[name]
assert sim["virtual_stages"] == 2 and sim["in_flight"] == [2, 2], sim
assert sim["iteration_time"] < sc["1f1b"]["iteration_time"], (sim["iteration_time"], sc["1f1b"])
assert [s["memory_needed"] for s in rep["stages"]] == [s["memory_needed"] for s in p["stages"]]
PY
  tt=$w/r-$s/z_torchtitan.toml
  want=InterleavedZeroBubble
  [ $s = zbv ] && want=ZBVZeroBubble
  grep -q "^pipeline_parallel_schedule = \"$want\"" "$tt" || fail_with "$tt" "torchtitan's $want"
  grep -q '^pipeline_parallel_layers_per_stage = 1$' "$tt" || fail_with "$tt" "one block per stage"
  grep -q "main: --parallelism.pipeline_parallel_schedule $want" "$tt" ||
    fail_with "$tt" "torchtitan main's $want"
  grep -q "Megatron-LM cannot express the .*zero-bubble.* schedule" "$w/r-$s/z_megatron.args" ||
    fail_with "$w/r-$s/z_megatron.args" "Megatron-LM's file says why"
  if "$py" -c 'import tomllib' 2>/dev/null; then
    "$py" "$check" "$manifests/torchtitan-v0.2.2.json" "$tt" >"$w/chk" 2>&1
    [ $? = 3 ] || fail_with "$w/chk" "torchtitan v0.2.2 manifest ($s)"
    "$py" "$check" "$manifests/torchtitan-main-b5bcd76.json" "$tt" >"$w/chk" 2>&1 ||
      fail_with "$w/chk" "torchtitan main manifest ($s)"
  fi
done
# the zbv plan reported under interleaved-zb is priced anew with its 2
# chunks, a plan torchtitan runs as priced (not ZB-H1 on one chunk)
"$apreport" --db "$db" --plan "$(cat "$w/zbv.id")" --name z --out "$w/r-again" --quiet \
  --schedule interleaved-zb 2>"$w/err" || fail_with "$w/err" "apreport --schedule interleaved-zb"
grep -q "estimated iteration time of this plan: T = .*(the plan: T = " "$w/r-again/z_torchtitan.toml" &&
  ! grep -q "not exact either" "$w/r-again/z_torchtitan.toml" ||
  fail_with "$w/r-again/z_torchtitan.toml" "the zbv plan priced anew under interleaved-zb"
"$apsolve" --db "$db" --no-store --schedule zbv --parallel dp=2,tp=1,pp=2,vpp=3,zero=2 \
  >"$w/out" 2>"$w/err"
expect_rc 2 $? "$w/err" "zbv with vpp=3"
grep -q "zbv: runs exactly 2 virtual stages per device, not 3" "$w/err" ||
  fail_with "$w/err" "the vpp=3 refusal"
"$apsolve" --db "$db" --no-store --schedule interleaved-zb --parallel dp=1,tp=1,pp=4,zero=2 \
  --micro-batches 2 >"$w/out" 2>"$w/err"
expect_rc 2 $? "$w/err" "interleaved-zb with 2 micro-batches on 4 stages"
grep -q "interleaved-zb: micro-batches (2) must be at least the pipeline stages (4)" "$w/err" ||
  fail_with "$w/err" "the B < stages refusal"
# The auto search (no --schedule) tries both where a framework runs them:
# on 8 blocks over 1x4, two blocks a stage in bf16, ZB-V (or interleaved
# ZB) beats 1F1B and interleaved 1F1B and torchtitan runs it; with
# --schedule 1f1b, or without the weight-gradient seconds, it is not tried.
db8=$w/g8.db
"$approf" sweep --db "$db8" --quiet --model gpt --num-layers 8 --hidden 512 --heads 8 \
  --seq-len 256 --vocab 1000 --cluster 1x4 --hardware h100-sxm --batch 32 --micro-batches 8 \
  --layers 8 --dtype bf16 >"$w/out" 2>&1 || fail_with "$w/out" "8-block sweep"
for s in auto interleaved 1f1b; do
  opt="--schedule $s"
  [ $s = auto ] && opt=
  # shellcheck disable=SC2086
  "$apsolve" --db "$db8" --no-store --format json $opt >"$w/a-$s.json" 2>"$w/err" ||
    fail_with "$w/err" "auto search ($s)"
done
"$py" - "$w/a-auto.json" "$w/a-interleaved.json" "$w/a-1f1b.json" <<'PY' || fail "the auto search's zero bubble"
import json, sys
def plan(path):
    d = json.load(open(path))
    return d["plans"][0] if "plans" in d else d
auto, il, one = (plan(a) for a in sys.argv[1:4])
assert auto["schedule"] in ("interleaved-zb", "zbv"), auto["schedule"]
assert auto["frameworks"]["runs"] == ["torchtitan"], auto["frameworks"]
assert auto["virtual_stages"] == 2 and len(auto["stages"]) > 1, auto["virtual_stages"]
assert all((s["layers"][1] - s["layers"][0] + 1) % 2 == 0 for s in auto["stages"]), "whole chunks"
assert auto["cost"] < il["cost"] and auto["cost"] < one["cost"], (auto["cost"], il["cost"], one["cost"])
assert one["schedule"] == "1f1b", one["schedule"]
print("auto %s %.9g s, interleaved %.9g s, 1f1b %.9g s" % (auto["schedule"], auto["cost"], il["cost"], one["cost"]))
PY
# --framework torchtitan tries them too (the same zero-bubble schedules):
# its best layout is pp 4 under ZB-V or interleaved ZB, below the
# interleaved 1F1B plan --framework megatron finds on the same layout, and
# the stored plan is priced again the same by --plan
for f in torchtitan megatron; do
  "$apsolve" --db "$db8" --format json --framework $f >"$w/f-$f.json" 2>"$w/err" ||
    fail_with "$w/err" "--framework $f"
done
id=$("$py" -c "import json,sys; p=json.load(open(sys.argv[1])); p=p['plans'][0] if 'plans' in p else p; print(p['plan_id'])" "$w/f-torchtitan.json") ||
  fail "the torchtitan plan's id"
"$apsolve" --db "$db8" --no-store --format json --plan "$id" >"$w/f-again.json" 2>"$w/err" ||
  fail_with "$w/err" "--plan $id (torchtitan)"
"$py" - "$w/f-torchtitan.json" "$w/f-megatron.json" "$w/f-again.json" <<'PY' || fail "--framework torchtitan's zero bubble"
import json, sys
def plan(path):
    d = json.load(open(path))
    return d["plans"][0] if "plans" in d else d
tt, mg, again = (plan(a) for a in sys.argv[1:4])
assert tt["schedule"] in ("interleaved-zb", "zbv"), tt["schedule"]
assert "torchtitan" in tt["frameworks"]["runs"], tt["frameworks"]
assert mg["schedule"] in ("1f1b", "interleaved"), mg["schedule"]
assert tt["cost"] < mg["cost"], (tt["cost"], mg["cost"])
assert (again["schedule"], again["virtual_stages"], again["cost"]) == (tt["schedule"], tt["virtual_stages"], tt["cost"]), (again["schedule"], again["cost"], tt["cost"])
print("--framework torchtitan %s %.9g s, megatron %s %.9g s" % (tt["schedule"], tt["cost"], mg["schedule"], mg["cost"]))
PY
"$sq" "$db8" "update stage_cost set wgrad_cost = null" || fail "emptying wgrad_cost"
"$apsolve" --db "$db8" --no-store --format json >"$w/a-nowg.json" 2>"$w/err" ||
  fail_with "$w/err" "auto search without the split"
"$py" -c "import json,sys; p=json.load(open(sys.argv[1])); p=p['plans'][0] if 'plans' in p else p; assert p['schedule'] in ('1f1b', 'interleaved'), p['schedule']" "$w/a-nowg.json" ||
  fail "the auto search tried a zero-bubble schedule without the split"
"$apsolve" --db "$db8" --no-store --format json --framework torchtitan >"$w/f-nowg.json" 2>"$w/err" ||
  fail_with "$w/err" "--framework torchtitan without the split"
"$py" -c "import json,sys; p=json.load(open(sys.argv[1])); p=p['plans'][0] if 'plans' in p else p; assert p['schedule'] in ('1f1b', 'interleaved'), p['schedule']" "$w/f-nowg.json" ||
  fail "--framework torchtitan tried a zero-bubble schedule without the split"
echo "ok"
