// SPDX-License-Identifier: Apache-2.0
// Element access in f32 for the module's kernels (ops.cu, adam.cu): a load
// widens f16 and bf16 to float, a store narrows back. Included inside each
// file's anonymous namespace.
#ifndef APPROF_CUDA_DTYPE_ACCESS_CUH
#define APPROF_CUDA_DTYPE_ACCESS_CUH

__device__ inline float ld(const float *p, int64_t i) { return p[i]; }
__device__ inline float ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ inline float ld(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ inline void st(float *p, int64_t i, float v) { p[i] = v; }
__device__ inline void st(__half *p, int64_t i, float v) { p[i] = __float2half(v); }
__device__ inline void st(__nv_bfloat16 *p, int64_t i, float v) { p[i] = __float2bfloat16(v); }

#endif
