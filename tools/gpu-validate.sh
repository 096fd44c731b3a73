#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CUDA backend's device checks on one GPU (docs/validation.md, "Method"
# and "Results"), run from a bundle made by tools/gpu-bundle.sh:
#  0 the device tests (every kernel kind measures; every operator kernel
#    against a CPU reference),
#  0b on >= 2 GPUs, test_cuda_overlap: a bf16 GEMM beside an NCCL
#    all-reduce / all-gather on another stream and the reverse, and the
#    overlap_gemm_slowdown they give (docs/validation.md, "Overlap slowdown"),
#  1 approf probe (GEMM and copy rates; on >= 2 GPUs the overlap points too),
#  2 per operator class, measured against analytic, with the operators' own
#    kernels and with the bandwidth stand-in (APPROF_CUDA_STANDIN=1), for
#    gpt2-small, llama-3-8b and resnet50 (bench_kernel_classes ops),
#  3 the per-shape GEMM table (bench_kernel_classes gemm),
#  4 measured sweeps of gpt2-small (4 layers), llama-3-8b (4 layers) and
#    resnet50 (16 layers), each beside the analytic sweep (approf compare),
#  5 a MoE layer's expert GEMMs as one grouped GEMM and as the strided batch
#    (APPROF_CUDA_GROUPED_GEMM=0) per class (bench_kernel_classes ops
#    mixtral), the optimizer step against its analytic price
#    (bench_kernel_classes adam), and a small mixtral's measured sweep
#    beside the analytic one: compute_cost (approf compare) and apply_cost
#    per entry (measured Adam step against Adam's bytes at the memory rate),
#  6 cuDNN's fused flash attention (backend ABI 14): test_cuda_sdpa (its
#    output against the CPU reference, forward and backward, f16 and bf16,
#    causal, GQA), then the attention class of llama-3-8b (GQA) and
#    llama-2-7b (MHA) with the fused kernel and with APPROF_CUDA_SDPA=0 (its
#    GEMMs, as before), and a bf16 llama sweep with it beside one with
#    APPROF_CUDA_SDPA=0 (approf compare). The module's stderr notes any
#    attention it left to the GEMMs.
# CUDA, cuBLASLt, cuDNN and NCCL are the machine's (the toolkit's lib64 and
# the nvidia-* Python packages). Results and databases go to $OUT (default
# /tmp/out). Usage: bash BUNDLE/gpu-validate.sh [HARDWARE [MODELS]]: HARDWARE
# the built-in spec to compare with (default h100-sxm), MODELS which of
# gpt, llama, rn (resnet50) sections 2 and 4 run, moe section 5, sdpa section 6
# (default all five).
set -u
G=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}
HW=${1:-h100-sxm}
MODELS=${2:-gpt llama rn moe sdpa}
want() { case " $MODELS " in *" $1 "*) return 0;; esac; return 1; }
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
B="$G/bench_kernel_classes"
t() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "[rc $rc, $(awk -v a="$s" -v b="$(date +%s.%N)" "BEGIN{printf \"%.2f\", b-a}") s] $*"; return $rc; }
echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
echo "== libraries"; ldd "$G/approf-cuda.so" | grep -E "not found|cudart|cublas|cudnn|nccl"; ldd "$A" | grep "not found"
echo "== 0 device tests"
t timeout 90 "$G/test_cuda_device" 2>&1 | grep -E "Test:|FAIL|asserts|tests |skip|dtype" | head -20
[ -x "$G/test_cuda_kernels" ] && t timeout 120 "$G/test_cuda_kernels" 2>&1 | grep -vE "passed$" | tail -40
[ -x "$G/test_cuda_sdpa" ] && t timeout 120 "$G/test_cuda_sdpa" 2>&1 | tee "$OUT/sdpa-test.txt" | tail -45
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ -x "$G/test_cuda_overlap" ] && [ "$NGPU" -ge 2 ]; then
  echo "== 0b GEMM beside an NCCL collective ($NGPU GPUs; overlap_gemm_slowdown)"
  t timeout 240 "$G/test_cuda_overlap" 2>&1 | tee "$OUT/overlap.txt" | tail -12
else
  echo "== 0b GEMM beside an NCCL collective: not run ($NGPU GPU(s); it needs 2)"
fi
echo "== 1 probe"; t timeout 180 "$A" probe --db "$OUT/probe.db" --max-bytes 256M 2>&1 | tail -16
echo "== 2 operator classes: the operators' kernels, then the stand-in"
for m in "gpt gpt2-small 4 16 bf16" "llama llama-3-8b 2 2 bf16" "resnet50 - 0 32 f32"; do
  case $m in gpt*) want gpt || continue;; llama*) want llama || continue;; *) want rn || continue;; esac
  t timeout 100 "$B" ops $m "$HW" 2>&1 | tee -a "$OUT/classes.txt"
  APPROF_CUDA_STANDIN=1 t timeout 100 "$B" ops $m "$HW" 2>&1 | tee -a "$OUT/classes.txt"
done
echo "== 3 GEMM per shape"; [ "$MODELS" = "gpt llama rn moe sdpa" ] && t timeout 100 "$B" gemm bf16 "$HW" 2>&1 | tee "$OUT/gemm.txt"
echo "== 4 measured sweeps beside analytic ones"
sw() { # name, then sweep options
  local n=$1; shift
  cp "$OUT/probe.db" "$OUT/$n-c.db"
  t timeout 150 "$A" sweep "$@" --backend cuda --quiet --db "$OUT/$n-c.db" 2>&1 | tail -3
  t timeout 60 "$A" sweep "$@" --backend model --hardware "$HW" --quiet --db "$OUT/$n-m.db" 2>&1 | tail -1
  t "$A" compare "$OUT/$n-c.db" "$OUT/$n-m.db" --no-plan 2>&1 | head -14
}
want gpt && sw gpt --model gpt --preset gpt2-small --layers 4 --cluster 1x8 --batch 16 --micro-batches 2
if want gpt; then
  cp "$OUT/probe.db" "$OUT/gpt-s.db"
  APPROF_CUDA_STANDIN=1 t timeout 60 "$A" sweep --model gpt --preset gpt2-small --layers 4 --cluster 1x8 \
    --batch 16 --micro-batches 2 --backend cuda --quiet --db "$OUT/gpt-s.db" 2>&1 | tail -1
  t "$A" compare "$OUT/gpt-s.db" "$OUT/gpt-m.db" --no-plan 2>&1 | sed -n 4,5p
fi
want llama && sw llama --model llama --preset llama-3-8b --num-layers 4 --layers 4 --cluster 1x4 --batch 8 --micro-batches 4
want rn && sw rn --model resnet50 --layers 16 --cluster 2x4 --micro-batches 16
if want moe; then
  echo "== 5 MoE expert GEMMs (grouped, then the strided batch) and the optimizer step"
  t timeout 120 "$B" ops mixtral mixtral-8x7b 1 2 bf16 "$HW" 2>&1 | tee -a "$OUT/moe.txt"
  APPROF_CUDA_GROUPED_GEMM=0 t timeout 120 "$B" ops mixtral mixtral-8x7b 1 2 bf16 "$HW" 2>&1 |
    grep -E "^#|expert" | tee -a "$OUT/moe.txt"
  for d in bf16 f32; do t timeout 60 "$B" adam $d "$HW" 2>&1 | tee -a "$OUT/adam.txt"; done
  sw moe --model mixtral --num-layers 2 --hidden 1024 --heads 8 --seq-len 1024 --vocab 32000 \
    --layers 2 --cluster 1x4 --batch 8 --micro-batches 4
  python3 - "$OUT/moe-c.db" "$OUT/moe-m.db" <<'PY'
import sqlite3, statistics, sys
c = sqlite3.connect(sys.argv[1])
c.execute("ATTACH ? AS m", (sys.argv[2],))
r = [a / b for a, b in c.execute(
    "SELECT x.apply_cost, y.apply_cost FROM stage_profile x JOIN m.stage_profile y USING "
    "(start_layer, end_layer, submesh_index, config_index, phase) WHERE x.status = 'ok' "
    "AND y.status = 'ok' AND x.phase = 1 AND x.apply_cost > 0 AND y.apply_cost > 0")]
if r:
    r.sort()
    print("apply_cost measured / analytic: %d entries, median %.3f, min %.3f, max %.3f"
          % (len(r), statistics.median(r), r[0], r[-1]))
else:
    print("apply_cost: no entries to compare")
PY
fi
if want sdpa; then
  echo "== 6 cuDNN fused attention: per class with it and with its GEMMs (APPROF_CUDA_SDPA=0)"
  for m in "llama llama-3-8b 2 2 bf16" "llama llama-2-7b 2 2 bf16" "llama llama-3-8b 2 2 f16"; do
    t timeout 100 "$B" ops $m "$HW" 2>&1 | grep -E "^#|attention|^total|approf-cuda" | tee -a "$OUT/sdpa.txt"
    APPROF_CUDA_SDPA=0 t timeout 100 "$B" ops $m "$HW" 2>&1 | grep -E "^#|attention|^total" |
      tee -a "$OUT/sdpa.txt"
  done
  L="--model llama --preset llama-3-8b --num-layers 4 --layers 4 --cluster 1x4 --batch 8"
  L="$L --micro-batches 4 --dtype bf16 --backend cuda --quiet"
  for v in 1 0; do
    cp "$OUT/probe.db" "$OUT/sdpa$v.db"
    APPROF_CUDA_SDPA=$v t timeout 150 "$A" sweep $L --db "$OUT/sdpa$v.db" 2>&1 | tail -3
  done
  t "$A" compare "$OUT/sdpa1.db" "$OUT/sdpa0.db" --no-plan 2>&1 | head -14 | tee -a "$OUT/sdpa.txt"
fi
rm -f "$OUT"/*.db-wal "$OUT"/*.db-shm "$OUT"/*-m.db "$OUT"/*-s.db "$OUT"/probe.db
gzip -f "$OUT"/*.db 2>/dev/null
ls -la "$OUT"
