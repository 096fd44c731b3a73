#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CUDA backend's device checks on one GPU (docs/validation.md, "Method"
# and "Results"), run from a bundle made by tools/gpu-bundle.sh: the device
# test, approf probe, a gpt2-small sweep measured twice and analytically
# (repeatability, composition, analytic against measured: approf compare),
# the same against gpt3-1.3b, and the resnet50 16-layer 2x4 sweep with its
# time (about 2.5 minutes on an H100). CUDA, cuBLASLt, cuDNN
# and NCCL are the machine's (the toolkit's lib64 and the nvidia-* Python
# packages). Results and databases go to $OUT (default /tmp/out).
# Usage: bash BUNDLE/gpu-validate.sh
set -u
G=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
CL=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && CL="$CL:$d"; done
for d in $(python3 -c 'import nvidia,os
for p in nvidia.__path__:
  for d in os.listdir(p):
    q=os.path.join(p,d,"lib")
    if os.path.isdir(q): print(q)' 2>/dev/null); do CL="$CL:$d"; done
export LD_LIBRARY_PATH="$G/lib$CL"
export APPROF_MODULE_DIR="$G"
A="$G/approf"
t() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "[rc $rc, $(awk -v a="$s" -v b="$(date +%s.%N)" "BEGIN{printf \"%.2f\", b-a}") s] $*"; return $rc; }
echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
echo "== libraries"; ldd "$G/approf-cuda.so" | grep -E "not found|cudart|cublas|cudnn|nccl"; ldd "$A" | grep "not found"
echo "== 0 device test"; t timeout 90 "$G/test_cuda_device" 2>&1 | grep -E "Test:|FAIL|asserts|tests |skip" | head -20
echo "== 1 probe"; t timeout 150 "$A" probe --db "$OUT/probe.db" --max-bytes 1G 2>&1 | tail -25
H=$(echo "SELECT id FROM hardware ORDER BY id DESC LIMIT 1;" | python3 -c 'import sqlite3,sys;c=sqlite3.connect(sys.argv[1]);print(c.execute(sys.stdin.read()).fetchone()[0])' "$OUT/probe.db" 2>/dev/null)
python3 - "$OUT/probe.db" <<'PY' 2>&1 | head -40
import sqlite3,sys
c=sqlite3.connect(sys.argv[1])
for t in ("hardware","compute_profile"):
    cols=[r[1] for r in c.execute("pragma table_info(%s)"%t)]
    print("--",t,cols)
    for r in c.execute("select * from %s limit 40"%t): print(r)
PY
G1=(--model gpt --preset gpt2-small --layers 4 --cluster 1x8 --batch 16 --micro-batches 2 --quiet)
echo "== 3 repeatability (gpt2-small 4 layers 1x8, twice)"
cp "$OUT/probe.db" "$OUT/gpt-a.db"; cp "$OUT/probe.db" "$OUT/gpt-b.db"
t timeout 120 "$A" sweep "${G1[@]}" --backend cuda --db "$OUT/gpt-a.db" 2>&1 | tail -6
t timeout 120 "$A" sweep "${G1[@]}" --backend cuda --db "$OUT/gpt-b.db" 2>&1 | tail -3
t timeout 60 "$A" sweep "${G1[@]}" --backend model --hardware h100-sxm --db "$OUT/gpt-m.db" 2>&1 | tail -2
t "$A" compare "$OUT/gpt-a.db" "$OUT/gpt-b.db" --no-plan 2>&1 | tail -25
echo "== 5 analytic against measured (gpt2-small)"
t "$A" compare "$OUT/gpt-a.db" "$OUT/gpt-m.db" --no-plan 2>&1 | tail -30
t "$A" compare "$OUT/gpt-a.db" "$OUT/gpt-m.db" --no-plan --format csv > "$OUT/gpt-compare.csv" 2>&1
echo "== 5b analytic against measured (gpt3-1.3b: larger GEMMs)"
G2=(--model gpt --preset gpt3-1.3b --layers 4 --cluster 1x8 --batch 16 --micro-batches 2 --quiet)
t timeout 200 "$A" sweep "${G2[@]}" --backend cuda --db "$OUT/g13-c.db" 2>&1 | tail -2
t timeout 60 "$A" sweep "${G2[@]}" --backend model --hardware h100-sxm --db "$OUT/g13-m.db" 2>&1 | tail -1
t "$A" compare "$OUT/g13-c.db" "$OUT/g13-m.db" --no-plan 2>&1 | head -12
t "$A" compare "$OUT/g13-c.db" "$OUT/g13-m.db" --no-plan --format csv > "$OUT/g13-compare.csv" 2>&1
echo "== 7 resnet50 16 layers 2x4 sweep time"
cp "$OUT/probe.db" "$OUT/rn-c.db"
t timeout 240 "$A" sweep --model resnet50 --layers 16 --cluster 2x4 --backend cuda --quiet --db "$OUT/rn-c.db" 2>&1 | tail -6
t timeout 60 "$A" sweep --model resnet50 --layers 16 --cluster 2x4 --backend model --hardware h100-sxm --quiet --db "$OUT/rn-m.db" 2>&1 | tail -2
t "$A" compare "$OUT/rn-c.db" "$OUT/rn-m.db" --no-plan 2>&1 | tail -30
t "$A" compare "$OUT/rn-c.db" "$OUT/rn-m.db" --no-plan --format csv > "$OUT/rn-compare.csv" 2>&1
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm
ls -la "$OUT"
