#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A sweep of an exported model file gives exactly the rows of the same sweep
# of the zoo model (entries and placements), and a model file built for
# another micro-batch size is refused with a message that says what to do.
# Usage: modelfile_equiv.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1 sqlite=$2 work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
sweep=(--layers 8 --cluster 1x4 --batch 64 --micro-batches 16 --backend model --quiet)

"$approf" model export resnet50 --dataset cifar10 --batch 4 >"$work/m.json" ||
  fail "model export"
"$approf" sweep --model resnet50 --dataset cifar10 "${sweep[@]}" --db "$work/zoo.db" \
  2>"$work/zoo.err" || fail_with "$work/zoo.err" "zoo sweep"
"$approf" sweep --model-file "$work/m.json" "${sweep[@]}" --db "$work/file.db" \
  2>"$work/file.err" || fail_with "$work/file.err" "model-file sweep"
for t in "stage_profile ORDER BY 1,2,3,4,5,6" "placement ORDER BY 1,2,3,4,5,6,7,8" \
         "model_layer ORDER BY 1,2"; do
  a=$("$sqlite" "$work/zoo.db" "SELECT * FROM $t")
  b=$("$sqlite" "$work/file.db" "SELECT * FROM $t")
  [ -n "$a" ] || fail "no rows in ${t%% *}"
  [ "$a" = "$b" ] || fail "${t%% *} differs between the zoo model and its model file"
done
sa=$("$sqlite" "$work/zoo.db" "SELECT signature FROM model")
sb=$("$sqlite" "$work/file.db" "SELECT signature FROM model")
[ "$sa" = "$sb" ] || fail "model signatures differ: $sa vs $sb"

# built for micro-batch 4, asked for 128/16 = 8
"$approf" sweep --model-file "$work/m.json" --layers 8 --cluster 1x4 --batch 128 \
  --micro-batches 16 --backend model --quiet --db "$work/bad.db" 2>"$work/bad.err"
rc=$?
[ $rc = 1 ] || fail "mismatched micro-batch: exit $rc, want 1"
says_text "$work/bad.err" "micro-batch of 4 samples" "message"
says_text "$work/bad.err" "--batch 8" "hint"
echo "ok: model file and zoo model give identical entries and placements"
