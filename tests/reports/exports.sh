#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Launch configurations (reports/export.c) of a Llama-3-8B plan: approf
# sweep (4 blocks, one layer each, 1x8, bf16, every variant), apsolve --parallel
# dp=2,tp=2,pp=2,sp=1,zero=1,recompute=full, then apreport: the three files
# against golden/llama3-8b/ (times normalised to <t>: the cost model is not
# under test here), each parsed (json.load, tomllib when the Python has it,
# shlex.split) and its settings checked; a non-uniform manual plan whose
# files start with the "cannot express" notice and the closest plan with a
# finite estimated cost; the interleaved schedule; --export selects files; an infeasible plan gets
# none unless --allow-infeasible. Regenerate the golden files with
#   exports.sh APPROF APSOLVE APREPORT PYTHON GOLDEN_DIR --regen
set -eu
approf=$1 apsolve=$2 apreport=$3 python=$4 golden=$5/llama3-8b regen=${6:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"
db=$dir/llama.db
"$approf" sweep --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries --manual-layers --cluster 1x8 \
  --micro-batches 16 --dtype bf16 --variants all --backend model --hardware a100-40g --db "$db" --quiet \
  >/dev/null 2>"$dir/sweep.err" || fail_with "$dir/sweep.err" "sweep"
# plan 1: the 3-D plan (the auto plan beside it is not stored again)
"$apsolve" --db "$db" --quiet --parallel dp=2,tp=2,pp=2,sp=1,zero=1,recompute=full >/dev/null ||
  fail "apsolve --parallel"
# plan 2: stages on (1, 2), (1, 2), (1, 4) with different logical meshes
"$apsolve" --db "$db" --quiet --stage-option manual --forward-stage-layer-ids '[[0],[1],[2,3]]' \
  --submesh-shapes '[(1,2),(1,2),(1,4)]' --logical-shapes '[(2,1),(2,1),(2,2)]' >/dev/null ||
  fail "apsolve manual"
# plan 3: a 3-D plan with a variant the sweep lacks (selective): infeasible
"$apsolve" --db "$db" --quiet --parallel dp=2,tp=2,pp=2,recompute=selective >/dev/null 2>&1 || true

"$apreport" --db "$db" --plan 1 --name llama3 --out "$dir/u" --quiet || fail "apreport plan 1"
norm() { sed 's/[0-9][0-9]*\.[0-9]\{6\} s/<t> s/g' "$1"; }
mkdir -p "$dir/norm"
for f in llama3_megatron.args llama3_deepspeed.json llama3_torchtitan.toml; do
  [ -s "$dir/u/$f" ] || fail "$f not written"
  norm "$dir/u/$f" >"$dir/norm/$f"
  if [ "$regen" = --regen ]; then
    mkdir -p "$golden"
    cp "$dir/norm/$f" "$golden/$f"
  fi
  same_file "$dir/norm/$f" "$golden/$f" "$f"
done

"$apreport" --db "$db" --plan 2 --name nonuni --out "$dir/n" --quiet || fail "apreport plan 2"
for f in nonuni_megatron.args nonuni_deepspeed.json nonuni_torchtitan.toml; do
  [ -s "$dir/n/$f" ] || fail "$f not written"
done

"$python" - "$dir/u" "$dir/n" <<'PY' || fail "parse checks"
import json, re, shlex, sys
u, n = sys.argv[1], sys.argv[2]
try:
    import tomllib
except ImportError:
    tomllib = None
    print("tomllib missing (Python < 3.11): TOML parse check skipped", file=sys.stderr)

def args(path):
    words = shlex.split(open(path).read(), comments=True)
    out, i = {}, 0
    while i < len(words):
        w = words[i]
        assert w.startswith("--"), (path, w)
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            out[w] = words[i + 1]; i += 2
        else:
            out[w] = True; i += 1
    return out

a = args(u + "/llama3_megatron.args")
want = {"--tensor-model-parallel-size": "2", "--pipeline-model-parallel-size": "2",
        "--num-layers": "4", "--micro-batch-size": "1", "--global-batch-size": "32",
        "--sequence-parallel": True, "--recompute-granularity": "full",
        "--recompute-method": "uniform", "--use-distributed-optimizer": True, "--bf16": True}
for k, v in want.items():
    assert a.get(k) == v, ("megatron", k, a.get(k), v)
assert "--fp16" not in a and "--expert-model-parallel-size" not in a, a

d = json.load(open(u + "/llama3_deepspeed.json"))
assert d["zero_optimization"]["stage"] == 1, d
assert d["train_micro_batch_size_per_gpu"] == 1 and d["gradient_accumulation_steps"] == 16, d
assert d["train_batch_size"] == 32 and d["bf16"]["enabled"] is True, d
assert "activation_checkpointing" in d and d["pipeline"]["activation_checkpoint_interval"] == 1, d
assert "stages" not in d["pipeline"] and "partition" not in d["pipeline"], d
assert "runs this plan as priced" in d["_comment"][2], d["_comment"]

if tomllib:
    t = tomllib.load(open(u + "/llama3_torchtitan.toml", "rb"))
    p = t["parallelism"]
    assert p["tensor_parallel_degree"] == 2 and p["pipeline_parallel_degree"] == 2, p
    assert p["data_parallel_shard_degree"] == 2 and p["data_parallel_replicate_degree"] == 1, p
    assert p["fsdp_reshard_after_forward"] == "never", p   # ZeRO-1 -> ZeRO-2
    assert p["pipeline_parallel_schedule"] == "1F1B", p
    assert t["training"]["global_batch_size"] == 32, t
    assert t["training"]["mixed_precision_param"] == "bfloat16", t
    assert t["activation_checkpoint"]["mode"] == "full", t
    assert t["job"]["description"].startswith("approf plan 1 of llama.db"), t

# the non-uniform plan: the notice first, the closest plan priced
for f in ("nonuni_megatron.args", "nonuni_torchtitan.toml"):
    text = open(n + "/" + f).read()
    head = text.splitlines()[:4]
    assert any("cannot express this plan" in l for l in head), (f, head)
    assert re.search(r"estimated iteration time of this closest plan: T = [0-9]+\.[0-9]{6} s, "
                     r"objective [0-9]+\.[0-9]{6} s \(the plan: T = ", text), f
a = args(n + "/nonuni_megatron.args")
assert a["--tensor-model-parallel-size"] == "1" and a["--pipeline-model-parallel-size"] == "4", a
d = json.load(open(n + "/nonuni_deepspeed.json"))
c = " ".join(d["_comment"])
assert "cannot express this plan" in c and "closest expressible plan: 4 uniform stages" in c, c
assert "pipeline" in d and "closest expressible plan: 4 uniform stages" in c, d
if tomllib:
    t = tomllib.load(open(n + "/nonuni_torchtitan.toml", "rb"))
    assert t["parallelism"]["pipeline_parallel_degree"] == 4, t
PY

# the 3-D plan reported under the interleaved schedule: priced anew
"$apreport" --db "$db" --plan 1 --name il --out "$dir/il" --schedule interleaved \
  --virtual-stages 2 --quiet || fail "apreport --schedule interleaved"
grep -qx -- '--num-layers-per-virtual-pipeline-stage 1' "$dir/il/il_megatron.args" ||
  fail "interleaved: no --num-layers-per-virtual-pipeline-stage 1"
grep -q 'reported under interleaved 1F1B, it is priced anew' "$dir/il/il_megatron.args" ||
  fail "interleaved: not priced anew"
grep -q '^# estimated iteration time of this plan: T = [0-9]*\.[0-9]* s' "$dir/il/il_megatron.args" ||
  fail "interleaved: no estimated time"
grep -qx 'pipeline_parallel_schedule = "Interleaved1F1B"' "$dir/il/il_torchtitan.toml" ||
  fail "interleaved: torchtitan schedule"
grep -q "cannot express the interleaved 1F1B schedule" "$dir/il/il_deepspeed.json" ||
  fail "interleaved: DeepSpeed notice"

# --export picks files
"$apreport" --db "$db" --plan 1 --name sel --out "$dir/s" --export deepspeed --quiet || fail "--export"
[ -f "$dir/s/sel_deepspeed.json" ] || fail "--export deepspeed: no json"
[ -e "$dir/s/sel_megatron.args" ] && fail "--export deepspeed wrote the Megatron args"
[ -e "$dir/s/sel_torchtitan.toml" ] && fail "--export deepspeed wrote the TOML"
"$apreport" --db "$db" --plan 1 --name no --out "$dir/x" --export none --quiet || fail "--export none"
ls "$dir/x" | grep -q 'args\|deepspeed\|toml' && fail "--export none wrote a launch file"
rc=0
"$apreport" --db "$db" --out "$dir/y" --export megatron,bogus 2>"$dir/err" || rc=$?
[ "$rc" = 2 ] || fail "--export bogus: exit $rc, want 2"
grep -q "unknown export 'bogus'" "$dir/err" || fail "--export bogus: $(cat "$dir/err")"

# an infeasible plan: no launch files, unless --allow-infeasible (then marked)
"$apreport" --db "$db" --plan 3 --name inf --out "$dir/i" --quiet || fail "apreport plan 3"
ls "$dir/i" | grep -q 'args\|deepspeed\|toml' && fail "launch files of an infeasible plan"
"$apreport" --db "$db" --plan 3 --name inf --out "$dir/j" --allow-infeasible --quiet ||
  fail "apreport plan 3 --allow-infeasible"
head -1 "$dir/j/inf_megatron.args" | grep -q '^# INFEASIBLE PLAN' || fail "args: no INFEASIBLE line"
# a plan given by hand is not called the search's failure
head -1 "$dir/j/inf_megatron.args" | grep -q 'this plan, given to apsolve, does not fit' ||
  fail "args: the infeasible 3-D plan is not named as given"
# the two --parallel runs stored their 3-D plans, not the auto plan again: 3 plans
"$apreport" --db "$db" --plan 4 --out "$dir/k" --quiet 2>/dev/null && fail "a plan 4 was stored"
head -1 "$dir/j/inf_torchtitan.toml" | grep -q '^# INFEASIBLE PLAN' || fail "toml: no INFEASIBLE line"
"$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["_comment"][0].startswith("INFEASIBLE PLAN")' \
  "$dir/j/inf_deepspeed.json" || fail "json: no INFEASIBLE comment"
echo "exports: ok"
