#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --parallel ...,zero=3,dp_shard=S[,raf=0|1] (docs/hsdp.md) on a
# small GPT (2 blocks, hidden 256, vocabulary 1000, sequence 128) swept on
# 1x8 H100, against hand counts: the ZeRO-3 parameters (every parameter
# the sharding keeps whole over dp: 1,836,032 bf16 elements, 18 modules)
# held per GPU over S = 4 instead of 8 (their shard, the gradient shard
# and Adam's 12 bytes an element), the 18 all-gathers of each phase and
# the 18 reduce-scatters over 4 GPUs instead of 8, the shard's all-reduce
# over the 2 replicas once per iteration; raf=0 drops the backward's
# gathers and keeps the gathered parameters on the peak. Then the
# refusals, the stored plan (--plan re-prices it), apreport's headline,
# the launch files against the manifests, and the negative cases.
# Usage: hsdp.sh APPROF APSOLVE PYTHON SQLITE3 APREPORT MANIFEST_DIR CHECK_LAUNCH
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4 apreport=$5 manifests=$6 check=$7
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/g.db
"$approf" sweep --db "$db" --model gpt --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x8 --hardware h100-sxm --batch 16 --micro-batches 2 --layers 2 \
  --variants all --quiet >"$w/out" 2>&1 || fail_with "$w/out" "gpt sweep"

price() { # NAME KNOBS: the plan as JSON into $w/NAME.json, messages into $w/NAME.err
  "$apsolve" --db "$db" --no-store --format json --parallel "dp=8,tp=1,pp=1,zero=3$2" \
    >"$w/$1.json" 2>"$w/$1.err" || fail_with "$w/$1.err" "--parallel ...$2"
}
price z3 ""
price h4 ",dp_shard=4"
price r0 ",raf=0"
price h4r0 ",dp_shard=4,raf=0"
grep -q "HSDP shard 4 x replicate 2, stage 0 (layers 0-1): 3672064 bytes of sharded parameters, 918016 per GPU (ZeRO-3 over dp=8: 459008); 18 all-gathers a phase over 4 GPUs" "$w/h4.err" ||
  fail_with "$w/h4.err" "the dp_shard=4 figures"
bw=$("$sq" "$db" "select intra_host_bandwidth from hardware")
lat=$("$sq" "$db" "select intra_host_latency from hardware")
mbw=$("$sq" "$db" "select memory_bandwidth from hardware")
"$py" - "$w" "$bw" "$lat" "$mbw" <<'EOF' || fail "HSDP pricing against the hand counts"
import json, sys
w, bw, lat, mbw = sys.argv[1], float(sys.argv[2]) * 0.8, float(sys.argv[3]), float(sys.argv[4]) * 0.85
def stage(name):
    return json.load(open("%s/%s.json" % (w, name)))["plans"][0]["stages"][0]
z3, h4, r0, h4r0 = stage("z3"), stage("h4"), stage("r0"), stage("h4r0")
# the parameters the stored ZeRO-3 entry shards (the position embedding is
# split over dp by the sharding and left alone): the word embedding, per
# block ln_1, query, key, value, proj (256 x 256 + 256), ln_2, fc1, fc2, and
# ln_f; one module (one all-gather, one reduce-scatter) each
blk = [2 * 256, 65792, 65792, 65792, 65792, 2 * 256, 256 * 1024 + 1024, 1024 * 256 + 256]
mods = [1000 * 256] + blk + blk + [2 * 256]
assert len(mods) == 18 and sum(mods) == 1836032
P = 2 * sum(mods)  # bf16 bytes
def ring(kind, nbytes, n):  # Alpa's ring on NVLink (docs/alpa-semantics.md)
    steps = 2 * (n - 1) if kind == "ar" else n - 1
    return steps / n * nbytes / bw + steps * lat
def gathers(n):
    return sum(ring("ag", 2 * m, n) for m in mods)
x = 1 / 4 - 1 / 8
# memory: the shard of parameters and gradients on the backward's peak, and
# Adam's state (f32 master and two moments, 12 bytes an element) initially
want = round(2 * P * x) + round(sum(mods) * 12 * x)
assert h4["memory_needed"] - z3["memory_needed"] == want == 3672064, (h4["memory_needed"] - z3["memory_needed"], want)
# forward: the 18 gathers over 4 GPUs instead of 8; backward: the same and the
# reduce-scatters (the same ring terms)
d = gathers(4) - gathers(8)
assert abs(h4["fwd_cost"] - z3["fwd_cost"] - d) < 1e-12, (h4["fwd_cost"] - z3["fwd_cost"], d)
assert abs(h4["bwd_cost"] - z3["bwd_cost"] - 2 * d) < 1e-12, (h4["bwd_cost"] - z3["bwd_cost"], 2 * d)
# once per iteration: the 1/4 shard all-reduced over 2 replicas (4 GPUs
# apart, on NVLink), and Adam over 1/8 more elements (24 + 2 bytes each)
ar = ring("ar", P / 4, 2)
adam = sum(mods) * x * 26 / mbw
assert abs(h4["apply_cost"] - z3["apply_cost"] - ar - adam) < 1e-12, (h4["apply_cost"] - z3["apply_cost"], ar + adam)
# raf=0: no backward gather, and the stage's gathered parameters (P) on
# the peak where the stored program holds the largest module (fc1, 526,336
# bytes) twice
assert r0["fwd_cost"] == z3["fwd_cost"]
assert abs(z3["bwd_cost"] - r0["bwd_cost"] - gathers(8)) < 1e-12, (z3["bwd_cost"] - r0["bwd_cost"], gathers(8))
kept = P - 2 * 2 * (256 * 1024 + 1024)
assert r0["memory_needed"] - z3["memory_needed"] == kept == 2619392, r0["memory_needed"] - z3["memory_needed"]
assert abs(h4["bwd_cost"] - h4r0["bwd_cost"] - gathers(4)) < 1e-12
assert h4r0["memory_needed"] - h4["memory_needed"] == kept
print("dp_shard=4: +%d bytes, forward %+.6g s, backward %+.6g s, apply %+.6g s; raf=0: +%d bytes, backward -%.6g s"
      % (want, d, 2 * d, ar + adam, kept, gathers(8)))
EOF
"$py" - "$w/z3.json" "$w/r0.json" <<'EOF' || fail "the raf=0 verdict"
import json, sys
z3, r0 = (json.load(open(f))["plans"][0]["frameworks"] for f in sys.argv[1:])
assert "deepspeed" in z3["runs"] and "torchtitan" in z3["runs"], z3
assert r0["runs"] == ["torchtitan"] and "reshard_after_forward" in r0["why_not"]["deepspeed"], r0
EOF

# refusals: exit 2, a message naming the rule, nothing stored
refuse() { # KNOBS TEXT
  "$apsolve" --db "$db" --parallel "$1" >"$w/out" 2>"$w/err"
  expect_rc 2 $? "$w/err" "--parallel $1"
  grep -q "$2" "$w/err" || fail_with "$w/err" "--parallel $1: the message"
}
refuse dp=8,tp=1,pp=1,dp_shard=4 "dp_shard=4 shards ZeRO-3's parameters.*it needs zero=3, not zero=0"
refuse dp=8,tp=1,pp=1,zero=2,raf=0 "raf is FSDP2's reshard_after_forward.*it needs zero=3, not zero=2"
refuse dp=8,tp=1,pp=1,zero=3,dp_shard=3 "dp_shard=3 does not divide dp=8"
refuse dp=8,tp=1,pp=1,zero=3,dp_shard=1 "dp_shard=1 shards nothing"
refuse dp=4,tp=1,pp=1,zero=3,dp_shard=2,cp=2 "not priced with context parallelism"
refuse dp=8,tp=1,pp=1,zero=3,raf=2 "raf must be an integer in 0..1"
"$apsolve" --db "$db" --no-store --inference --parallel dp=8,tp=1,pp=1,zero=3,dp_shard=4 \
  >"$w/out" 2>"$w/err"
expect_rc 2 $? "$w/err" "dp_shard with --inference"
[ "$("$sq" "$db" "select count(*) from plan")" = 0 ] || fail "a refused layout stored a plan"
# a sweep that prices ZeRO-3 with an overlapping schedule: its exposed
# collectives cannot be re-priced (exit 2, nothing stored)
"$approf" sweep --db "$w/f2.db" --model gpt --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x8 --hardware h100-sxm --batch 16 --micro-batches 2 --layers 2 \
  --zero 3 --zero3-schedule fsdp2 --quiet >"$w/out" 2>&1 || fail_with "$w/out" "fsdp2 sweep"
"$apsolve" --db "$w/f2.db" --parallel dp=8,tp=1,pp=1,zero=3,dp_shard=4 >"$w/out" 2>"$w/err"
expect_rc 2 $? "$w/err" "dp_shard on an fsdp2-schedule sweep"
grep -q "prices ZeRO-3 with the fsdp2 overlap schedule" "$w/err" || fail_with "$w/err" "fsdp2 message"
[ "$("$sq" "$w/f2.db" "select count(*) from plan")" = 0 ] || fail "the fsdp2 refusal stored a plan"

# the stored plan: its options, --plan re-prices it the same, apreport's
# headline and launch files
"$apsolve" --db "$db" --parallel dp=8,tp=1,pp=1,zero=3,dp_shard=4 >"$w/out" 2>"$w/err" ||
  fail_with "$w/err" "store dp_shard=4"
id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$w/out" | head -1)
"$sq" "$db" "select options from plan where id=$id" |
  grep -q '"zero": 3,.*"dp_shard": 4, "dp_replicate": 2, "raf": 1}' ||
  fail "the stored options: $("$sq" "$db" "select options from plan where id=$id")"
t1=$(sed -n 's/^Estimated iteration latency: \([^ ]*\) s.*/\1/p' "$w/out" | head -1)
"$apsolve" --db "$db" --plan "$id" >"$w/out2" 2>"$w/err" || fail_with "$w/err" "--plan $id"
t2=$(sed -n 's/^Estimated iteration latency: \([^ ]*\) s.*/\1/p' "$w/out2" | head -1)
[ -n "$t1" ] && [ "$t1" = "$t2" ] || fail "--plan $id: $t2 s, stored $t1 s"
mkdir -p "$w/f"
"$apreport" --db "$db" --plan "$id" --name h4 --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport"
grep -q "HSDP shard 4 x replicate 2" "$w/f/report.html" || fail "apreport's headline"
tt=$w/f/h4_torchtitan.toml
grep -q '^data_parallel_replicate_degree = 2$' "$tt" && grep -q '^data_parallel_shard_degree = 4$' "$tt" &&
  grep -q '^fsdp_reshard_after_forward = "always"$' "$tt" || fail_with "$tt" "torchtitan's degrees"
grep -q '"mics_shard_size": 4' "$w/f/h4_deepspeed.json" || fail_with "$w/f/h4_deepspeed.json" "MiCS"
grep -q "HSDP (dp_shard 4) and raf=0 are not written" "$w/f/h4_megatron.args" ||
  fail_with "$w/f/h4_megatron.args" "Megatron's note"
if ! "$py" -c 'import tomllib' 2>/dev/null; then
  echo "tomllib missing (Python < 3.11): manifest checks skipped"
  exit 0
fi
# the files pass their manifests (torchtitan knows no gpt flavour: unknowns
# only, exit 3), and fail them with a degree removed or a rule broken
chk() { "$py" "$check" "$manifests/$1" "$2" >"$w/chk" 2>&1; echo $?; }
[ "$(chk torchtitan-v0.2.2.json "$tt")" = 3 ] || fail_with "$w/chk" "torchtitan file"
[ "$(chk torchtitan-main-b5bcd76.json "$tt")" = 0 ] || fail_with "$w/chk" "torchtitan main lines"
[ "$(chk deepspeed-v0.16.4.json "$w/f/h4_deepspeed.json")" = 0 ] || fail_with "$w/chk" "DeepSpeed file"
grep -v '^data_parallel_replicate_degree' "$tt" >"$w/bad.toml"
[ "$(chk torchtitan-v0.2.2.json "$w/bad.toml")" = 1 ] && grep -q "world-size" "$w/chk" ||
  fail_with "$w/chk" "torchtitan without data_parallel_replicate_degree must fail"
grep -v 'main: --parallelism.data_parallel_replicate_degree' "$tt" >"$w/bad.toml"
[ "$(chk torchtitan-main-b5bcd76.json "$w/bad.toml")" = 1 ] ||
  fail_with "$w/chk" "torchtitan main without data_parallel_replicate_degree must fail"
sed 's/"mics_shard_size": 4/"mics_shard_size": 3/' "$w/f/h4_deepspeed.json" >"$w/bad.json"
[ "$(chk deepspeed-v0.16.4.json "$w/bad.json")" = 1 ] && grep -q "mics-divides" "$w/chk" ||
  fail_with "$w/chk" "mics_shard_size 3 on 8 GPUs must fail"
sed 's/"stage": 3, "stage3_max_reuse_distance": 1000000000, /"stage": 2, /' \
  "$w/f/h4_deepspeed.json" >"$w/bad.json"
[ "$(chk deepspeed-v0.16.4.json "$w/bad.json")" = 1 ] && grep -q "mics-stage3" "$w/chk" ||
  fail_with "$w/chk" "MiCS with stage 2 must fail"
# raf=0: torchtitan "never"; DeepSpeed's file says it cannot
"$apsolve" --db "$db" --parallel dp=8,tp=1,pp=1,zero=3,dp_shard=4,raf=0 >"$w/out" 2>"$w/err" ||
  fail_with "$w/err" "store raf=0"
id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$w/out" | head -1)
"$apreport" --db "$db" --plan "$id" --name r0 --out "$w/f" --quiet 2>"$w/err" ||
  fail_with "$w/err" "apreport raf=0"
grep -q '^fsdp_reshard_after_forward = "never"$' "$w/f/r0_torchtitan.toml" ||
  fail_with "$w/f/r0_torchtitan.toml" "torchtitan raf=0"
grep -q "raf=0 (parameters kept gathered from forward to backward)" "$w/f/report.html" ||
  fail "apreport's headline of raf=0"
grep -q "no reshard_after_forward (raf=0)" "$w/f/r0_deepspeed.json" ||
  fail_with "$w/f/r0_deepspeed.json" "DeepSpeed's raf=0 note"
[ "$(chk torchtitan-main-b5bcd76.json "$w/f/r0_torchtitan.toml")" = 0 ] ||
  fail_with "$w/chk" "torchtitan main raf=0"
echo "ok"
