#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Measured curves reach apsolve's full estimate: a data-parallel GPT on
# 2x8 is swept with the spec's alpha-beta model and again after importing
# an nccl-tests all-reduce curve for the 2x8 group that is 1000 times
# slower than any link; apsolve --parallel dp=16 prices its gradient
# synchronisation (the entries' apply_cost, hw/cost.c
# approf_stage_apply_seconds) from the curve: the apply-grad term grows to
# at least the curve's 1 ms floor.
# Usage: curves_apsolve.sh APPROF APSOLVE WORKDIR
set -euo pipefail
approf=$(realpath "$1") apsolve=$(realpath "$2") work=$3
. "$(dirname "$0")/../lib.sh"
fresh_dir "$work"; cd "$work" || fail "cd $work"

python3 - <<'PY'
with open("ar-2x8.log", "w") as f:
    f.write("# nThread 1 nGpus 8 minBytes 1 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20\n#\n# Using devices\n")
    for r in range(16):
        f.write("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] NVIDIA H100 80GB HBM3\n"
                % (r, 1000 + r, "node%d" % (r // 8), r % 8, r % 8 + 7))
    f.write("#\n# Collective test starting: all_reduce_perf\n")
    f.write("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
    f.write("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
    b = 1
    while b <= 1 << 32:
        us = 1000.0 + b / 50e6  # 50 MB/s: far below any link
        f.write("%12d  %12d     float     sum      -1  %.17g  %6.2f  %6.2f      0  %.17g  %6.2f  %6.2f      0\n"
                % (b, max(b // 4, 1), us, b / us / 1e3, b / us / 1e3, us, b / us / 1e3, b / us / 1e3))
        b *= 2
PY

sweep() { # sweep DB
  "$approf" sweep --model gpt --num-layers 2 --hidden 256 --heads 4 --seq-len 128 --vocab 1000 \
    --layers 1 --cluster 2x8 --batch 64 --micro-batches 2 --submesh-space manual:2x8 \
    --logical-space data_parallel_only --hardware h100-sxm --backend model --quiet \
    --db "$1" 2>"$1.err" || { cat "$1.err"; fail "sweep $1"; }
}
field() { # field DB KEY: the 3-D plan's breakdown value
  "$apsolve" --db "$1" --parallel dp=16,tp=1,pp=1 --format json --no-store --quiet |
    python3 -c "import json,sys; d=json.load(sys.stdin); p=[p for p in d['plans'] if p['kind']=='3d'][0]; print(repr(p['breakdown']['$2']))"
}
sweep plain.db
"$approf" hardware curves import ar-2x8.log --db slow.db --hardware h100-sxm 2>import.err ||
  fail_with import.err "import"
sweep slow.db
says_text slow.db.err "measured curve" "the sweep did not use the curve"
a0=$(field plain.db apply) a1=$(field slow.db apply)
p0=$(field plain.db pipeline) p1=$(field slow.db pipeline)
python3 - "$a0" "$a1" "$p0" "$p1" <<'PY' || fail "apply $a0 -> $a1, pipeline $p0 -> $p1"
import sys
a0, a1, p0, p1 = map(float, sys.argv[1:])
# the gradient all-reduce is priced from the curve: at least its 1 ms floor
assert a1 > a0 and a1 >= 1e-3, (a0, a1)
PY
echo "ok: apply-grad $a0 -> $a1 s with the imported 2x8 all-reduce curve"
