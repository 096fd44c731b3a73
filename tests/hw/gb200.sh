#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A sweep and apsolve on GB200 NVL72 end to end (docs/hardware.md): a small
# GPT on 4 trays of 4 GPUs (--cluster 4x4), once on the built-in
# gb200-nvl72 (one 72-GPU NVLink domain) and once on the same spec with
# scaleup_domain_gpus = 0 (each tray its own NCCL node, InfiniBand between
# trays). The data-parallel plan dp=16 prices its gradient all-reduce over
# the 4 trays at NVLink speed inside the domain, so its apply-grad is
# cheaper than on the flat copy; tensor parallelism across trays (tp=16)
# exists only where the domain makes it a node (Alpa's
# single_node_model_parallel space); apsolve's own search runs and stores a
# plan.
# Usage: gb200.sh APPROF APSOLVE WORKDIR
set -euo pipefail
approf=$(realpath "$1") apsolve=$(realpath "$2") work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"

"$approf" hardware show gb200-nvl72 >nvl72.spec || fail "hardware show"
grep -qx "scaleup_domain_gpus = 72" nvl72.spec || fail "show lacks scaleup_domain_gpus = 72"
"$approf" hardware show gb200-nvl72 --format json | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['scaleup_domain_gpus'] == 72 and d['gpus_per_host'] == 4, d
assert d['peak_tflops_fp4'] == 10000 and d['peak_tflops_bf16'] == 2500, d" ||
  fail "hardware show --format json: the domain or the Blackwell rates"
sed -e 's/^name = .*/name = gb200-flat/' -e 's/^scaleup_domain_gpus = .*/scaleup_domain_gpus = 0/' \
  nvl72.spec >flat.spec

sweep() { # sweep HARDWARE DB
  "$approf" sweep --model gpt --num-layers 2 --hidden 512 --heads 16 --seq-len 128 --vocab 1024 \
    --layers 1 --cluster 4x4 --batch 64 --micro-batches 2 --submesh-space manual:4x4 \
    --hardware "$1" --backend model --quiet --db "$2" 2>"$2.err" || { cat "$2.err"; fail "sweep $2"; }
}
field() { # field DB PARALLEL KEY: the 3-D plan's breakdown value, or "none" (apsolve
           # exits 3 on a plan that is not feasible)
  { "$apsolve" --db "$1" --parallel "$2" --format json --no-store --quiet 2>/dev/null || true; } |
    python3 -c "
import json, sys
d = json.load(sys.stdin)
p = [p for p in d['plans'] if p['kind'] == '3d' and 'breakdown' in p]
print(repr(p[0]['breakdown']['$3']) if p else 'none')"
}
sweep gb200-nvl72 nvl.db
sweep flat.spec flat.db
a_nvl=$(field nvl.db dp=16,tp=1,pp=1 apply) a_flat=$(field flat.db dp=16,tp=1,pp=1 apply)
g_nvl=$(field nvl.db dp=16,tp=1,pp=1 grad_sync) g_flat=$(field flat.db dp=16,tp=1,pp=1 grad_sync)
python3 - "$a_nvl" "$a_flat" "$g_nvl" "$g_flat" <<'PY' || fail "apply $a_nvl vs $a_flat, grad sync $g_nvl vs $g_flat"
import sys
a_nvl, a_flat, g_nvl, g_flat = map(float, sys.argv[1:])
# NVLink inside the domain (720 GB/s achievable) against the 4 trays'
# adapters (4 x 50 GB/s x 0.8): the all-reduce's bandwidth term is 4.5x
assert 0 < g_nvl and 2 * g_nvl < g_flat, (g_nvl, g_flat)
assert a_nvl < a_flat, (a_nvl, a_flat)
PY
t_nvl=$(field nvl.db dp=1,tp=16,pp=1 pipeline) t_flat=$(field flat.db dp=1,tp=16,pp=1 pipeline)
[ "$t_nvl" != none ] || fail "tp=16 over 4 trays has no plan inside the NVL72 domain"
[ "$t_flat" = none ] || fail "tp=16 across trays without a domain: got $t_flat"
# apsolve's own search on the domain: a plan, stored
"$apsolve" --db nvl.db >solve.out 2>solve.err || fail_with solve.err "apsolve"
says_text solve.out "Stored as plan" "apsolve stored no plan"
echo "ok: dp=16 grad sync $g_nvl s inside the domain, $g_flat s tray by tray; tp=16 pipeline $t_nvl s"
