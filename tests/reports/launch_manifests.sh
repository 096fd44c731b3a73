#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every launch file of a set of plans against the framework manifests
# (reports/manifests/, checked by check_launch.py): dense Llama plans
# (ZeRO-0..3, full recomputation, the interleaved schedule, the auto plan,
# 3 blocks on 2 stages),
# the full Llama-3-8B (a torchtitan flavour), Mixtral (MoE: expert and
# expert tensor parallelism, sequence parallelism, a capacity factor), a GPT in fp16 on 2 x 8
# V100s (more than one host), one in bf16 with the blocks named
# h.N/query, and context parallelism (the ring on 2 stages; a2a+p2p with
# the cp group across 2 hosts). Each Megatron-LM, DeepSpeed and torchtitan file must pass;
# the only unknown a file may report is torchtitan's [model] flavour of a
# model torchtitan has none of. The torchtitan files' '# main:' lines (the
# layout for torchtitan main's Python configs) are checked against main's
# manifest. Then the negative cases: a file with a
# required flag removed, or a rule broken, must fail the check.
#   launch_manifests.sh APPROF APSOLVE APREPORT PYTHON MANIFEST_DIR
set -eu
approf=$1 apsolve=$2 apreport=$3 python=$4 manifests=$5
check=$(dirname "$0")/check_launch.py
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"
meg=$manifests/megatron-lm-core_v0.19.0.json
ds=$manifests/deepspeed-v0.16.4.json
tt=$manifests/torchtitan-v0.2.2.json
ttmain=$manifests/torchtitan-main-b5bcd76.json
if ! "$python" -c 'import tomllib' 2>/dev/null; then
  echo "tomllib missing (Python < 3.11): skipped"
  exit 77
fi

sweep() {
  db=$1
  shift
  "$approf" sweep --micro-batches 16 "$@" --backend model --db "$dir/$db" --quiet >/dev/null 2>"$dir/err" ||
    fail_with "$dir/err" "approf sweep $*"
}
# plan DB ARGS...: runs apsolve, sets $id to the first plan it stored
plan() {
  db=$1
  shift
  "$apsolve" --db "$dir/$db" "$@" >"$dir/out" 2>"$dir/err" || fail_with "$dir/err" "apsolve $*"
  id=$(sed -n 's/^Stored as plan \([0-9]*\)$/\1/p' "$dir/out" | head -1)
  [ -n "$id" ] || fail_with "$dir/out" "apsolve $*: no plan stored"
}
# report NAME DB [apreport options]: the three launch files of plan $id
report() {
  name=$1 db=$2
  shift 2
  "$apreport" --db "$dir/$db" --plan "$id" --name "$name" --out "$dir/f" --quiet "$@" \
    2>"$dir/err" || fail_with "$dir/err" "apreport $name"
  echo "$name" >>"$dir/names"
}

mkdir -p "$dir/f"
: >"$dir/names"
sweep l.db --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries --manual-layers \
  --cluster 1x8 --dtype bf16 --variants all --hardware a100-40g
plan l.db --parallel dp=2,tp=2,pp=2,sp=1,zero=1,recompute=full; report zero1 l.db
plan l.db --parallel dp=2,tp=2,pp=2,zero=0; report zero0 l.db
plan l.db --parallel dp=2,tp=2,pp=2,zero=2,recompute=full; report zero2 l.db
plan l.db --parallel dp=2,tp=4,pp=1,zero=3; report zero3 l.db
plan l.db --parallel dp=2,tp=2,pp=2,vpp=2,zero=1; report vpp2 l.db
plan l.db --parallel dp=2,tp=2,pp=2,zero=1; report il l.db --schedule interleaved --virtual-stages 2
plan l.db; report auto l.db
# ZeRO-3 priced with FSDP2's schedule: Megatron-FSDP runs it as priced
# (docs/export-megatron.md, "ZeRO-2, ZeRO-3 and HSDP: Megatron-FSDP"; the
# memory levels that split every weight matrix over tp, as Megatron does)
sweep z.db --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries --manual-layers \
  --cluster 1x8 --dtype bf16 --zero 3 --zero3-schedule fsdp2 --memory-levels 3 --hardware a100-40g
plan z.db --parallel dp=2,tp=2,pp=2,zero=3; report z3fsdp2 z.db
sweep u.db --model llama --preset llama-3-8b --num-layers 3 --manual-boundaries --manual-layers \
  --cluster 1x8 --dtype bf16 --variants all --hardware a100-40g
plan u.db --parallel dp=2,tp=2,pp=2,zero=1; report uneven u.db
sweep f.db --model llama --preset llama-3-8b --layers 4 --cluster 1x8 --dtype bf16 \
  --variants all --hardware a100-80g
plan f.db --parallel dp=2,tp=2,pp=2,zero=1,recompute=full; report full8b f.db
sweep m.db --model mixtral --num-layers 4 --manual-boundaries --manual-layers --cluster 1x8 \
  --variants all --hardware a100-40g
plan m.db --parallel dp=2,tp=2,pp=2,zero=1,recompute=full; report moe3d m.db
plan m.db; report moeauto m.db
# expert parallelism as the plan gives it (docs/expert-parallel.md): the files
# take ep and etp from the stored plan, not from the placements
plan m.db --parallel dp=2,tp=2,pp=2,zero=1,recompute=full,ep=2,etp=1; report moeep m.db
# the MoE all-to-all overlap (--overlap-moe-expert-parallel-comm): an
# interleaved pipeline, no full recomputation, as Megatron-Core asserts
plan m.db --schedule interleaved \
  --parallel dp=2,tp=2,pp=2,zero=1,recompute=none,ep=2,etp=1,vpp=2,moe_a2a_overlap=1
report moeov m.db
# a capacity factor (a model file exported with --capacity-factor 1.5): the
# graph pads every expert to its capacity, Megatron's drop-and-pad
"$approf" model export mixtral --num-layers 4 --capacity-factor 1.5 >"$dir/cf.json" 2>"$dir/err" ||
  fail_with "$dir/err" "approf model export --capacity-factor 1.5"
sweep cf.db --model-file "$dir/cf.json" --layers 4 --cluster 1x8 --variants all --hardware a100-80g
plan cf.db --parallel dp=2,tp=2,pp=2,zero=1,recompute=full,ep=2,etp=1; report moecf cf.db
sweep g.db --model gpt --num-layers 4 --manual-boundaries --manual-layers --cluster 2x8 --micro-batches 4 \
  --dtype f16 --variants all --hardware v100-32g
plan g.db --parallel dp=4,tp=2,pp=2,zero=1; report gpt2x8 g.db
plan g.db; report gptauto g.db
# HSDP (docs/hsdp.md): ZeRO-3 within each host, the hosts replicated;
# torchtitan's replicate x shard degrees; DeepSpeed's MiCS cannot take tp > 1
plan g.db --parallel dp=8,tp=2,pp=1,zero=3,dp_shard=4,raf=0; report hsdp g.db
sweep b.db --model gpt --num-layers 4 --manual-boundaries --manual-layers --cluster 1x4 \
  --dtype bf16 --hardware a100-40g
plan b.db --parallel dp=2,tp=2,pp=1; report gptbf16 b.db
# context parallelism (solver/context_parallel.c): the ring on 2 stages, and
# the hierarchical a2a+p2p with the cp group across the two hosts, and
# all_gather
sweep c.db --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries --manual-layers \
  --cluster 2x4 --micro-batches 4 --dtype bf16 --hardware a100-40g
plan c.db --parallel dp=1,tp=2,pp=2,cp=2; report cp2 c.db
plan c.db --parallel dp=1,tp=2,pp=1,cp=4,cp_comm=a2a+p2p; report cphier c.db
# Megatron's all_gather comm type (TE's AttnFuncWithCPAndKVAllGather):
# torchtitan's default rotate method, written as priced
plan c.db --parallel dp=1,tp=2,pp=2,cp=2,cp_comm=all_gather; report cpag c.db
# Adam's state in bf16 (the spec's optimizer_* widths, docs/megatron-memory.md):
# Megatron-Core's precision-aware optimizer with the distributed optimizer;
# without it, and without a main copy, a line saying what cannot be expressed
"$approf" hardware show a100-40g >"$dir/opt.spec" || fail "approf hardware show"
sed -i 's/^name = .*/name = a100-40g-bf16-adam/; s/^optimizer_exp_avg_bytes = .*/optimizer_exp_avg_bytes = 2/
  s/^optimizer_exp_avg_sq_bytes = .*/optimizer_exp_avg_sq_bytes = 2/' "$dir/opt.spec"
sweep o.db --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries --manual-layers \
  --cluster 1x8 --dtype bf16 --variants all --hardware "$dir/opt.spec"
plan o.db --parallel dp=2,tp=2,pp=2,zero=1; report optbf16 o.db
plan o.db --parallel dp=2,tp=2,pp=2,zero=0; report optbf16z0 o.db
sed -i 's/^name = .*/name = a100-40g-nemo-adam/; s/^optimizer_main_param_bytes = .*/optimizer_main_param_bytes = 2/' \
  "$dir/opt.spec"
sweep n.db --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries --manual-layers \
  --cluster 1x8 --dtype bf16 --variants all --hardware "$dir/opt.spec"
plan n.db --parallel dp=2,tp=2,pp=2,zero=1; report optnemo n.db
# FP8 training (approf sweep --fp8, docs/fp8.md "Launch files"): Megatron's
# --fp8-format hybrid --fp8-recipe delayed, with FP8 primary weights
# (the spec's fp8_param_gather) --fp8-param-gather under the distributed
# optimizer and a 'cannot express' line without it; torchtitan's float8
# converter; DeepSpeed's line that its config cannot say FP8
sweep p.db --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries --manual-layers \
  --cluster 1x8 --variants all --hardware h100-sxm --fp8
plan p.db --parallel dp=2,tp=2,pp=2,zero=1; report fp8z1 p.db
plan p.db --parallel dp=2,tp=2,pp=2,zero=0; report fp8z0 p.db
"$approf" hardware show h100-sxm >"$dir/fp8.spec" || fail "approf hardware show"
sed -i 's/^name = .*/name = h100-sxm-fp8-params/; s/^fp8_param_gather = .*/fp8_param_gather = 1/' "$dir/fp8.spec"
sweep q.db --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries --manual-layers \
  --cluster 1x8 --variants all --hardware "$dir/fp8.spec" --fp8
plan q.db --parallel dp=2,tp=2,pp=2,zero=1; report fp8pg q.db
plan q.db --parallel dp=2,tp=2,pp=2,zero=0; report fp8pgz0 q.db
# under ZeRO-3 the FP8 weights are gathered in float8 (docs/fp8.md, "FP8
# weight all-gathers under ZeRO-3"): torchtitan's FSDP float8 all-gather
# and precomputed scales
plan q.db --parallel dp=2,tp=2,pp=2,zero=3; report fp8pgz3 q.db
# the other recipes (approf sweep --fp8-recipe): Megatron's --fp8-recipe
# tensorwise / blockwise (h100-sxm) and mxfp8 (b200); torchtitan's mx
# converter, without torch.compile at tp 2 and with it at tp 1
for r in tensorwise blockwise mxfp8; do
  hw=h100-sxm; [ "$r" = mxfp8 ] && hw=b200
  sweep "r$r.db" --model llama --preset llama-3-8b --num-layers 4 --manual-boundaries \
    --manual-layers --cluster 1x8 --variants all --hardware "$hw" --fp8-recipe "$r"
  plan "r$r.db" --parallel dp=2,tp=2,pp=2,zero=1; report "fp8$r" "r$r.db"
done
plan rmxfp8.db --parallel dp=2,tp=1,pp=4,zero=1; report fp8mxtp1 rmxfp8.db

# check FILE MANIFEST: passes (exit 0), or reports only torchtitan's
# missing flavour (exit 3) where the model has none
check() {
  rc=0
  "$python" "$check" "$2" "$1" >"$dir/check.out" 2>&1 || rc=$?
  case $rc in
    0) ;;
    3) if grep -v '^unknown: model\.\(name\|flavor\): \|^warn: ' "$dir/check.out" | grep -q .; then
         fail_with "$dir/check.out" "$1: unknowns beyond torchtitan's flavour"
       fi
       case $1 in *full8b_torchtitan.toml) fail_with "$dir/check.out" "$1: Llama-3-8B has a flavour";; esac ;;
    *) fail_with "$dir/check.out" "$1 against $(basename "$2"): exit $rc" ;;
  esac
}
n=0
while read -r name; do
  check "$dir/f/${name}_megatron.args" "$meg"
  check "$dir/f/${name}_deepspeed.json" "$ds"
  check "$dir/f/${name}_torchtitan.toml" "$tt"
  check "$dir/f/${name}_torchtitan.toml" "$ttmain"     # its '# main:' lines
  n=$((n + 3))
done <"$dir/names"
[ "$n" -ge 51 ] || fail "only $n files checked"

# what the set must contain for the checks to mean something
f=$dir/f
grep -qx -- '--expert-tensor-parallel-size 1' "$f/moeauto_megatron.args" || fail "moeauto: no ETP 1"
grep -qx -- '--sequence-parallel' "$f/moeauto_megatron.args" || fail "moeauto: no SP"
grep -qx -- '--num-layers 4' "$f/gpt2x8_megatron.args" || fail "gpt: no --num-layers"
grep -qx -- '--fp16' "$f/gpt2x8_megatron.args" || fail "gpt2x8: not fp16"
grep -qx -- '--num-layers-per-virtual-pipeline-stage 1' "$f/il_megatron.args" || fail "il: no vpp"
grep -q -- '--hostfile hostfile --num_nodes 2' "$f/gpt2x8_deepspeed.json" || fail "gpt2x8: no hostfile"
grep -q -- '--rdzv_endpoint' "$f/gpt2x8_torchtitan.toml" || fail "gpt2x8: no rendezvous"
grep -qx 'pipeline_parallel_layers_per_stage = 1' "$f/il_torchtitan.toml" || fail "il: layers per stage"
grep -qx 'flavor = "8B"' "$f/full8b_torchtitan.toml" || fail "full8b: no flavour"
grep -q -- '--module llama3 --config llama3_8b' "$f/full8b_torchtitan.toml" || fail "full8b: main config"
grep -qx -- '--decoder-first-pipeline-num-layers 2' "$f/uneven_megatron.args" || fail "uneven: first stage"
grep -q 'splits the 3 blocks evenly over the stages; this plan.s stages hold 2, 1' \
  "$f/uneven_deepspeed.json" || fail "uneven: DeepSpeed note"
grep -q '"activation_checkpoint_interval": 1' "$f/zero2_deepspeed.json" || fail "zero2: no interval"
grep -q '"stage": 3' "$f/zero3_deepspeed.json" || fail "zero3: not ZeRO-3"
grep -qx 'mixed_precision_param = "bfloat16"' "$f/gpt2x8_torchtitan.toml" || fail "fp16 -> bf16"
grep -q 'DDP has not supported' "$f/zero0_torchtitan.toml" || fail "zero0: no DDP note"
grep -qx -- '--expert-model-parallel-size 2' "$f/moeep_megatron.args" || fail "moeep: no ep 2"
grep -qx -- '--expert-tensor-parallel-size 1' "$f/moeep_megatron.args" || fail "moeep: no etp 1"
grep -qx -- '--sequence-parallel' "$f/moeep_megatron.args" || fail "moeep: no SP"
grep -qx 'expert_parallel_degree = 2' "$f/moeep_torchtitan.toml" || fail "moeep: torchtitan ep"
# the dispatcher an ep plan is priced with, and a capacity factor only
# where the graph was built with one
grep -qx -- '--moe-token-dispatcher-type alltoall' "$f/moeep_megatron.args" || fail "moeep: no alltoall"
grep -qx -- '--overlap-moe-expert-parallel-comm' "$f/moeov_megatron.args" || fail "moeov: no overlap flag"
grep -q -- '--overlap-moe-expert-parallel-comm' "$f/moeep_megatron.args" && fail "moeep: an overlap flag"
grep -q -- '--moe-token-dispatcher-type' "$f/moeauto_megatron.args" "$f/moe3d_megatron.args" &&
  fail "a dispatcher type without ep"
grep -q -- '--moe-expert-capacity-factor\|--moe-pad-expert' "$f/moeep_megatron.args" &&
  fail "moeep: a capacity factor in a dropless plan"
grep -qx -- '--moe-expert-capacity-factor 1.5' "$f/moecf_megatron.args" || fail "moecf: no capacity factor"
grep -qx -- '--moe-pad-expert-input-to-capacity' "$f/moecf_megatron.args" || fail "moecf: not padded"
grep -qx 'expert_tensor_parallel_degree = 1' "$f/moeep_torchtitan.toml" || fail "moeep: torchtitan etp"
grep -q 'cannot run experts on ep 2 x etp 1 as priced' "$f/moeep_deepspeed.json" ||
  fail "moeep: DeepSpeed folds no experts over tp ranks, and must say so"
grep -qx -- '--context-parallel-size 2' "$f/cp2_megatron.args" || fail "cp2: no cp"
grep -qx -- '--cp-comm-type p2p' "$f/cp2_megatron.args" || fail "cp2: no cp comm type"
grep -qx -- '--cp-comm-type a2a+p2p' "$f/cphier_megatron.args" || fail "cphier: not a2a+p2p"
grep -qx -- '--hierarchical-context-parallel-sizes 2 2' "$f/cphier_megatron.args" ||
  fail "cphier: no hierarchical sizes"
grep -qx 'context_parallel_degree = 2' "$f/cp2_torchtitan.toml" || fail "cp2: torchtitan cp"
grep -qx -- '--cp-comm-type all_gather' "$f/cpag_megatron.args" || fail "cpag: not all_gather"
grep -qx 'context_parallel_rotate_method = "allgather"' "$f/cpag_torchtitan.toml" ||
  fail "cpag: torchtitan's rotate method"
grep -q 'context_parallel_rotate_method' "$f/cp2_torchtitan.toml" && fail "cp2: a rotate method"
grep -q 'DeepSpeed cannot express context parallelism' "$f/cp2_deepspeed.json" ||
  fail "cp2: no DeepSpeed note"
for l in --use-precision-aware-optimizer '--main-params-dtype fp32' '--exp-avg-dtype bf16' \
  '--exp-avg-sq-dtype bf16' --use-distributed-optimizer; do
  grep -qx -- "$l" "$f/optbf16_megatron.args" || fail "optbf16: no $l"
  grep -qx -- "$l" "$f/optnemo_megatron.args" || fail "optnemo: no $l"
done
grep -q -- '--precision-aware\|--exp-avg' "$f/optbf16z0_megatron.args" &&
  fail "optbf16z0: precision-aware flags without the distributed optimizer"
grep -q 'cannot express Adam.s state narrower than f32 without the distributed optimizer' \
  "$f/optbf16z0_megatron.args" || fail "optbf16z0: no note"
grep -q 'cannot express Adam without a main copy' "$f/optnemo_megatron.args" ||
  fail "optnemo: no note on the main copy"
grep -q -- '--precision-aware\|--exp-avg' "$f/zero1_megatron.args" &&
  fail "zero1: precision-aware flags with f32 state"
for plan in fp8z1 fp8z0 fp8pg fp8pgz0 fp8pgz3; do
  for l in '--fp8-format hybrid' '--fp8-recipe delayed' --bf16; do
    grep -qx -- "$l" "$f/${plan}_megatron.args" || fail "$plan: no $l"
  done
  grep -q 'precision=fp8' "$f/${plan}_megatron.args" || fail "$plan: no precision in the context"
  grep -qx 'converters = \["quantize.linear.float8"\]' "$f/${plan}_torchtitan.toml" ||
    fail "$plan: no float8 converter"
  grep -qx 'filter_fqns = \["output"\]' "$f/${plan}_torchtitan.toml" || fail "$plan: LM head not filtered"
  grep -q 'DeepSpeed v0.16.4 cannot express FP8 training' "$f/${plan}_deepspeed.json" ||
    fail "$plan: no DeepSpeed FP8 line"
done
grep -qx -- '--fp8-param-gather' "$f/fp8pg_megatron.args" || fail "fp8pg: no --fp8-param-gather"
for plan in fp8pg fp8pgz3; do
  grep -qx 'enable_fsdp_float8_all_gather = true' "$f/${plan}_torchtitan.toml" ||
    fail "$plan: no FSDP float8 all-gather"
  grep -qx 'precompute_float8_dynamic_scale_for_fsdp = true' "$f/${plan}_torchtitan.toml" ||
    fail "$plan: no precomputed float8 scales"
done
grep -q 'FSDP gathers the float8 weights as priced' "$f/fp8pgz3_torchtitan.toml" ||
  fail "fp8pgz3: no note on the float8 all-gather"
grep -q 'enable_fsdp_float8_all_gather\|precompute_float8' "$f/fp8z1_torchtitan.toml" &&
  fail "fp8z1: a float8 all-gather not priced"
grep -qx -- '--fp8-param-gather' "$f/fp8z1_megatron.args" && fail "fp8z1: FP8 primary weights not priced"
grep -qx -- '--fp8-param-gather' "$f/fp8pgz0_megatron.args" &&
  fail "fp8pgz0: --fp8-param-gather without the distributed optimizer"
grep -q 'cannot express FP8 primary weights without the distributed optimizer' \
  "$f/fp8pgz0_megatron.args" || fail "fp8pgz0: no note"
grep -q -- '--fp8\|converters\|precision=fp8' "$f/zero1_megatron.args" "$f/zero1_torchtitan.toml" &&
  fail "zero1: FP8 in a 16-bit plan's files"
for r in tensorwise:hybrid blockwise:e4m3 mxfp8:e4m3; do
  m=fp8${r%%:*}
  grep -qx -- "--fp8-recipe ${r%%:*}" "$f/${m}_megatron.args" || fail "$m: no --fp8-recipe ${r%%:*}"
  grep -qx -- "--fp8-format ${r##*:}" "$f/${m}_megatron.args" || fail "$m: no --fp8-format ${r##*:}"
  grep -q "priced_recipe=${r%%:*}" "$f/${m}_megatron.args" || fail "$m: no recipe in the context"
done
grep -q 'fp8_autocast with Float8CurrentScaling(fp8_format=Format.HYBRID)' \
  "$f/fp8tensorwise_deepspeed.json" || fail "fp8tensorwise: DeepSpeed recipe"
grep -q 'fp8_autocast with MXFP8BlockScaling(fp8_format=Format.E4M3)' \
  "$f/fp8mxfp8_deepspeed.json" || fail "fp8mxfp8: DeepSpeed recipe"
grep -qx 'converters = \["quantize.linear.mx"\]' "$f/fp8mxfp8_torchtitan.toml" ||
  fail "fp8mxfp8: no mx converter"
grep -q '^\[compile\]' "$f/fp8mxfp8_torchtitan.toml" && fail "fp8mxfp8: torch.compile at tp 2"
grep -q '^\[compile\]' "$f/fp8mxtp1_torchtitan.toml" || fail "fp8mxtp1: no torch.compile"
grep -q 'cannot express the block scaling' "$f/fp8blockwise_torchtitan.toml" ||
  fail "fp8blockwise: no torchtitan note"
grep -q 'model.fp8=True' "$f/fp8tensorwise_megatron.args" && fail "fp8tensorwise: NeMo 1 delayed keys"

# ZeRO-2, ZeRO-3 and HSDP: Megatron-FSDP (the sharding strategy of the
# plan's ZeRO stage, the fsdp_dtensor checkpoints it requires, for ZeRO-3
# a unit size below one layer, for HSDP the optimizer instances)
for plan in zero2 zero3 z3fsdp2 hsdp; do
  grep -qx -- '--use-megatron-fsdp' "$f/${plan}_megatron.args" || fail "$plan: no Megatron-FSDP"
  grep -qx -- '--ckpt-format fsdp_dtensor' "$f/${plan}_megatron.args" || fail "$plan: no fsdp_dtensor"
done
grep -qx -- '--data-parallel-sharding-strategy optim_grads' "$f/zero2_megatron.args" ||
  fail "zero2: not optim_grads"
grep -qx -- '--data-parallel-sharding-strategy optim_grads_params' "$f/z3fsdp2_megatron.args" ||
  fail "z3fsdp2: not optim_grads_params"
grep -qx -- '--num-distributed-optimizer-instances 2' "$f/hsdp_megatron.args" ||
  fail "hsdp: no 2 optimizer instances"
grep -q 'Megatron-FSDP has no reshard_after_forward (raf=0)' "$f/hsdp_megatron.args" ||
  fail "hsdp: no raf=0 note"
grep -q 'use-megatron-fsdp\|num-distributed-optimizer' "$f/zero1_megatron.args" "$f/zero3_torchtitan.toml" &&
  fail "Megatron-FSDP in a ZeRO-1 plan"
grep -q '^# Megatron-LM runs this plan as priced:' "$f/z3fsdp2_megatron.args" ||
  fail "z3fsdp2: Megatron-LM does not run it as priced"
grep -q '^# NOTE: Megatron-LM cannot express this plan as priced: .*ZeRO-3 priced with the serial schedule' \
  "$f/zero3_megatron.args" || fail "zero3: no note on the serial schedule"
# one llama-3-8b layer on a tp rank (the q and o projections 4096 x 4096,
# k and v 4096 x 1024, gate, up and down 4096 x 14336, split 2 ways; the
# two norms 4096 whole): 109,060,096 elements, half of it the unit size
grep -q '^# launch context: zero=3 fsdp_unit=109060096$' "$f/z3fsdp2_megatron.args" ||
  fail "z3fsdp2: the layer's elements"
grep -qx -- '--suggested-communication-unit-size 54530048' "$f/z3fsdp2_megatron.args" ||
  fail "z3fsdp2: the unit size"
# the NeMo comment line (NeMo 1 at 8cfedd7203, reports/export_nemo.c):
# ZeRO-1 is Apex's distributed_fused_adam, ZeRO-2/3 its torch FSDP, which
# refuses pipeline parallelism
grep -q '^# NeMo: .* model.optim.name=distributed_fused_adam' "$f/zero1_megatron.args" ||
  fail "zero1: NeMo not distributed_fused_adam"
grep -q '^# NeMo: .* model.fsdp=True model.fsdp_sharding_strategy=full' "$f/zero3_megatron.args" ||
  fail "zero3 (pp 1): NeMo not torch FSDP full"
grep -q 'distributed_fused_adam' "$f/zero3_megatron.args" && fail "zero3: NeMo's ZeRO-1 optimizer"
grep -qx '# NeMo: ZeRO-2 is not written: its torch FSDP does not support pipeline parallelism (NeMo 8cfedd7203)' \
  "$f/zero2_megatron.args" || fail "zero2 (pp 2): no NeMo note"
grep -q 'model.fsdp=' "$f/zero2_megatron.args" && fail "zero2 (pp 2): NeMo FSDP with a pipeline"

# a shape the database cannot give (a gpt swept with --hidden: no preset
# fits, so no heads) is a marked UNKNOWN line that the check reports (exit 3)
sweep h.db --model gpt --num-layers 2 --hidden 512 --heads 8 --manual-boundaries --manual-layers \
  --cluster 1x4 --dtype bf16 --hardware a100-40g
plan h.db --parallel dp=2,tp=2,pp=1
"$apreport" --db "$dir/h.db" --plan "$id" --name hid --out "$dir/f" --quiet 2>"$dir/err" ||
  fail_with "$dir/err" "apreport hid"
grep -q '^# UNKNOWN --num-attention-heads: ' "$f/hid_megatron.args" || fail "hid: no UNKNOWN line"
rc=0
"$python" "$check" "$meg" "$f/hid_megatron.args" >"$dir/check.out" 2>&1 || rc=$?
[ "$rc" = 3 ] || fail_with "$dir/check.out" "hid: exit $rc, want 3 (unknown)"
grep -q '^unknown: --num-attention-heads: ' "$dir/check.out" || fail_with "$dir/check.out" "hid: not reported"
grep -q '^error:' "$dir/check.out" && fail_with "$dir/check.out" "hid: errors"

# the heads and query groups the files take from the zoo presets are the
# zoo's own (its graph's split_heads reshapes: [B, S, kv, group, d] or
# [B, S, heads, d])
for pair in "llama llama-3-8b zero1" "mixtral mixtral-8x7b moeauto" "gpt gpt2-small gpt2x8"; do
  set -- $pair
  "$approf" model export "$1" --preset "$2" --num-layers 1 >"$dir/model.json" 2>"$dir/err" ||
    fail_with "$dir/err" "approf model export $1 --preset $2"
  "$python" - "$dir/model.json" "$f/$3_megatron.args" <<'PY' || fail "$2: heads differ from the zoo's"
import json, math, shlex, sys
ops = json.load(open(sys.argv[1]))["ops"]
q = next(o for o in ops if o["op"] == "reshape" and o["name"].endswith("split_heads")
         and ("query" in o["name"] or "q_proj" in o["name"]))
k = next(o for o in ops if o["op"] == "reshape" and o["name"].endswith("split_heads")
         and ("/key/" in o["name"] or "k_proj" in o["name"]))
heads = math.prod(q["outputs"][0]["shape"][2:-1])
groups = k["outputs"][0]["shape"][2]
w = shlex.split(open(sys.argv[2]).read(), comments=True)
a = {w[i]: w[i + 1] for i in range(len(w) - 1) if w[i].startswith("--")}
assert int(a["--num-attention-heads"]) == heads, (a["--num-attention-heads"], heads)
assert int(a.get("--num-query-groups", heads)) == groups, (a.get("--num-query-groups"), groups)
PY
done

# negative cases: each edit must make the check fail (exit 1) naming the cause
# neg FILE MANIFEST WANT SED_SCRIPT
neg() {
  sed "$4" "$1" >"$dir/neg.${1##*.}"
  cmp -s "$1" "$dir/neg.${1##*.}" && fail "negative case '$4' changed nothing in $1"
  rc=0
  "$python" "$check" "$2" "$dir/neg.${1##*.}" >"$dir/check.out" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail_with "$dir/check.out" "'$4' on $1: exit $rc, want 1"
  grep -q "$3" "$dir/check.out" || fail_with "$dir/check.out" "'$4' on $1: no '$3'"
}
neg "$f/zero1_megatron.args" "$meg" 'required --num-layers missing' '/^--num-layers /d'
neg "$f/zero1_megatron.args" "$meg" 'required --seq-length missing' '/^--seq-length /d'
neg "$f/full8b_megatron.args" "$meg" 'required --num-attention-heads missing' '/^--num-attention-heads /d'
neg "$f/moeauto_megatron.args" "$meg" 'rule expert-grid' '/^--expert-tensor-parallel-size /d'
neg "$f/moeauto_megatron.args" "$meg" 'rule moe-sp' '/^--sequence-parallel$/d'
neg "$f/il_megatron.args" "$meg" 'rule layers-vpp' 's/^--num-layers-per-virtual-pipeline-stage 1/--num-layers-per-virtual-pipeline-stage 3/'
neg "$f/uneven_megatron.args" "$meg" 'rule layers-uneven' 's/^--decoder-last-pipeline-num-layers 1/--decoder-last-pipeline-num-layers 2/'
neg "$f/uneven_megatron.args" "$meg" 'rule layers-pp' '/^--decoder-/d'
neg "$f/zero1_megatron.args" "$meg" 'rule recompute-full' '/^--recompute-method /d'
neg "$f/zero1_megatron.args" "$meg" 'unknown flag --tensor-parallel-size' 's/^--tensor-model-parallel-size/--tensor-parallel-size/'
neg "$f/gpt2x8_megatron.args" "$meg" 'rule launcher-hosts' 's/--rdzv-endpoint HOST0:29500//'
neg "$f/zero2_deepspeed.json" "$ds" 'rule pipe-checkpointing' 's/"activation_checkpoint_interval": 1/"activation_checkpoint_interval": 0/'
neg "$f/zero2_deepspeed.json" "$ds" 'a dead key' 's/"activation_checkpoint_interval": 1/"stages": 2/'
neg "$f/zero1_deepspeed.json" "$ds" 'rule batch-triple' 's/"train_batch_size": 32/"train_batch_size": 64/'
neg "$f/zero1_deepspeed.json" "$ds" 'rule pipe-zero' 's/"stage": 1/"stage": 2/'
neg "$f/gpt2x8_deepspeed.json" "$ds" 'rule launcher-hosts' 's/--hostfile hostfile //'
neg "$f/zero1_torchtitan.toml" "$tt" 'is not one of' 's/mixed_precision_param = "bfloat16"/mixed_precision_param = "float16"/'
neg "$f/zero1_torchtitan.toml" "$tt" 'required training.seq_len missing' '/^seq_len = /d'
neg "$f/zero0_torchtitan.toml" "$tt" 'rule ddp-1d' 's/^data_parallel_replicate_degree = 1/data_parallel_replicate_degree = 2/; s/^data_parallel_shard_degree = 2/data_parallel_shard_degree = 1/'
neg "$f/il_torchtitan.toml" "$tt" 'rule pp-virtual-stages' 's/^pipeline_parallel_first_stage_less_layers = 0/pipeline_parallel_first_stage_less_layers = 1/'
neg "$f/full8b_torchtitan.toml" "$tt" 'unknown key parallelism.pipeline_parallel_stages' 's/^pipeline_parallel_degree = /pipeline_parallel_stages = /'
neg "$f/gpt2x8_torchtitan.toml" "$tt" 'rule launcher-hosts' 's/--rdzv_endpoint HOST0:29500//'
neg "$f/zero1_torchtitan.toml" "$ttmain" 'rule tokens-step' 's/^# main: --training.num_tokens_per_train_step 131072/# main: --training.num_tokens_per_train_step 130000/'
neg "$f/zero1_torchtitan.toml" "$ttmain" 'unknown flag --training.seq_len' 's/^# main: --training.max_context_length/# main: --training.seq_len/'
# an ep plan's files broken as Megatron's validate_args and
# initialize_model_parallel and torchtitan's ParallelDims refuse them
neg "$f/moeep_megatron.args" "$meg" 'rule ep-experts' 's/^--expert-model-parallel-size 2$/--expert-model-parallel-size 3/'
neg "$f/moeep_megatron.args" "$meg" 'rule expert-grid' 's/^--expert-model-parallel-size 2$/--expert-model-parallel-size 8/; s/^--expert-tensor-parallel-size 1$/--expert-tensor-parallel-size 2/'
neg "$f/moeep_megatron.args" "$meg" 'rule moe-sp' '/^--sequence-parallel$/d'
neg "$f/moeov_megatron.args" "$meg" 'rule moe-a2a-overlap' 's/^--expert-model-parallel-size 2$/--expert-model-parallel-size 1/; s/^--expert-tensor-parallel-size 1$//'
neg "$f/moeov_megatron.args" "$meg" 'rule moe-a2a-overlap' '/^--num-layers-per-virtual-pipeline-stage /d'
neg "$f/moeep_torchtitan.toml" "$tt" 'rule ep-region' 's/^expert_parallel_degree = 2$/expert_parallel_degree = 8/'
neg "$f/moeep_torchtitan.toml" "$tt" 'rule ep-etp' 's/^expert_tensor_parallel_degree = 1$/expert_tensor_parallel_degree = 4/'
neg "$f/moeep_deepspeed.json" "$ds" 'rule moe-ep-dp' 's/ ep=1 etp=2"/ ep=4 etp=2"/'
neg "$f/moeep_deepspeed.json" "$ds" 'rule moe-etp' 's/ ep=1 etp=2"/ ep=2 etp=1"/'
neg "$f/moeep_deepspeed.json" "$ds" 'rule moe-ep-experts' 's/ experts=8 ep=1 etp=2"/ experts=6 ep=4 etp=2"/'
neg "$f/moeep_megatron.args" "$meg" 'rule ep-dispatcher' '/^--moe-token-dispatcher-type /d'
neg "$f/moecf_megatron.args" "$meg" 'rule moe-capacity-padded' '/^--moe-pad-expert-input-to-capacity$/d'
neg "$f/moecf_megatron.args" "$meg" 'rule moe-pad-capacity' '/^--moe-expert-capacity-factor /d'
neg "$f/moecf_megatron.args" "$meg" 'rule moe-capacity-balancing' 's/^--moe-pad-expert-input-to-capacity$/&\n--moe-router-load-balancing-type sinkhorn/'
echo "expert parallelism: 14 negative cases fail"
neg "$f/optbf16_megatron.args" "$meg" 'rule precision-aware-optimizer' '/^--use-distributed-optimizer$/d'
neg "$f/optbf16_megatron.args" "$meg" 'rule optimizer-dtypes' '/^--use-precision-aware-optimizer$/d'
neg "$f/cp2_megatron.args" "$meg" 'rule seq-cp' 's/^--seq-length \([0-9]*\)/--seq-length 8190/'
neg "$f/cp2_megatron.args" "$meg" 'rule world-size' 's/^--context-parallel-size 2/--context-parallel-size 3/'
neg "$f/cp2_megatron.args" "$meg" 'rule cp-a2a-heads' 's/^--context-parallel-size 2/--context-parallel-size 8/; s/^--cp-comm-type p2p/--cp-comm-type a2a/'
neg "$f/cp2_megatron.args" "$meg" "is not one of" 's/^--cp-comm-type p2p/--cp-comm-type ring/'
neg "$f/cphier_megatron.args" "$meg" 'rule cp-hierarchical:' '/^--hierarchical-context-parallel-sizes/d'
neg "$f/cphier_megatron.args" "$meg" 'rule cp-hierarchical-product' 's/^--hierarchical-context-parallel-sizes 2 2/--hierarchical-context-parallel-sizes 2 4/'
neg "$f/cpag_torchtitan.toml" "$tt" 'is not one of' 's/^context_parallel_rotate_method = "allgather"/context_parallel_rotate_method = "ring"/'
neg "$f/cp2_torchtitan.toml" "$tt" 'rule world-size' 's/^context_parallel_degree = 2/context_parallel_degree = 4/'
# torchtitan's zero-bubble schedules are multi-stage: with one stage per
# rank (the plan's ZB-H1 layout) pipeline_llm refuses them
# (docs/export-torchtitan.md)
neg "$f/zero1_torchtitan.toml" "$tt" 'rule pp-stages-per-rank' 's/^pipeline_parallel_schedule = "1F1B"/pipeline_parallel_schedule = "InterleavedZeroBubble"/'
neg "$f/zero1_torchtitan.toml" "$tt" 'rule pp-stages-per-rank' 's/^pipeline_parallel_schedule = "1F1B"/pipeline_parallel_schedule = "ZBVZeroBubble"/'
neg "$f/zero1_torchtitan.toml" "$ttmain" 'rule pp-virtual-stages' 's/^# main: --parallelism.pipeline_parallel_schedule 1F1B/# main: --parallelism.pipeline_parallel_schedule InterleavedZeroBubble/'
# FP8: each flag the plan was priced with removed or changed, and the
# frameworks' own FP8 rules broken
neg "$f/fp8z1_megatron.args" "$meg" 'rule fp8-plan' '/^--fp8-format /d'
neg "$f/fp8z1_megatron.args" "$meg" 'rule fp8-plan' 's/^--fp8-recipe delayed$/--fp8-recipe tensorwise/'
neg "$f/fp8z1_megatron.args" "$meg" 'is not one of' 's/^--fp8-format hybrid$/--fp8-format e5m2/'
neg "$f/fp8z1_megatron.args" "$meg" 'rule fp8-custom-recipe' 's/^--fp8-recipe delayed$/--fp8-recipe custom/'
neg "$f/fp8z1_megatron.args" "$meg" 'rule fp8-te' 's/^--fp8-recipe delayed$/--fp8-recipe delayed\n--transformer-impl local/'
neg "$f/fp8z1_megatron.args" "$meg" 'rule fp8-delayed-recompute' 's/^--fp8-recipe delayed$/--fp8-recipe delayed\n--recompute-granularity selective\n--recompute-modules core_attn layernorm/'
neg "$f/fp8pg_megatron.args" "$meg" 'rule fp8-plan-params' '/^--fp8-param-gather$/d'
neg "$f/fp8pg_megatron.args" "$meg" 'rule fp8-param-gather-optimizer' '/^--use-distributed-optimizer$/d'
neg "$f/fp8pg_megatron.args" "$meg" 'rule fp8-param-gather-fp8' '/^--fp8-format /d'
neg "$f/zero1_megatron.args" "$meg" 'rule fp8-not-priced' 's/^--bf16$/--bf16\n--fp8-format hybrid/'
neg "$f/fp8z1_torchtitan.toml" "$tt" 'rule fp8-plan' '/^converters = /d'
neg "$f/fp8z1_torchtitan.toml" "$tt" 'rule fp8-plan' '/^filter_fqns = /d'
neg "$f/fp8z1_torchtitan.toml" "$tt" 'rule fp8-plan' 's/^enable = true$/enable = false/'
neg "$f/fp8z1_torchtitan.toml" "$tt" 'is not one of' 's/^converters = .*/converters = ["float8"]/'
neg "$f/fp8z1_torchtitan.toml" "$tt" 'rule float8-one-type' 's/^converters = .*/converters = ["quantize.linear.float8", "quantize.grouped_mm.mx"]/'
neg "$f/fp8z1_torchtitan.toml" "$tt" 'rule float8-grouped-mm' 's/^converters = .*/converters = ["quantize.linear.float8", "quantize.grouped_mm.float8"]/'
neg "$f/fp8pg_torchtitan.toml" "$tt" 'rule float8-recipe-fsdp' 's/^filter_fqns = .*/&\nrecipe_name = "rowwise"/'
neg "$f/full8b_torchtitan.toml" "$tt" 'rule fp8-not-priced' 's/^flavor = "8B"$/&\nconverters = ["quantize.linear.float8"]/'
# the other recipes: the recipe or its format not the one priced, the mx
# converter missing, torch.compile with tp 2 under mxfp8
neg "$f/fp8tensorwise_megatron.args" "$meg" 'rule fp8-plan' 's/^--fp8-recipe tensorwise$/--fp8-recipe delayed/'
neg "$f/fp8blockwise_megatron.args" "$meg" 'rule fp8-plan' 's/^--fp8-format e4m3$/--fp8-format hybrid/'
neg "$f/fp8mxfp8_megatron.args" "$meg" 'rule fp8-plan' 's/^--fp8-recipe mxfp8$/--fp8-recipe blockwise/'
neg "$f/fp8mxfp8_torchtitan.toml" "$tt" 'rule fp8-plan-mxfp8' 's/^converters = .*/converters = ["quantize.linear.float8"]/'
neg "$f/fp8mxfp8_torchtitan.toml" "$tt" 'rule mx-compile-tp' 's/^\[quantize.linear.mx\]$/[compile]\nenable = true\n\n&/'
neg "$f/fp8mxtp1_torchtitan.toml" "$tt" 'rule fp8-plan-mxfp8' 's/^enable = true$/enable = false/'
echo "FP8: 24 negative cases fail"
# Megatron-FSDP: validate_args' and initialize_model_parallel's rules, and
# approf's (the plan's ZeRO stage, HSDP degree and unit size)
neg "$f/zero3_megatron.args" "$meg" 'rule megatron-fsdp-ckpt' '/^--ckpt-format /d'
neg "$f/zero1_megatron.args" "$meg" 'rule ckpt-fsdp-dtensor' 's/^--use-distributed-optimizer$/&\n--ckpt-format fsdp_dtensor/'
neg "$f/zero3_megatron.args" "$meg" 'rule megatron-fsdp-torch-fsdp2' 's/^--use-megatron-fsdp$/&\n--use-torch-fsdp2/'
neg "$f/zero1_megatron.args" "$meg" 'rule overlap-param-gather' 's/^--use-distributed-optimizer$/--overlap-param-gather/'
neg "$f/zero3_megatron.args" "$meg" 'is not one of' 's/^--data-parallel-sharding-strategy optim_grads_params$/--data-parallel-sharding-strategy full_shard/'
neg "$f/zero3_megatron.args" "$meg" 'rule megatron-fsdp-plan' 's/^--data-parallel-sharding-strategy optim_grads_params$/--data-parallel-sharding-strategy optim_grads/'
neg "$f/zero2_megatron.args" "$meg" 'rule megatron-fsdp-plan' '/^--use-megatron-fsdp$/d'
neg "$f/zero1_megatron.args" "$meg" 'rule megatron-fsdp-plan' 's/^--use-distributed-optimizer$/&\n--use-megatron-fsdp\n--ckpt-format fsdp_dtensor/'
neg "$f/z3fsdp2_megatron.args" "$meg" 'rule megatron-fsdp-unit' '/^--suggested-communication-unit-size /d'
neg "$f/z3fsdp2_megatron.args" "$meg" 'rule megatron-fsdp-unit' 's/^--suggested-communication-unit-size .*/--suggested-communication-unit-size 109060096/'
neg "$f/hsdp_megatron.args" "$meg" 'rule optimizer-instances' 's/^--num-distributed-optimizer-instances 2$/--num-distributed-optimizer-instances 3/'
neg "$f/hsdp_megatron.args" "$meg" 'rule megatron-fsdp-hsdp' '/^--num-distributed-optimizer-instances /d'
neg "$f/hsdp_megatron.args" "$meg" 'rule megatron-fsdp-hsdp' 's/^--use-megatron-fsdp$/&\n--outer-dp-sharding-strategy optim/'
echo "Megatron-FSDP: 13 negative cases fail"
echo "launch manifests: $n files ok (torchtitan's also for main), 78 negative cases fail"
