#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fused attention's graphs against cuDNN without a GPU (cuDNN 9.8 on:
# a device described in JSON): heuristics return an engine for each graph
# and the engine compiles its kernel for an H100 (sm_90); only loading it
# needs a driver. The toolkit's stub libcuda stands in for the driver
# library cuDNN loads (its calls fail, so loading the kernel fails, which
# test_cuda_sdpa counts as compiled). The JSON holds an H100 SXM's public
# properties in the fields cuDNN 9.19's device property reader asks for.
# Usage: sdpa_deviceless.sh TEST_BINARY STUB_LIBCUDA DEVICE_JSON
# Exit 77 (skipped) without the stub.
set -u
bin=$1 stub=$2 json=$3
[ -f "$stub" ] || { echo "no stub libcuda at $stub: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ln -s "$stub" "$dir/libcuda.so.1"
# Under ASan: LeakSanitizer reports blocks that cuDNN's runtime compiler
# (NVRTC, loaded and unloaded by cuDNN) keeps, in a module gone by exit,
# so no suppression can name it; our descriptors' lifetimes are checked
# with leak detection on by cuda-sdpa-descriptors (the same code without
# the compiler).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" deviceless "$json"
