#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --variants auto, the default (docs/variants.md, "The default space"): a
# model whose training state does not fit one device gets the whole space,
# one whose state fits gets Alpa's plain space with ZeRO 0-3, each said; an explicit
# --variants or variant option is obeyed without the rule.
# Usage: variants_auto.sh APPROF SQLITE3 WORKDIR
set -u
approf=$1 sqlite=$2 work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"
levels() { "$sqlite" "$1" "SELECT max(memory_level), max(zero), max(recompute != 'none') FROM sweep_config"; }

# Llama-3-8B's shape with 8 blocks: about 2.8e9 parameters, 42 GiB of
# state in mixed precision, more than an A100-40GB holds
"$approf" sweep --model llama --preset llama-3-8b --num-layers 8 --layers 2 --cluster 1x4 \
  --hardware a100-40g --micro-batches 4 --backend model --db "$work/l.db" 2>"$work/l.err" ||
  fail_with "$work/l.err" "llama sweep"
says_text "$work/l.err" "the whole search space (--variants all" "llama: auto"
says_text "$work/l.err" "does not fit its 39.0 GiB" "llama: auto"
[ "$(levels "$work/l.db")" = "2|3|1" ] || fail "llama: the whole space was not profiled ($(levels "$work/l.db"))"

# ResNet-50's 0.4 GiB fit: the plain space with ZeRO 0-3, said
"$approf" sweep --model resnet50 --layers 4 --cluster 1x4 --micro-batches 4 --backend model \
  --db "$work/r.db" 2>"$work/r.err" || fail_with "$work/r.err" "resnet sweep"
says_text "$work/r.err" "Alpa's plain space with ZeRO 0-3" "resnet: auto"
says_text "$work/r.err" "training state, 0.4 GiB whole on one device" "resnet: auto"
[ "$(levels "$work/r.db")" = "0|3|0" ] || fail "resnet: not the plain space with ZeRO 0-3 ($(levels "$work/r.db"))"

# what the user gives is obeyed, without the rule's notice
"$approf" sweep --model llama --preset llama-3-8b --num-layers 8 --layers 2 --cluster 1x4 \
  --hardware a100-40g --micro-batches 4 --backend model --variants alpa --db "$work/a.db" \
  2>"$work/a.err" || fail_with "$work/a.err" "llama --variants alpa"
! grep -Fq "search space" "$work/a.err" || fail_with "$work/a.err" "llama --variants alpa: the rule spoke"
[ "$(levels "$work/a.db")" = "0|0|0" ] || fail "llama --variants alpa: variants profiled"
"$approf" sweep --model llama --preset llama-3-8b --num-layers 8 --layers 2 --cluster 1x4 \
  --hardware a100-40g --micro-batches 4 --backend model --zero 0,3 --db "$work/z.db" \
  2>"$work/z.err" || fail_with "$work/z.err" "llama --zero 0,3"
! grep -Fq "search space" "$work/z.err" || fail_with "$work/z.err" "llama --zero 0,3: the rule spoke"
[ "$(levels "$work/z.db")" = "0|3|0" ] || fail "llama --zero 0,3: not what was asked"
echo "variants auto: ok"
