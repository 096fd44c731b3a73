#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The per-expert kernels of an ep stage (docs/expert-parallel.md, "How a
# stage is priced"): Megatron-Core's TEGroupedMLP runs fc1 (gate and up
# fused) and fc2 as Transformer Engine GroupedLinear modules that launch
# one cuBLAS GEMM per local expert for fprop, dgrad and wgrad (TE v2.9
# common/gemm/cublaslt_gemm.cu, multi_stream_cublas_gemm) and, under FP8,
# one quantize per local expert at each of the 4 split_quantize sites
# (csrc/extensions/cast.cpp, multi_tensor_quantize_impl; one fused cast
# under delayed scaling; 4 kernels a quantize under current scaling:
# zero_amax, amax, compute_scale_from_amax, cast). The stored level runs
# each expert weight's GEMM as one batched kernel (gate, up, down: 3
# forward, 6 backward) and casts 2 forward, 3 backward (4 kernels each
# under current scaling, TE's quantize: costdb_fp8_cast_kernels, but the
# zeroing and scale kernels once for the gate's and up's output gradients,
# one module: 10 backward). On the small Mixtral of solver-expert-parallel
# (2 MoE layers of 8 experts) swept on 1x4 H100, counted by hand, a
# micro-batch's extra kernels (2 layers):
# - bf16, ep=2 (4 local experts): forward 2 x (8 - 3) = 10, backward
#   2 x (16 - 6) = 20; ep=4 (2 local): 2 x (4 - 3) = 2, 2 x (8 - 6) = 4;
# - current scaling (tensorwise), ep=2: the GEMMs' plus forward
#   2 x (2 x 4 x 4 - 2 x 4) = 48, backward 2 x (2 x 4 x 4 - 10) = 44:
#   58 and 64;
# - delayed scaling, ep=2: the GEMMs' plus forward 2 x (2 - 2) = 0,
#   backward 2 x (2 - 3) = -2: 10 and 18;
# each at the hardware row's kernel_launch_overhead.
# Usage: ep_grouped_launches.sh APPROF APSOLVE PYTHON
. "$(dirname "$0")/../lib.sh"
approf=$1 apsolve=$2 py=$3
w=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$w"' EXIT
mix="--model mixtral --num-layers 2 --hidden 256 --heads 4 --seq-len 128 --vocab 1000"
what="per-expert GEMMs and FP8 casts (TE GroupedLinear) of 0 bytes per GPU (kernels)"
for tag in bf16 cs dl; do
  case $tag in
    bf16) extra="$mix" ;;
    cs) extra="$mix --fp8-recipe tensorwise" ;;
    dl) extra="$mix --fp8-recipe delayed" ;;
  esac
  # shellcheck disable=SC2086
  "$approf" sweep --db "$w/$tag.db" $extra --cluster 1x4 --hardware h100-sxm --batch 16 \
    --micro-batches 4 --layers 2 >"$w/out" 2>&1 || fail_with "$w/out" "mixtral sweep ($tag)"
  for ep in 2 4; do
    "$apsolve" --db "$w/$tag.db" --no-store --format json --parallel "dp=4,tp=1,pp=1,ep=$ep" \
      >"$w/$tag-$ep.json" 2>"$w/$tag-$ep.err" || fail_with "$w/$tag-$ep.err" "ep=$ep ($tag)"
  done
done
launch=$("$approf" hardware show h100-sxm | sed -n 's/^kernel_launch_overhead_us = //p')
[ -n "$launch" ] || fail "no kernel_launch_overhead_us in the h100-sxm spec"
"$py" - "$w" "$launch" "$what" <<'EOF' || fail "the per-expert kernels"
import re, sys
w, launch, what = sys.argv[1], float(sys.argv[2]) * 1e-6, sys.argv[3]
want = {"bf16-2": (10, 20), "bf16-4": (2, 4), "cs-2": (58, 64), "dl-2": (10, 18)}
for k, (nf, nb) in want.items():
    err = open("%s/%s.err" % (w, k)).read()
    m = re.search(re.escape(what) + r", (-?[0-9]+) forward and (-?[0-9]+) backward per "
                  r"micro-batch \(([-+][^ ]+) s forward, ([-+][^ ]+) s backward\)", err)
    assert m, (k, "no line: " + what, err[-2000:])
    got = (int(m.group(1)), int(m.group(2)))
    assert got == (nf, nb), (k, got, (nf, nb))
    for n, s in ((nf, m.group(3)), (nb, m.group(4))):
        assert abs(float(s) - n * launch) <= 1e-5 * abs(n * launch), (k, s, n * launch)
print("per-expert kernels as counted by hand")
EOF
echo "ok: an ep stage pays TE GroupedLinear's per-expert kernels"
