#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A sweep priced with Megatron-Core's fused SwiGLU (approf sweep
# --activation-fusion, docs/models.md) says so in its options, and the
# launch files of the frameworks with an eager MLP (torchtitan, DeepSpeed)
# say that the run keeps more than was priced; Megatron-LM's file says
# nothing (it fuses by default). Without the option: no key, no note.
# Usage: activation_fusion.sh APPROF APSOLVE APREPORT SQLITE3
set -eu
approf=$1 apsolve=$2 apreport=$3 sqlite=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/../lib.sh"
for form in fused eager; do
  db=$dir/$form.db
  flag=
  [ "$form" = fused ] && flag=--activation-fusion
  "$approf" sweep --model llama --num-layers 2 --hidden 256 --heads 4 --seq-len 128 --vocab 1000 \
    --manual-boundaries --manual-layers --cluster 1x2 --batch 8 --micro-batches 2 --dtype bf16 \
    $flag --backend model --hardware a100-40g --db "$db" --quiet >/dev/null 2>"$dir/sweep.err" ||
    fail_with "$dir/sweep.err" "sweep ($form)"
  opts=$("$sqlite" "$db" "SELECT options FROM sweep WHERE id = 1")
  "$apsolve" --db "$db" --quiet --parallel dp=2,tp=1,pp=1 >/dev/null 2>"$dir/solve.err" ||
    fail_with "$dir/solve.err" "apsolve ($form)"
  "$apreport" --db "$db" --out "$dir/$form" --name p --quiet 2>"$dir/rep.err" ||
    fail_with "$dir/rep.err" "apreport ($form)"
  note="priced with Megatron-Core's fused SwiGLU"
  if [ "$form" = fused ]; then
    case $opts in *'"activation_fusion":1'*) ;; *) fail "fused sweep's options lack it: $opts" ;; esac
    grep -q "$note" "$dir/$form/p_torchtitan.toml" || fail "torchtitan: no note"
    grep -q "$note" "$dir/$form/p_deepspeed.json" || fail "deepspeed: no note"
    grep -q "$note" "$dir/$form/p_megatron.args" && fail "megatron: a note"
  else
    case $opts in *activation_fusion*) fail "eager sweep's options name it: $opts" ;; esac
    grep -q "$note" "$dir/$form/p_torchtitan.toml" "$dir/$form/p_deepspeed.json" &&
      fail "eager: a note"
  fi
done
echo "activation fusion: the options and the launch files' notes ok"
