#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The backend fallback notice (docs/reliability.md, "Backend fallback"): on
# a machine without a GPU (no /dev/nvidiactl), a sweep with the default
# backend uses the analytic model without a notice (the summary's "backend
# model" says it), once per sweep or per run; an explicit --backend auto
# says it once per run, --backend model never. Skipped on a GPU machine,
# where the fallback depends on the driver.
# Usage: backend_notice.sh APPROF WORKDIR
set -euo pipefail
approf=$(realpath "$1") work=$2
. "$(dirname "$0")/../lib.sh"
[ -e /dev/nvidiactl ] && { echo "SKIP: this machine has a GPU device node"; exit 77; }
fresh_dir "$work"; cd "$work" || fail "cd $work"
small=(--model mlp --layers 2 --quiet)

# default backend, two micro-batch sizes (two sweeps in one run): no notice
"$approf" sweep "${small[@]}" --micro-batch-sizes 1024,2048 --db d.db >/dev/null 2>err ||
  fail_with err "default backend"
! grep -Eq "analytic model|no GPU|no CUDA" err || { cat err; fail "default backend: a fallback notice"; }
[ "$(grep -c "^ - backend model on a100-40g" err)" = 2 ] ||
  { cat err; fail "default backend: each sweep's summary names backend model"; }

# --backend auto given: one notice for the run, naming the hardware it prices
"$approf" sweep "${small[@]}" --micro-batch-sizes 1024,2048 --backend auto --db a.db \
  >/dev/null 2>err || fail_with err "--backend auto"
[ "$(grep -c "using the analytic model of 'a100-40g'" err)" = 1 ] ||
  { cat err; fail "--backend auto: one fallback notice"; }

# --backend model: never
"$approf" sweep "${small[@]}" --micro-batches 1 --backend model --db m.db >/dev/null 2>err ||
  fail_with err "--backend model"
! grep -q "analytic model" err || { cat err; fail "--backend model: a fallback notice"; }
echo "backend notice: ok"
