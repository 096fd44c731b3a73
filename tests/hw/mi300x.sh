#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A sweep and apsolve on AMD MI300X end to end (docs/hardware.md): a small
# GPT on 2 hosts of 8 GPUs (--cluster 2x8), once on the built-in mi300x
# (the host a switchless full mesh of Infinity Fabric links) and once on
# the same spec with intra_host_full_mesh = 0 (an NVSwitch host of the
# same 448 GB/s a GPU). A tensor-parallel pair (tp=2) reaches its partner
# over one of the 7 links, so its plan costs more on the mesh; tp=8
# uses all 7 links of every GPU and costs the same on both; apsolve's own
# search runs and stores a plan.
# Usage: mi300x.sh APPROF APSOLVE APREPORT WORKDIR
set -euo pipefail
approf=$(realpath "$1") apsolve=$(realpath "$2") apreport=$(realpath "$3") work=$4
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"

"$approf" hardware show mi300x >mi300x.spec || fail "hardware show"
grep -qx "intra_host_full_mesh = 1" mi300x.spec || fail "show lacks intra_host_full_mesh = 1"
grep -qx "peak_tflops_bf16 = 1307.4" mi300x.spec || fail "show lacks the BF16 peak"
grep -qx "intra_host_bandwidth_gbs = 448" mi300x.spec || fail "show lacks 7 x 64 GB/s"
"$approf" hardware show mi300x --format json | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['intra_host_full_mesh'] == 1 and d['gpus_per_host'] == 8, d
assert d['peak_tflops_fp8'] == 2614.9 and d['peak_tflops_bf16'] == 1307.4, d" ||
  fail "hardware show --format json: the mesh or the MI300X rates"
sed -e 's/^name = .*/name = mi300x-switch/' -e 's/^intra_host_full_mesh = .*/intra_host_full_mesh = 0/' \
  mi300x.spec >switch.spec

sweep() { # sweep HARDWARE DB
  "$approf" sweep --model gpt --num-layers 2 --hidden 512 --heads 16 --seq-len 128 --vocab 1024 \
    --layers 1 --cluster 2x8 --batch 64 --micro-batches 2 --submesh-space manual:2x8 \
    --hardware "$1" --backend model --quiet --db "$2" 2>"$2.err" || { cat "$2.err"; fail "sweep $2"; }
}
field() { # field DB PARALLEL KEY: the 3-D plan's value, or "none"
  { "$apsolve" --db "$1" --parallel "$2" --format json --no-store --quiet 2>/dev/null || true; } |
    python3 -c "
import json, sys
d = json.load(sys.stdin)
p = [p for p in d['plans'] if p['kind'] == '3d' and p.get('feasible')]
print(repr(p[0]['$3']) if p else 'none')"
}
sweep mi300x mesh.db
sweep switch.spec switch.db
# FP8 (docs/fp8.md, "AMD MI300X"): the spec has an FP8 peak, --fp8 runs
"$approf" sweep --model gpt --num-layers 2 --hidden 512 --heads 16 --seq-len 128 --vocab 1024 \
  --layers 1 --cluster 2x8 --batch 64 --micro-batches 2 --submesh-space manual:2x8 \
  --hardware mi300x --fp8 --quiet --db fp8.db 2>fp8.err || fail_with fp8.err "sweep --fp8 on mi300x"
# total_cost (pipeline and apply): the sharding solver of a stage may trade
# a pipeline share for apply-grad work when communication costs more
p2_mesh=$(field mesh.db dp=8,tp=2,pp=1 total_cost) p2_sw=$(field switch.db dp=8,tp=2,pp=1 total_cost)
p8_mesh=$(field mesh.db dp=2,tp=8,pp=1 total_cost) p8_sw=$(field switch.db dp=2,tp=8,pp=1 total_cost)
python3 - "$p2_mesh" "$p2_sw" "$p8_mesh" "$p8_sw" <<'PY' ||
import sys
p2_mesh, p2_sw, p8_mesh, p8_sw = map(float, sys.argv[1:])
# tp=2: one 64 GB/s link against the switch's 448 GB/s
assert 0 < p2_sw < p2_mesh, (p2_mesh, p2_sw)
# tp=8: all 7 links, the same price
assert abs(p8_mesh - p8_sw) <= 1e-9 * p8_sw, (p8_mesh, p8_sw)
PY
  fail "tp=2 total $p2_mesh (mesh) vs $p2_sw (switch); tp=8 $p8_mesh vs $p8_sw"
"$apsolve" --db mesh.db >solve.out 2>solve.err || fail_with solve.err "apsolve"
says_text solve.out "Stored as plan" "apsolve stored no plan"
# apreport's resharding task between two stages of one host: a transfer
# between two GPUs takes one link on the mesh (costdb_intra_bandwidth), the
# switch's whole bandwidth on NVSwitch
for h in mi300x switch.spec; do
  "$approf" sweep --model gpt --num-layers 2 --hidden 512 --heads 16 --seq-len 128 --vocab 1024 \
    --layers 2 --cluster 1x8 --batch 64 --micro-batches 2 --hardware "$h" --backend model \
    --quiet --db "host-$h.db" 2>"host-$h.err" || fail_with "host-$h.err" "1x8 sweep on $h"
  "$apsolve" --db "host-$h.db" --parallel dp=2,tp=2,pp=2 --quiet >/dev/null 2>"host-$h.err" ||
    fail_with "host-$h.err" "apsolve --parallel dp=2,tp=2,pp=2 on $h"
  "$apreport" --db "host-$h.db" --out "rep-$h" --export none --quiet 2>"host-$h.err" ||
    fail_with "host-$h.err" "apreport on $h"
done
python3 - rep-mi300x/report.json rep-switch.spec/report.json <<'PY' ||
import json, sys
mesh, sw = (sum(t["seconds"] for t in json.load(open(p))["resharding_tasks"]) for p in sys.argv[1:])
assert 0 < sw < mesh, (mesh, sw)
PY
  fail "apreport's resharding tasks: the mesh's one link is not slower than the switch"
echo "ok: tp=2 total $p2_mesh s on the mesh, $p2_sw s on a switch; tp=8 $p8_mesh s on both"
