#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# apsolve --parallel ...,zero=3,dp_shard=S[,raf=0|1] (docs/hsdp.md) on a
# small GPT (2 blocks, hidden 256, vocabulary 1000, sequence 128) swept on
# 1x8 H100, against hand counts: the ZeRO-3 parameters (every parameter
# the stored entry keeps whole over dp, read from its placements: all of
# them, 2,098,176 bf16 elements, 19 modules) held per GPU over S = 4
# instead of 8 (their shard, the gradient shard and Adam's 12 bytes an
# element), the 19 all-gathers of each phase and the 19 reduce-scatters
# over 4 GPUs instead of 8, the shard's all-reduce over the 2 replicas once
# per iteration, every collective priced by NCCL's tuning model as
# docs/nccl-tuning.md writes it (re-implemented here); raf=0 drops the
# backward's gathers and keeps the gathered parameters on the peak. Then
# the refusals, the stored plan (--plan re-prices it), apreport's
# headline, the launch files against the manifests, and the negative
# cases.
# Usage: hsdp.sh APPROF APSOLVE PYTHON SQLITE3 APREPORT MANIFEST_DIR CHECK_LAUNCH
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4 apreport=$5 manifests=$6 check=$7
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
db=$w/g.db
# --variants all but one memory level: the hand counts compare plans on one
# stored ZeRO-3 entry, and the memory levels' entries shard differently
# (level 1 splits the position table over dp), so that with three levels
# plain ZeRO-3 takes level 1 and HSDP level 0, and their difference is no
# longer HSDP's alone
"$approf" sweep --db "$db" --model gpt --num-layers 2 --hidden 256 --heads 4 --seq-len 128 \
  --vocab 1000 --cluster 1x8 --hardware h100-sxm --batch 16 --micro-batches 2 --layers 2 \
  --memory-levels 1 --recompute none,selective,full --zero 0,1,2,3 --quiet >"$w/out" 2>&1 ||
  fail_with "$w/out" "gpt sweep"

price() { # NAME KNOBS: the plan as JSON into $w/NAME.json, messages into $w/NAME.err
  "$apsolve" --db "$db" --no-store --format json --parallel "dp=8,tp=1,pp=1,zero=3$2" \
    >"$w/$1.json" 2>"$w/$1.err" || fail_with "$w/$1.err" "--parallel ...$2"
}
price z3 ""
price h4 ",dp_shard=4"
price r0 ",raf=0"
price h4r0 ",dp_shard=4,raf=0"
bw=$("$sq" "$db" "select intra_host_bandwidth * json_extract(capabilities, '\$.bus_efficiency') from hardware")
lat=$("$sq" "$db" "select intra_host_latency from hardware")
mbw=$("$sq" "$db" "select memory_bandwidth * json_extract(capabilities, '\$.memory_efficiency') from hardware")
# the stored placements of the ZeRO-3 entry the plan took (a placement set
# is stored once per logical mesh, batch option and memory level, under the
# lowest config index: costdb/placement_read.c), its parameters as name|spec
cfg=$("$py" -c 'import json, sys; s = json.load(open(sys.argv[1]))["plans"][0]["stages"][0]
print(s["submesh_index"], s["config_index"])' "$w/z3.json") || fail "the plan's entry"
set -- $cfg
"$sq" "$db" "select tensor_name || '|' || shape || '|' || sharding_spec from placement
  where start_layer = 0 and end_layer = 1 and submesh_index = $1 and role = 'param'
  and config_index = (select o.config_index from sweep_config c join sweep_config o
    on o.sweep_id = c.sweep_id and o.submesh_index = c.submesh_index
    and o.logical_a = c.logical_a and o.logical_b = c.logical_b
    and o.force_batch_dim is c.force_batch_dim and o.memory_level = c.memory_level
    where c.submesh_index = $1 and c.config_index = $2 order by o.config_index limit 1)
  order by tensor_index" >"$w/params" || fail "the stored placements"
"$py" - "$w" "$bw" "$lat" "$mbw" <<'EOF' || fail "HSDP pricing against the hand counts"
import json, sys
w, bw, lat, mbw = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
def stage(name):
    return json.load(open("%s/%s.json" % (w, name)))["plans"][0]["stages"][0]
z3, h4, r0, h4r0 = stage("z3"), stage("h4"), stage("r0"), stage("h4r0")
# the four plans on one stored entry (the deltas below are HSDP's alone)
assert len({(s["submesh_index"], s["config_index"]) for s in (z3, h4, r0, h4r0)}) == 1, \
    [(s["submesh_index"], s["config_index"]) for s in (z3, h4, r0, h4r0)]

# Which parameters ZeRO-3 shards: those the sharding keeps whole over dp
# (shard_apply_zero, profiler/sharding/program_zero.c); one split over dp by
# the sharding ILP is left alone. On this mesh (dp=8, tp=1) the ILP keeps
# every parameter whole: each stored ShardingSpec is NoSharding on every
# dimension, replicated over the 8 GPUs. (Under Alpa's ring pricing,
# before NCCL's model, the plans took an entry that split the position
# table over dp: 18 modules.) If the ILP ever splits one, the hand list
# below no longer holds: this check says so first.
stored = [l.rstrip("\n").split("|") for l in open(w + "/params")]
assert len(stored) == 36, stored
for name, shape, spec in stored:
    assert "Sharded" not in spec and spec.count("NoSharding()") == len(shape.split(",")) \
        and "Replicated(replicas=8)" in spec, (name, spec)
# The hand list: every parameter of the GPT (2 blocks, hidden 256, MLP 1024,
# vocabulary 1000, position table 1024 x 256 (GPT-2's n_positions), one
# module (operator holding parameters: one all-gather and one reduce-scatter
# a phase) each for the word embedding, the position embedding, per block
# ln_1, query, key, value, proj (256 x 256 + 256), ln_2, fc1, fc2, and ln_f
blk = [2 * 256, 65792, 65792, 65792, 65792, 2 * 256, 256 * 1024 + 1024, 1024 * 256 + 256]
mods = [1000 * 256, 1024 * 256] + blk + blk + [2 * 256]
assert len(mods) == 19 and sum(mods) == 2098176
# and the stored names agree, module by module (a module is a parameter's
# path without its last component)
names = []
for name, _, _ in stored:
    m = name.rsplit("/", 1)[0]
    if m not in names:
        names.append(m)
assert len(names) == 19 and names[1] == "embeddings/position" and names[8] == "h.0/fc1", names
P = 2 * sum(mods)  # bf16 bytes

# NCCL v2.21.5-1's tuning model as docs/nccl-tuning.md writes it (written
# here from that page, not from costdb/nccl_model.c): every group of this
# test stays in one host (nNodes = 1) on NVLink (the spec's ring/Simple
# latency, 3.4 us, is NVLink's), so LL128 is enabled and no step crosses a
# host. Time of (algorithm, protocol) = latency + bytes / algorithm
# bandwidth; NCCL runs the fastest pair.
US = 1e-6
base = {"tree": {"LL": 6.8, "LL128": 14.0, "Simple": 0.0},
        "ring": {"LL": 6.6, "LL128": 14.0, "Simple": 8.4}}
hw = {"tree": {"LL": 0.6, "LL128": 1.25, "Simple": 28.0},
      "ring": {"LL": 0.6, "LL128": 1.9, "Simple": lat / US}}  # NVLink; ring Simple: the spec's
assert abs(lat / US - 3.4) < abs(lat / US - 5.7)
corr = {"LL": [1.0] * 4 + [.9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0],
        "LL128": [1.0] * 4 + [1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0],
        "Simple": [.9] * 4 + [.9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9]}
def log2i(v):
    return int(v).bit_length() - 1 if v >= 1 else 0
def nccl(kind, nbytes, n):
    best = None
    for algo in ("tree", "ring"):
        if algo == "tree" and kind != "ar":
            continue  # all-gather and reduce-scatter: ring only
        for proto in ("LL", "LL128", "Simple"):
            if algo == "ring":
                nsteps = 2 * (n - 1) if kind == "ar" else n - 1
                latency = base[algo][proto] + nsteps * hw[algo][proto]
                bus = bw * {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}[proto]
                algbw = bus * n / nsteps
            else:  # one host: 2 x (ranks - 1) intra-host levels
                latency = base[algo][proto] + 2 * (n - 1) * hw[algo][proto]
                bus = bw * 0.92 * {"LL": 1 / 3.8, "LL128": 7 / 9, "Simple": 1.0}[proto]
                algbw = bus * 0.5
                i = log2i(nbytes / 64)
                if i < 23:
                    algbw *= corr[proto][i]
            t = latency * US + nbytes / algbw
            best = t if best is None else min(best, t)
    return best
# the tuner's own choice at a few sizes, as the page says it: small
# messages in LL, large ones on the Simple ring
assert abs(nccl("ag", 64, 8) - (6.6 + 7 * 0.6) * US - 64 / (bw * 0.5 * 8 / 7)) < 1e-15
assert abs(nccl("ag", 1 << 30, 8) - (8.4 + 7 * lat / US) * US - (1 << 30) / (bw * 8 / 7)) < 1e-12
def gathers(n):
    return sum(nccl("ag", 2 * m, n) for m in mods)
def scatters(n):
    return sum(nccl("rs", 2 * m, n) for m in mods)
x = 1 / 4 - 1 / 8
# memory: the shard of parameters and gradients on the backward's peak, and
# Adam's state (f32 master and two moments, 12 bytes an element) initially
want = round(2 * P * x) + round(sum(mods) * 12 * x)
assert h4["memory_needed"] - z3["memory_needed"] == want == 4196352, (h4["memory_needed"] - z3["memory_needed"], want)
# forward: the 19 gathers over 4 GPUs instead of 8; backward: the same and
# the reduce-scatters (the same model for both kinds: ring only, nsteps n-1)
d = gathers(4) - gathers(8)
e = scatters(4) - scatters(8)
assert d < 0 and abs(e - d) < 1e-15
assert abs(h4["fwd_cost"] - z3["fwd_cost"] - d) < 1e-12, (h4["fwd_cost"] - z3["fwd_cost"], d)
assert abs(h4["bwd_cost"] - z3["bwd_cost"] - d - e) < 1e-12, (h4["bwd_cost"] - z3["bwd_cost"], d + e)
# once per iteration: the 1/4 shard all-reduced over 2 replicas (4 GPUs
# apart, in the host), and Adam over 1/8 more elements (24 + 2 bytes each)
ar = nccl("ar", P / 4, 2)
adam = sum(mods) * x * 26 / mbw
assert abs(h4["apply_cost"] - z3["apply_cost"] - ar - adam) < 1e-12, (h4["apply_cost"] - z3["apply_cost"], ar + adam)
# raf=0: no backward gather, and the stage's gathered parameters (P) on
# the peak where the stored program holds the largest module (fc1, 526,336
# bytes) twice
assert r0["fwd_cost"] == z3["fwd_cost"]
assert abs(z3["bwd_cost"] - r0["bwd_cost"] - gathers(8)) < 1e-12, (z3["bwd_cost"] - r0["bwd_cost"], gathers(8))
kept = P - 2 * 2 * (256 * 1024 + 1024)
assert r0["memory_needed"] - z3["memory_needed"] == kept == 3143680, r0["memory_needed"] - z3["memory_needed"]
assert abs(h4["bwd_cost"] - h4r0["bwd_cost"] - gathers(4)) < 1e-12
assert h4r0["memory_needed"] - h4["memory_needed"] == kept
print("dp_shard=4: +%d bytes, gathers a phase %.6g s (over 8: %.6g s), forward %+.6g s, backward %+.6g s, "
      "all-reduce %.6g s, apply %+.6g s; raf=0: +%d bytes, backward -%.6g s"
      % (want, gathers(4), gathers(8), d, d + e, ar, ar + adam, kept, gathers(8)))
open(w + "/want", "w").write("%d bytes of sharded parameters, %d per GPU (ZeRO-3 over dp=8: %d); "
                             "%d all-gathers a phase over 4 GPUs" % (P, P // 4, P // 8, len(mods)))
EOF
grep -qF "HSDP shard 4 x replicate 2, stage 0 (layers 0-1): $(cat "$w/want")" "$w/h4.err" ||
  fail_with "$w/h4.err" "the dp_shard=4 figures: $(cat "$w/want")"
"$py" - "$w/z3.json" "$w/r0.json" <<'EOF' || fail "the raf=0 verdict"
import json, sys
z3, r0 = (json.load(open(f))["plans"][0]["frameworks"] for f in sys.argv[1:])
# ZeRO-3, HSDP and raf are priced with the serial schedule (an overlapping
# one is refused below), which neither FSDP2 nor DeepSpeed's stage 3 runs:
# no framework runs these plans as priced, and the verdict says why
# (solver/frameworks.c; docs/hsdp.md)
for v in (z3, r0):
    assert v["runs"] == [], v
    for f in ("deepspeed", "torchtitan"):
        assert "ZeRO-3 priced with the serial schedule" in v["why_not"][f], v
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
# Megatron-LM: Megatron-FSDP with 2 optimizer instances (the replicas of
# 4-GPU shard groups); priced with the serial schedule, so not as priced
meg=$w/f/h4_megatron.args
for l in --use-megatron-fsdp '--data-parallel-sharding-strategy optim_grads_params' \
  '--num-distributed-optimizer-instances 2' '--ckpt-format fsdp_dtensor'; do
  grep -qx -- "$l" "$meg" || fail_with "$meg" "Megatron-FSDP: no $l"
done
grep -q "ZeRO-3 priced with the serial schedule: Megatron-FSDP" "$meg" ||
  fail_with "$meg" "Megatron's note on the schedule"
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
[ "$(chk megatron-lm-core_v0.19.0.json "$meg")" = 3 ] && ! grep -q '^error' "$w/chk" ||
  fail_with "$w/chk" "Megatron-LM file"
sed 's/^--num-distributed-optimizer-instances 2$/--num-distributed-optimizer-instances 4/' "$meg" >"$w/bad.args"
[ "$(chk megatron-lm-core_v0.19.0.json "$w/bad.args")" = 1 ] && grep -q "megatron-fsdp-hsdp" "$w/chk" ||
  fail_with "$w/chk" "4 optimizer instances of an HSDP 4 x 2 plan must fail"
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
grep -q "Megatron-FSDP has no reshard_after_forward (raf=0)" "$w/f/r0_megatron.args" ||
  fail_with "$w/f/r0_megatron.args" "Megatron's raf=0 note"
[ "$(chk torchtitan-main-b5bcd76.json "$w/f/r0_torchtitan.toml")" = 0 ] ||
  fail_with "$w/chk" "torchtitan main raf=0"
echo "ok"
