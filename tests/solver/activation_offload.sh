#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --parallel ...,offload=N (solver/activation_offload.c,
# docs/variants.md "Activation offload") on a small GPT (4 blocks, one an
# approf layer, hidden 256, sequence 128) swept on 1x2 H100 whose spec
# gives a slow host link (2 GB/s one way, so that the copies outlast the
# layers' compute), against hand counts from the stored entry and the
# model's per-layer record: the bytes the first N layers' saved
# activations free (the entry's intermediate less the most that L - N
# consecutive layers hold), each copy hidden under the next layer's
# forward (backward) and the rest exposed, every copy exposed at N = L - 1.
# Then a plan that only offload makes fit (--memory-budget between the
# two needs), the refusals (Megatron-Core's pp and recomputation rules,
# N >= L, a spec without a host link), and the launch files: Megatron's
# --cpu-offloading-num-layers passing its manifest (and failing it with
# pp 2, recomputation, or N >= the layers), DeepSpeed's and torchtitan's
# "cannot" notes.
# Usage: activation_offload.sh APPROF APSOLVE PYTHON SQLITE3 APREPORT MANIFEST_DIR CHECK_LAUNCH
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4 apreport=$5 manifests=$6 check=$7
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
"$approf" hardware show h100-sxm >"$w/h100.spec" || fail "hardware show"
sed -e 's/^name *=.*/name = h100-slow-host/' \
    -e 's/^host_link_bandwidth_gbs *=.*/host_link_bandwidth_gbs = 2/' "$w/h100.spec" >"$w/slow.spec"
grep -q '^host_link_bandwidth_gbs = 2$' "$w/slow.spec" || fail "the spec has no host link field"
sweep() { # DB SPEC
  "$approf" sweep --db "$1" --model gpt --num-layers 4 --hidden 256 --heads 4 --seq-len 128 \
    --vocab 1000 --cluster 1x2 --hardware "$2" --batch 8 --micro-batches 2 --layers 4 \
    --memory-levels 1 --recompute none,full --quiet >"$w/out" 2>&1 || fail_with "$w/out" "sweep"
}
db=$w/g.db
sweep "$db" "$w/slow.spec"

price() { # NAME KNOBS [OPTIONS]: JSON into $w/NAME.json, messages into $w/NAME.err
  n=$1 k=$2
  shift 2
  "$apsolve" --db "$db" --no-store --format json --parallel "dp=2,tp=1,pp=1$k" "$@" \
    >"$w/$n.json" 2>"$w/$n.err" || fail_with "$w/$n.err" "--parallel ...$k"
}
price base ""
price o2 ",offload=2"
price o3 ",offload=3"
"$sq" "$db" "select json_extract(capabilities, '\$.host_link_bandwidth') from hardware" \
  >"$w/bw" || fail "the hardware row"
"$sq" "$db" "select layer_index, activation_bytes, fwd_flops, bwd_flops from model_layer
  order by layer_index" >"$w/layers" || fail "the model's layers"
cfg=$("$py" -c 'import json, sys; s = json.load(open(sys.argv[1]))["plans"][0]["stages"][0]
print(s["submesh_index"], s["config_index"])' "$w/base.json") || fail "the plan's entry"
set -- $cfg
"$sq" "$db" "select max(c.intermediate_size) from stage_entry e join stage_cost c
  on c.sweep_id = e.sweep_id and c.cost_id = e.cost_id where e.start_layer = 0
  and e.end_layer = 3 and e.submesh_index = $1 and e.config_index = $2" >"$w/inter" ||
  fail "the entry's intermediate"
"$py" - "$w" <<'EOF' || fail "offload pricing against the hand counts"
import json, sys
w = sys.argv[1]
bw = float(open(w + "/bw").read())
assert bw == 2e9, bw
I = float(open(w + "/inter").read())
layers = [[float(x) for x in l.split("|")[1:]] for l in open(w + "/layers")]
assert len(layers) == 4, layers
def plan(n):
    return json.load(open("%s/%s.json" % (w, n)))["plans"][0]
base, o2, o3 = plan("base"), plan("o2"), plan("o3")
b0 = base["stages"][0]
F, B = b0["fwd_cost"], b0["bwd_cost"]
act = sum(l[0] for l in layers)
ff = sum(l[1] for l in layers)
bf = sum(l[2] for l in layers)
a = [I * l[0] / act for l in layers]       # each layer's share of the saved bytes
f = [F * l[1] / ff for l in layers]        # and of the forward, the backward
b = [B * l[2] / bf for l in layers]
L = 4
def expect(n):
    # TE v2.18: at most L - N consecutive layers' activations on the device
    win = max(sum(a[j:j + L - n]) for j in range(n + 1))
    t = [a[k] / bw for k in range(n)]
    if n < L - 1:   # each copy beside the next layer's compute, the rest exposed
        ef = sum(max(0.0, t[k] - f[k + 1]) for k in range(n))
        eb = sum(max(0.0, t[k] - b[k + 1]) for k in range(n))
    else:           # N = L - 1: no compute between copy and release / reload and use
        ef = eb = sum(t)
    return I - win, sum(a[:n]), ef, eb
def close(x, y, what):
    assert abs(x - y) <= 1e-9 * max(1.0, abs(y)), (what, x, y)
for p, n in ((o2, 2), (o3, 3)):
    freed, saved, ef, eb = expect(n)
    s = p["stages"][0]
    o = p["offload"]
    assert o["layers"] == n, o
    assert abs(o["freed_bytes"] - freed) <= 1, (n, o, freed)
    close(o["saved_bytes"], saved, "saved")
    close(o["exposed_seconds"], ef + eb, "exposed")
    close(s["fwd_cost"], F + ef, "forward")
    close(s["bwd_cost"], B + eb, "backward")
    # pp = 1: the need is the peak (one micro-batch's saved activations) + initial
    assert abs((b0["memory_needed"] - s["memory_needed"]) - freed) <= 1, (n, s, freed)
    assert ef > 0 and eb > 0, (n, ef, eb)
    assert p["frameworks"]["runs"] == ["megatron"], p["frameworks"]
# N = 2 hides part of each copy (the next layer's compute), N = 3 none
assert expect(2)[2] < sum(a[k] / bw for k in range(2)), expect(2)
print("offload: freed %d / %d bytes, exposed %.6g s (N=2)" % (expect(2)[0], expect(3)[0],
                                                               expect(2)[2] + expect(2)[3]))
EOF
grep -q "activation offload, stage 0 (layers 0-3): the first 2 of 4 layers" "$w/o2.err" ||
  fail_with "$w/o2.err" "the per-stage message"

# offload is what makes the plan fit: a budget between the two needs
budget=$("$py" -c 'import json, sys
n = [json.load(open(f))["plans"][0]["stages"][0]["memory_needed"] for f in sys.argv[1:]]
print((n[0] + n[1]) // 2)' "$w/base.json" "$w/o2.json") || fail "budget"
"$apsolve" --db "$db" --no-store --parallel dp=2,tp=1,pp=1 --memory-budget "$budget" \
  >"$w/out" 2>"$w/err"
expect_rc 3 $? "$w/err" "without offload the plan does not fit $budget bytes"
price fit ",offload=2" --memory-budget "$budget"
"$py" -c 'import json, sys; assert json.load(open(sys.argv[1]))["plans"][0]["feasible"]' \
  "$w/fit.json" || fail_with "$w/fit.json" "offload=2 fits $budget bytes"

# refusals: Megatron-Core's TransformerConfig rules, TE's last layer, no host link
refuse() { # KNOBS TEXT [DB]
  "$apsolve" --db "${3:-$db}" --no-store --parallel "$1" >"$w/out" 2>"$w/err"
  expect_rc 2 $? "$w/err" "$1"
  grep -q "$2" "$w/err" || fail_with "$w/err" "$1: the reason"
}
refuse dp=1,tp=1,pp=2,offload=1 "no support for Pipeline parallelism with CPU offloading"
refuse dp=2,tp=1,pp=1,recompute=full,offload=1 "does not work when activation recomputation"
refuse dp=2,tp=1,pp=1,offload=4 "must be below the stage's 4 layers"
refuse dp=2,tp=1,pp=1,offload=0 "offload must be an integer"
sed -e 's/^name *=.*/name = h100-no-host-link/' \
    -e 's/^host_link_bandwidth_gbs *=.*/host_link_bandwidth_gbs = 0/' "$w/h100.spec" >"$w/none.spec"
sweep "$w/h.db" "$w/none.spec"
refuse dp=2,tp=1,pp=1,offload=1 "no host link bandwidth" "$w/h.db"

# the stored plan and its launch files
"$apsolve" --db "$db" --parallel dp=2,tp=1,pp=1,offload=2 >"$w/out" 2>"$w/err" ||
  fail_with "$w/err" "store offload=2"
id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$w/out" | head -1)
[ -n "$id" ] || fail_with "$w/out" "no plan id"
"$apsolve" --db "$db" --no-store --format json --plan "$id" >"$w/re.json" 2>"$w/err" ||
  fail_with "$w/err" "--plan $id"
"$py" -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
a, b = (d["plans"][0] if "plans" in d else d for d in (a, b))
assert a["offload"] == b["offload"] and a["cost"] == b["cost"], (a["offload"], b["offload"])' \
  "$w/o2.json" "$w/re.json" || fail "--plan re-prices the stored offload plan alike"
"$apreport" --db "$db" --plan "$id" --name o2 --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
mf=$w/f/o2_megatron.args
grep -q '^--cpu-offloading-num-layers 2$' "$mf" || fail_with "$mf" "Megatron's offload flag"
grep -q '^# layout: .*recompute none, activation offload of the first 2 transformer layers, ZeRO' "$mf" ||
  fail_with "$mf" "the layout line's offload"
grep -q "DeepSpeed cannot offload saved activations" "$w/f/o2_deepspeed.json" ||
  fail_with "$w/f/o2_deepspeed.json" "DeepSpeed's note"
grep -q "torchtitan has no activation offload" "$w/f/o2_torchtitan.toml" ||
  fail_with "$w/f/o2_torchtitan.toml" "torchtitan's note"
# apreport shows the offload as apsolve priced it (docs/reports.md, "The
# headline"): report.json's figures are apsolve's JSON's, the stage's saved
# activations less the freed bytes, the schema holds, the HTML table and
# the summary give the same figures
"$py" - "$w/f/report.json" "$w/o2.json" "$w/inter" \
  "$(dirname "$0")/../../schemas/report.schema.json" "$w/figs" <<'EOF' ||
import json, sys
r, a = (json.load(open(f)) for f in sys.argv[1:3])
a = a["plans"][0]["offload"]
assert r["plan"]["offload"] == 2, r["plan"]
o = r["stages"][0]["offload"]
for k in ("layers", "freed_bytes", "saved_bytes", "host_bandwidth", "exposed_seconds"):
    assert o[k] == a[k], (k, o[k], a[k])
assert o["stage_layers"] == 4 and o["host_bandwidth"] == 2e9, o
assert o["d2h_seconds"] == o["h2d_seconds"] == o["saved_bytes"] / 2e9, o
assert o["exposed_forward_seconds"] > 0 and o["exposed_backward_seconds"] > 0, o
assert abs(o["exposed_forward_seconds"] + o["exposed_backward_seconds"]
           - o["exposed_seconds"]) <= 1e-15, o
inter = int(open(sys.argv[3]).read())
assert r["stages"][0]["intermediate_size"] == inter - o["freed_bytes"], (r["stages"][0], inter)
try:
    import jsonschema
except ImportError:
    print("jsonschema missing: schema check skipped")
else:
    jsonschema.validate(r, json.load(open(sys.argv[4])))
open(sys.argv[5], "w").write("%.0f %d %.6g %.6g %.6g %.6g\n" % (
    o["saved_bytes"], o["freed_bytes"], o["host_bandwidth"] / 1e9, o["d2h_seconds"],
    o["exposed_forward_seconds"], o["exposed_backward_seconds"]))
EOF
  fail "report.json's offload is not apsolve's"
set -- $(cat "$w/figs")
h=$w/f/report.html
grep -q "<h3>Activation offload (offload 2)</h3>" "$h" &&
  grep -q "<tr><td>0</td><td>the first 2 of 4</td><td class=\"n\">$1 bytes</td><td class=\"n\">$2 bytes</td><td class=\"n\">$3 GB/s</td><td class=\"n\">$4 s</td><td class=\"n\">$5 s</td><td class=\"n\">$6 s</td></tr>" "$h" &&
  grep -q "offload 2 (the first 2 layers&#39; saved activations in host memory)" "$h" ||
  fail_with "$h" "report.html's offload"
"$apreport" --db "$db" --plan "$id" --name o2 --out "$w/f" >"$w/sum" 2>"$w/err" ||
  fail_with "$w/err" "apreport's summary"
grep -qF "activation offload, stage 0: the first 2 of 4 layers' saved activations, $1 bytes a micro-batch each way at $3 GB/s ($4 s each way); $2 bytes freed; copies exposed $5 s forward, $6 s backward" "$w/sum" ||
  fail_with "$w/sum" "the summary's offload"
grep -q -- "--cpu-offloading-num-layers 2" "$w/f/o2_plan.py" ||
  fail_with "$w/f/o2_plan.py" "the plan code's Megatron-LM comment"
if ! "$py" -c 'import tomllib' 2>/dev/null; then
  echo "tomllib missing (Python < 3.11): manifest checks skipped"
  exit 0
fi
# the model's heads are unknown to the database (exit 3: unknowns only);
# a broken offload rule fails it (exit 1)
chk() { "$py" "$check" "$manifests/megatron-lm-core_v0.19.0.json" "$1" >"$w/chk" 2>&1; echo $?; }
[ "$(chk "$mf")" = 3 ] && ! grep -q "cpu-offloading" "$w/chk" || fail_with "$w/chk" "Megatron file"
bad() { # SED RULE
  sed "$1" "$mf" >"$w/bad.args"
  [ "$(chk "$w/bad.args")" = 1 ] && grep -q "$2" "$w/chk" || fail_with "$w/chk" "$2 must fail"
}
bad 's/^--pipeline-model-parallel-size 1$/--pipeline-model-parallel-size 2/' cpu-offloading-pp
bad 's/^--cpu-offloading-num-layers 2$/--cpu-offloading-num-layers 2\n--recompute-granularity selective/' \
  cpu-offloading-recompute
bad 's/^--cpu-offloading-num-layers 2$/--cpu-offloading-num-layers 4/' cpu-offloading-layers
echo "activation offload: ok"
