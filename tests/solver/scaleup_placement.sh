#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The NVLink domain larger than a host (GB200 NVL72; docs/hardware.md
# "Placement across a domain boundary", docs/context-parallel.md):
# - Two racks (--cluster 36x4, trays 0-17 and 18-35). Stages of 16, 16, 2
#   and 2 trays are kept each in one rack (the second 16 at tray 18, the
#   2-tray stages at 34, beside it, and 16); 16, 16 and 4 trays cannot be (2 + 2 trays
#   are left in the racks), so the second 16-tray stage straddles trays
#   16-31. Its gradient all-reduce over 64 GPUs is priced over the network:
#   the same stage (layer 1, logical (64, 1)) costs more there than at tray
#   18 by exactly its straddle price, in grad sync and apply-grad, and the
#   plan's full estimate carries it. apreport lists the same devices,
#   marks the straddle, and its headline iteration is apsolve's figure.
# - Context parallelism's all-to-all group on one rack of 4 trays: cp 8 of
#   a2a+p2p runs its all-to-all over all 8 GPUs (2 trays) inside the NVL72
#   domain, hand-counted: per layer 4 all-to-alls of 8 x 2 MiB (Q; K or V
#   halves are as large) at (8 - 1)/64 of the bytes over NVLink's 900 GB/s
#   x 0.8 plus 7 x 3.4 us, 2 layers; stored as cp_a2a 8. On the same spec
#   without the domain the all-to-all stays in a tray (cp_a2a 4).
# Usage: scaleup_placement.sh APPROF APSOLVE APREPORT PYTHON REPORT_SCHEMA
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 apreport=$3 py=$4 schema=$5
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT

"$approf" sweep --model gpt --num-layers 4 --hidden 512 --heads 16 --seq-len 128 --vocab 1024 \
  --layers 4 --cluster 36x4 --batch 256 --micro-batches 2 --submesh-space manual:16x4,4x4,2x4 \
  --hardware gb200-nvl72 --backend model --quiet --db "$w/racks.db" >"$w/out" 2>&1 ||
  fail_with "$w/out" "sweep on two racks"
plan() { # plan NAME IDS SHAPES LOGICAL [--no-store]
  "$apsolve" --db "$w/racks.db" --stage-option manual --forward-stage-layer-ids "$2" \
    --submesh-shapes "$3" --logical-shapes "$4" --format json --quiet $5 >"$w/$1.json" \
    2>"$w/$1.err" || fail_with "$w/$1.err" "apsolve plan $1"
}
plan kept '[[0],[1],[2],[3]]' '[(16,4),(16,4),(2,4),(2,4)]' '[(64,1),(64,1),(8,1),(8,1)]' --no-store
plan straddle '[[0],[1],[2,3]]' '[(16,4),(16,4),(4,4)]' '[(64,1),(64,1),(16,1)]'
mkdir -p "$w/rep"
"$apreport" --db "$w/racks.db" --plan 1 --name s --out "$w/rep" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
"$py" - "$w/kept.json" "$w/straddle.json" "$w/rep/report.json" "$schema" <<'PY' || fail "the straddle"
import json, sys
def plan(path):
    d = json.load(open(path))
    return d["plans"][0] if "plans" in d else d
kept, strad, rep = plan(sys.argv[1]), plan(sys.argv[2]), json.load(open(sys.argv[3]))
ks, ss = kept["breakdown"]["stages"], strad["breakdown"]["stages"]
# where the stages sit, counted by hand (4 GPUs a tray)
assert [s["first_device"] for s in ks] == [0, 72, 136, 64], [s["first_device"] for s in ks]
assert all(s["domains"] == s["priced_domains"] == 1 and s["straddle"] == 0 for s in ks), ks
assert [s["first_device"] for s in ss] == [0, 64, 128], [s["first_device"] for s in ss]
assert [(s["domains"], s["priced_domains"]) for s in ss] == [(1, 1), (2, 1), (1, 1)], ss
# the same stage at tray 18 and straddling trays 16-31: its all-reduce over
# the network less over NVLink, in grad sync and in apply-grad
k, s = ks[1], ss[1]
assert s["replicas"] == k["replicas"] == 64 and s["grad_bytes"] == k["grad_bytes"], (k, s)
assert s["straddle"] > 0, s
assert abs(s["grad_sync"] - k["grad_sync"] - s["straddle"]) <= 1e-12 * s["grad_sync"], (k, s)
assert abs(s["apply"] - k["apply"] - s["straddle"]) <= 1e-12 * s["apply"], (k, s)
assert strad["breakdown"]["apply"] == max(x["apply"] for x in ss), strad["breakdown"]
# apreport: the same devices, the straddle said, apsolve's iteration figure
rs = rep["stages"]
assert [r["devices"][0] for r in rs] == [0, 64, 128], [r["devices"][:1] for r in rs]
assert rs[1]["devices"] == list(range(64, 128)), rs[1]["devices"]
assert rs[1].get("straddles") == {"domains": 2, "priced_domains": 1}, rs[1]
assert "straddles" not in rs[0] and "straddles" not in rs[2], rs
assert rep["headline"]["iteration_seconds"] == strad["full_cost"], (rep["headline"], strad["full_cost"])
assert any("stage 1 straddles 2 NVLink domains" in x for x in rep["warnings"]), rep["warnings"]
try:
    import jsonschema
except ImportError:
    jsonschema = None
if jsonschema:
    jsonschema.validate(rep, json.load(open(sys.argv[4])))
PY

# cp's all-to-all across trays inside the domain
cat >"$w/mha.json" <<'EOF2'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
 "intermediate_size": 2816, "num_attention_heads": 16, "num_key_value_heads": 16,
 "num_hidden_layers": 2, "vocab_size": 32000, "max_position_embeddings": 8192,
 "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16"}
EOF2
"$approf" hardware show gb200-nvl72 >"$w/nvl72.spec" || fail "hardware show"
sed -e 's/^name = .*/name = gb200-flat/' -e 's/^scaleup_domain_gpus = .*/scaleup_domain_gpus = 0/' \
  "$w/nvl72.spec" >"$w/flat.spec"
for hw in gb200-nvl72 flat; do
  spec=$hw
  [ "$hw" = flat ] && spec="$w/flat.spec"
  "$approf" sweep --db "$w/cp-$hw.db" --quiet --hf-config "$w/mha.json" --layers 2 --seq-len 8192 \
    --cluster 4x4 --hardware "$spec" --batch 16 --micro-batches 1 --submesh-space manual:4x4 \
    --backend model >"$w/out" 2>&1 || fail_with "$w/out" "cp sweep on $hw"
  "$apsolve" --db "$w/cp-$hw.db" --parallel dp=2,tp=1,pp=1,cp=8,cp_comm=a2a+p2p \
    >"$w/cp-$hw.out" 2>"$w/cp-$hw.err" || fail_with "$w/cp-$hw.err" "apsolve cp=8 a2a+p2p on $hw"
done
sed -n 's/.*the a2a+p2p sends [0-9.]* MiB forward and [0-9.]* MiB backward (+\([0-9.e-]*\) s, .*/\1/p' \
  "$w/cp-gb200-nvl72.err" >"$w/fwd"
[ -s "$w/fwd" ] || fail_with "$w/cp-gb200-nvl72.err" "the cp notice"
"$py" - "$(cat "$w/fwd")" "$w/cp-gb200-nvl72.db" "$w/cp-flat.db" <<'PY' || fail "cp's all-to-all"
import json, sqlite3, sys
# Q of a GPU: 16 samples / (dp 2 x cp 8) x 8192 / 8 tokens x 1024 x 2 B =
# 2 MiB; K + V 4 MiB. Each all-to-all moves n x 2 MiB, (n-1)/n^2 of it on
# a GPU's link; 4 of them a layer, 2 layers.
n, mib = 8, 1048576.0
one = (n - 1) / n**2 * n * 2 * mib / (900e9 * 0.8) + (n - 1) * 3.4e-6
want = 2 * 4 * one
got = float(sys.argv[1])
assert abs(got - want) <= 1e-6 * want, (got, want)
for db, a in ((sys.argv[2], 8), (sys.argv[3], 4)):
    o = json.loads(sqlite3.connect(db).execute(
        "SELECT options FROM plan ORDER BY id DESC LIMIT 1").fetchone()[0])
    assert o["parallel"].get("cp_a2a") == a, (db, o["parallel"])
PY
echo "ok: a straddle priced over the network, apreport agrees; cp's all-to-all over 2 trays"
