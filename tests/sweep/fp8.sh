#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# approf sweep --fp8 (docs/fp8.md), end to end on a 2-layer Llama-3-8B:
#  1. --fp8 on a spec without FP8 tensor cores (a100-40g) is refused with
#     exit 2, naming the hardware; with --backend cuda too.
#  2. The FP8 sweep says its precision in the summary and records it in the
#     sweep's options; the 16-bit one does not.
#  3. Every entry of the transformer block (layer 0, GEMM bound) that fits
#     in both costs less in FP8 and keeps less for the backward; none of
#     the other ranges costs more than 16-bit.
#  4. --resume never mixes: an --fp8 --resume next to a complete 16-bit
#     sweep starts its own sweep, and a 16-bit --resume next to the FP8 one
#     finds its own; approf compare refuses the pair without
#     --across-precision.
#  5. --fp8-recipe: mxfp8 refused on h100-sxm, blockwise refused on the
#     ROCm mi300x (Transformer Engine's ROCm build) and taken on the same
#     spec with rocm = 0, an unknown recipe refused, the recipe in the
#     options, a tensorwise sweep not resuming a delayed one.
# Usage: fp8.sh APPROF SQLITE3 WORKDIR
set -euo pipefail
approf=$(realpath "$1") sqlite=$2 work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"
model=(--model llama --preset llama-3-8b --num-layers 2 --layers 2 --cluster 1x8
       --micro-batches 1 --quiet)

set +e
"$approf" sweep "${model[@]}" --hardware a100-40g --fp8 --db x.db 2>err
expect_rc 2 $? err "--fp8 on a100-40g"
set -e
says_text err "a100-40g" "--fp8 on a100-40g"
says_text err "FP8" "--fp8 on a100-40g"
set +e
"$approf" sweep "${model[@]}" --hardware h100-sxm --fp8 --backend cuda --db x.db 2>err
expect_rc 2 $? err "--fp8 --backend cuda"
set -e

"$approf" sweep "${model[@]}" --hardware h100-sxm --db a.db 2>a.err || fail_with a.err "bf16 sweep"
"$approf" sweep "${model[@]}" --hardware h100-sxm --fp8 --db b.db 2>b.err || fail_with b.err "fp8 sweep"
says_text b.err "precision: FP8" "fp8 summary"
if grep -q "precision: FP8" a.err; then fail "bf16 summary names FP8"; fi
[ "$("$sqlite" b.db "select options like '%\"precision\":\"fp8\"%' from sweep")" = 1 ] ||
  fail "fp8 sweep options: $("$sqlite" b.db "select options from sweep")"
[ "$("$sqlite" a.db "select options like '%precision%' from sweep")" = 0 ] ||
  fail "bf16 sweep options name a precision"

cmp_sql="attach 'b.db' as b;
select e.start_layer, e.end_layer, e.submesh_index, e.config_index, e.phase,
  c.compute_cost < cb.compute_cost, c.compute_cost > cb.compute_cost,
  c.intermediate_size > cb.intermediate_size
from main.stage_entry e join main.stage_cost c on c.sweep_id = e.sweep_id and c.cost_id = e.cost_id
join b.stage_entry eb using (start_layer, end_layer, submesh_index, config_index, phase)
join b.stage_cost cb on cb.sweep_id = eb.sweep_id and cb.cost_id = eb.cost_id
where c.status = 'ok' and cb.status = 'ok';"
"$sqlite" -separator ' ' a.db "$cmp_sql" > pairs
[ -s pairs ] || fail "no entry fits in both sweeps"
block=0
while read -r s e sub conf ph fp8_dearer cheaper leaner; do
  [ "$fp8_dearer" = 0 ] || fail "entry $s-$e submesh $sub config $conf phase $ph costs more in FP8"
  if [ "$s" = 0 ] && [ "$e" = 0 ]; then
    [ "$cheaper" = 1 ] || fail "block entry submesh $sub config $conf phase $ph: not cheaper in FP8"
    [ "$leaner" = 1 ] || fail "block entry submesh $sub config $conf phase $ph: keeps as much in FP8"
    block=$((block + 1))
  fi
done < pairs
[ "$block" -gt 0 ] || fail "no block entry compared"

# resume never mixes
cp a.db m.db
"$approf" sweep "${model[@]}" --hardware h100-sxm --fp8 --resume --db m.db 2>m.err ||
  fail_with m.err "fp8 resume next to bf16"
says_text m.err "no unfinished sweep with these inputs; starting one" "fp8 resume next to bf16"
[ "$("$sqlite" m.db "select count(*) from sweep")" = 2 ] || fail "fp8 --resume reused the bf16 sweep"
"$approf" sweep "${model[@]}" --hardware h100-sxm --resume --db m.db 2>m2.err ||
  fail_with m2.err "bf16 resume"
says_text m2.err "sweep 1 with these inputs is already complete" "bf16 resume finds its own"
"$approf" sweep "${model[@]}" --hardware h100-sxm --fp8 --resume --db m.db 2>m3.err ||
  fail_with m3.err "fp8 resume"
says_text m3.err "sweep 2 with these inputs is already complete" "fp8 resume finds its own"

set +e
"$approf" compare a.db b.db --no-plan > cmp.out 2> cmp.err
expect_rc 2 $? cmp.err "compare bf16 with fp8"
set -e
says_text cmp.err "--across-precision" "compare bf16 with fp8"
"$approf" compare a.db b.db --no-plan --across-precision > cmp.out 2> cmp.err ||
  fail_with cmp.err "compare --across-precision"
"$approf" compare b.db b.db --no-plan > cmp.out 2> cmp.err || fail_with cmp.err "compare fp8 with fp8"

# --fp8-recipe (costdb/fp8_recipe.c): MXFP8 only on a spec with MX tensor cores
# (Blackwell), an unknown recipe refused, the recipe in the options, and a
# tensorwise sweep never resumes a delayed one
set +e
"$approf" sweep "${model[@]}" --hardware h100-sxm --fp8-recipe mxfp8 --db x.db 2>err
expect_rc 2 $? err "--fp8-recipe mxfp8 on h100-sxm"
set -e
says_text err "h100-sxm" "--fp8-recipe mxfp8 on h100-sxm"
says_text err "Blackwell" "--fp8-recipe mxfp8 on h100-sxm"
[ ! -e x.db ] || fail "a refused sweep wrote x.db"
# ROCm (the spec's rocm; built in: mi300x): Transformer Engine's ROCm build
# refuses blockwise on every AMD GPU; the same spec with rocm = 0 runs it
set +e
"$approf" sweep "${model[@]}" --hardware mi300x --fp8-recipe blockwise --db x.db 2>err
expect_rc 2 $? err "--fp8-recipe blockwise on mi300x"
set -e
says_text err "mi300x" "--fp8-recipe blockwise on mi300x"
says_text err "not yet supported for ROCm" "--fp8-recipe blockwise on mi300x"
[ ! -e x.db ] || fail "a refused sweep wrote x.db"
"$approf" hardware show mi300x >rocm.spec || fail "hardware show mi300x"
grep -qx "rocm = 1" rocm.spec || fail "show lacks rocm = 1"
sed -e 's/^name = .*/name = mi300x-cuda/' -e 's/^rocm = .*/rocm = 0/' rocm.spec >cuda.spec
"$approf" sweep "${model[@]}" --hardware cuda.spec --fp8-recipe blockwise --db r.db 2>err ||
  fail_with err "blockwise on mi300x's spec with rocm = 0"
set +e
"$approf" sweep "${model[@]}" --hardware h100-sxm --fp8-recipe custom --db x.db 2>err
expect_rc 2 $? err "--fp8-recipe custom"
set -e
says_text err "unknown recipe 'custom'" "--fp8-recipe custom"
[ "$("$sqlite" b.db "select options like '%\"fp8_recipe\":\"delayed\"%' from sweep")" = 1 ] ||
  fail "delayed sweep options: $("$sqlite" b.db "select options from sweep")"
"$approf" sweep "${model[@]}" --hardware h100-sxm --fp8 --fp8-recipe tensorwise --resume \
  --db b.db 2>t.err || fail_with t.err "tensorwise sweep"
says_text t.err "no unfinished sweep with these inputs; starting one" "tensorwise next to delayed"
says_text t.err "current (tensorwise) scaling" "tensorwise summary"
[ "$("$sqlite" b.db "select count(*) from sweep where options like '%\"fp8_recipe\":\"tensorwise\"%'")" = 1 ] ||
  fail "tensorwise sweep options: $("$sqlite" b.db "select options from sweep")"
echo "ok: fp8 sweeps ($block block entries cheaper in FP8)"
