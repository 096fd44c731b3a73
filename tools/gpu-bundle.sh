#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds what the CUDA backend's device checks need into one folder that
# can travel to a GPU machine without a toolchain (docs/validation.md,
# "Method"): approf (release; no CBC, MPI or ONNX, so that its only
# libraries are SQLite, libcsv and jansson, copied into lib/), the module
# approf-cuda.so (CUDA, cuBLASLt, cuDNN and NCCL come from the GPU
# machine), the device tests, bench_kernel_classes and tools/gpu-validate.sh.
# Usage: tools/gpu-bundle.sh [BUNDLE_DIR]   (default .gpu; build in build-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.gpu}
[ -d build-gpu ] || meson setup build-gpu --buildtype=release -Dmpi=disabled -Dcbc=disabled \
  -Donnx=disabled -Dcuda=enabled >/dev/null
ninja -C build-gpu profiler/cli/approf profiler/cuda/approf-cuda.so tests/cuda/test_cuda_device \
  bench/bench_kernel_classes >/dev/null
ninja -C build-gpu tests/cuda/test_cuda_kernels >/dev/null 2>&1 || echo 'no test_cuda_kernels' >&2
ninja -C build-gpu tests/cuda/test_cuda_sdpa >/dev/null 2>&1 || echo 'no test_cuda_sdpa' >&2
ninja -C build-gpu tests/cuda/test_cuda_overlap >/dev/null 2>&1 || echo 'no test_cuda_overlap' >&2
rm -rf "$out"
mkdir -p "$out/lib"
cp build-gpu/profiler/cli/approf build-gpu/profiler/cuda/approf-cuda.so \
  build-gpu/tests/cuda/test_cuda_device build-gpu/bench/bench_kernel_classes \
  tools/gpu-validate.sh "$out/"
[ -x build-gpu/tests/cuda/test_cuda_kernels ] && cp build-gpu/tests/cuda/test_cuda_kernels "$out/"
[ -x build-gpu/tests/cuda/test_cuda_sdpa ] && cp build-gpu/tests/cuda/test_cuda_sdpa "$out/"
[ -x build-gpu/tests/cuda/test_cuda_overlap ] && cp build-gpu/tests/cuda/test_cuda_overlap "$out/"
for bin in "$out/approf" "$out/test_cuda_device" "$out/bench_kernel_classes"; do
  ldd "$bin" | awk '/=> \// { print $3 }' | grep -E 'libsqlite3|libcsv|libjansson|libcunit' |
    while read -r lib; do cp -L "$lib" "$out/lib/"; done
done
echo "$out: $(du -sh "$out" | cut -f1); on the GPU machine: bash $out/gpu-validate.sh (results in \$OUT)"
