#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The FP8 padding of a dropless ep stage's expert slots
# (docs/expert-parallel.md, "How a stage is priced"): under FP8,
# Megatron-Core's TEGroupedMLP.forward pads each local expert's rows to a
# multiple of 16 before fc1 (Transformer Engine's Fp8Padding) and unpads
# fc2's output (Fp8Unpadding), the backward the gradients back
# (megatron/core/transformer/moe/experts.py at 92c8482e6d; TE v2.9
# transformer_engine/pytorch/module/fp8_padding.py, fp8_unpadding.py): two
# row copies a pass, as the sorts by local expert. On the small Mixtral of
# solver-expert-parallel (2 blocks of 8 experts, top 2, hidden 256,
# sequence 128) swept on 1x4 H100, dp=4 and ep=2, counted by hand:
# - dropless under --fp8-recipe tensorwise: a GPU's 256 slots, 2 x 256 x
#   257 x 2 + 2 x 256 x 256 x 2 = 525312 bytes, 2 forward and 2 backward,
#   and the stage's time grows by exactly those seconds over bf16's;
# - dropless in bf16, and under FP8 with a capacity factor (1.5:
#   drop_and_pad, whose fixed counts are priced aligned): none; nor,
#   with the token counts' all-gather, under FP8 on the balanced graph
#   with the spec's moe_drop_pad = 1 (capacity factor 1, drop_and_pad).
# Usage: ep_fp8_padding.sh APPROF APSOLVE PYTHON SQLITE3
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3 sq=$4
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
mix="--model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 --vocab 1000"
# a sweep takes the capacity factor from a model file (1.5: 48 slots an expert)
# shellcheck disable=SC2086
"$approf" model export mixtral ${mix#--model mixtral } --capacity-factor 1.5 --batch 4 \
  >"$w/cf.json" 2>"$w/err" || fail_with "$w/err" "mixtral export at capacity factor 1.5"
# the balanced graph run as drop-and-pad at capacity factor 1 (the spec's
# moe_drop_pad, NeMo's MegatronTokenDropCallback)
"$approf" hardware show h100-sxm | sed 's/^moe_drop_pad = 0$/moe_drop_pad = 1/' \
  >"$w/dp.spec" || fail "hardware show"
grep -q '^moe_drop_pad = 1$' "$w/dp.spec" || fail "no moe_drop_pad field to set"
for tag in bf16 fp8 cap drop; do
  hw=h100-sxm
  case $tag in
    bf16) extra="$mix" ;;
    fp8) extra="$mix --fp8-recipe tensorwise" ;;
    cap) extra="--model-file $w/cf.json --fp8-recipe tensorwise" ;;
    drop) extra="$mix --fp8-recipe tensorwise" hw=$w/dp.spec ;;
  esac
  # shellcheck disable=SC2086
  "$approf" sweep --db "$w/$tag.db" $extra --cluster 1x4 --hardware "$hw" --batch 16 \
    --micro-batches 4 --layers 2 >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep ($tag)"
  for p in plain ep; do
    k=dp=4,tp=1,pp=1
    [ $p = ep ] && k=$k,ep=2
    "$apsolve" --db "$w/$tag.db" --no-store --format json --parallel "$k" \
      >"$w/$tag-$p.json" 2>"$w/$tag-$p.err" || fail_with "$w/$tag-$p.err" "--parallel $k ($tag)"
  done
done
l="expert parallelism, stage 0: FP8 padding of the experts' slots of 525312 bytes per GPU (memory copies), 2 forward and 2 backward per micro-batch"
grep -qF "$l" "$w/fp8-ep.err" || fail_with "$w/fp8-ep.err" "line: $l"
grep -q "in 6 costs (below)" "$w/fp8-ep.err" || fail_with "$w/fp8-ep.err" "the count of costs"
for tag in bf16 cap drop; do
  grep -q "FP8 padding" "$w/$tag-ep.err" && fail_with "$w/$tag-ep.err" "padding priced ($tag)"
done
for tag in cap drop; do
  grep -q "token counts all-gather" "$w/$tag-ep.err" &&
    fail_with "$w/$tag-ep.err" "drop-and-pad priced as dropless ($tag)"
done
grep -q "token counts all-gather" "$w/fp8-ep.err" || fail_with "$w/fp8-ep.err" "dropless: no all-gather"
mem=$("$sq" "$w/fp8.db" "select memory_bandwidth from hardware")
meff=$("$sq" "$w/fp8.db" "select capabilities from hardware" |
  "$py" -c 'import json, sys; print(json.load(sys.stdin)["memory_efficiency"])')
launch=$("$sq" "$w/fp8.db" "select capabilities from hardware" |
  "$py" -c 'import json, sys; print(json.load(sys.stdin)["kernel_launch_overhead"])')
"$py" - "$w" "$mem" "$meff" "$launch" <<'EOF' || fail "the FP8 padding's seconds"
import json, sys
w, rate = sys.argv[1], float(sys.argv[2]) * float(sys.argv[3])
def st(k):
    return json.load(open("%s/%s.json" % (w, k)))["plans"][0]["stages"][0]
def added(tag, ph):  # what ep=2 adds to the stage, per micro-batch
    return st(tag + "-ep")[ph] - st(tag + "-plain")[ph]
pad = 2 * (2 * 256 * 257 * 2 + 2 * 256 * 256 * 2) / rate  # 2 MoE layers
# and TE's per-expert casts (solver-ep-grouped-launches): 4 local experts,
# 4 kernels each under current scaling, at 2 sites a pass against the
# level's 2 forward casts of 4 kernels (TE's quantize,
# costdb_fp8_cast_kernels) and 3 backward ones whose zeroing and scale
# kernels run once for gate and up (10 kernels): 24 and 22 more a layer
casts = {"fwd_cost": 2 * 24 * float(sys.argv[4]), "bwd_cost": 2 * 22 * float(sys.argv[4])}
for ph in ("fwd_cost", "bwd_cost"):
    got = added("fp8", ph) - added("bf16", ph) - casts[ph]
    assert abs(got - pad) <= 1e-9 * pad + 1e-15, (ph, got, pad)
print("FP8 padding: +%.6g s forward and backward per micro-batch" % pad)
EOF
echo "ok: a dropless ep stage under FP8 pays the experts' padding copies"
