#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The sweep's speed work (issue "the sweep at 10x") must not change a
# single row: two sweeps -- a small GPT with every variant on 1x4 and
# ResNet-50 (CIFAR-10) on 1x4 -- are exported and compared with the exports
# committed in tests/sweep/data/, produced by the build of commit aeae275
# (before the node-cost cache, the structure memo and the placement
# writer changes) with the same commands; their placements, dumped sorted,
# must hash to the values recorded below (same commit). Regenerated with
# the same commands for issue 12's cost-model change (TF32, per-class
# efficiencies, achievable bus bandwidth, multi-rail hosts, overlapped
# gradient sync: costs and the ILP's layouts change, the gpt placements
# do not). Regenerated again for the backward module's Alpa accounting
# (issue 12): only the memory fields of bwd rows change.
# Usage: golden_rows.sh APPROF SQLITE3 DATADIR WORKDIR
set -u
approf=$1 sqlite=$2 data=$3 work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
dump() {
  "$sqlite" "$1" "SELECT start_layer, end_layer, submesh_index, config_index, tensor_index,
    tensor_name, role, shape, dtype, sharding_spec FROM placement ORDER BY 1, 2, 3, 4, 7, 5" |
    sha256sum | cut -d' ' -f1
}
"$approf" sweep --model gpt --num-layers 4 --hidden 256 --heads 4 --seq-len 128 --vocab 1000 \
  --layers 3 --cluster 1x4 --batch 16 --micro-batches 2 --dtype f16 --variants all \
  --backend model --quiet --db "$work/g.db" 2>/dev/null || fail "gpt sweep"
"$approf" export --db "$work/g.db" --output "$work/g.csv" || fail "gpt export"
same_file "$work/g.csv" "$data/gpt_variants.csv" "gpt rows differ"
[ "$(dump "$work/g.db")" = 9c6d5babdd00cac6b618a238e00ccb14a336aad96210da9cc976aae008146665 ] ||
  fail "gpt placements differ"
"$approf" sweep --model resnet50 --dataset cifar10 --layers 8 --cluster 1x4 --batch 64 \
  --micro-batches 4 --backend model --quiet --db "$work/r.db" 2>/dev/null || fail "resnet sweep"
"$approf" export --db "$work/r.db" --output "$work/r.csv" || fail "resnet export"
same_file "$work/r.csv" "$data/resnet50_cifar.csv" "resnet rows differ"
[ "$(dump "$work/r.db")" = e65c5a6159227573c59a296a01171a06b6cd1604a6e75fe41e946cbd87f87887 ] ||
  fail "resnet placements differ"
echo ok
