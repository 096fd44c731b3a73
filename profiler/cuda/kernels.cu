// SPDX-License-Identifier: Apache-2.0
//
// Small CUDA kernels of the approf-cuda module: the memory-bound stand-in
// for elementwise / reduction / gather / copy kernels, and a fill kernel.
// The bandwidth kernel reads every input element once (or each row of a
// gather in a scattered order) and writes every output element once, so its
// traffic equals the kernel's bytes; values are combined so the reads cannot
// be optimised away.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.h"

namespace {

__device__ inline float to_f(float v) { return v; }
__device__ inline float to_f(__half v) { return __half2float(v); }
__device__ inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ inline T from_f(float v);
template <> __device__ inline float from_f<float>(float v) { return v; }
template <> __device__ inline __half from_f<__half>(float v) { return __float2half(v); }
template <> __device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float v)
{
    return __float2bfloat16(v);
}

template <typename T>
__global__ void bw_kernel(const T *__restrict__ in, int64_t n_in, T *__restrict__ out,
                          int64_t n_out, int gather)
{
    int64_t total = n_in > n_out ? n_in : n_out;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t rows = n_in / 64;
    float acc = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        // 64-bit division is slow on GPUs: only broadcasts (i >= n_in) need it.
        int64_t src = i < n_in ? i : i % n_in;
        if (gather && rows > 1) {
            uint32_t h = (uint32_t)((uint64_t)(src >> 6) * 2654435761ull);
            int64_t row = rows <= 0xffffffffll ? (int64_t)(h % (uint32_t)rows) : (int64_t)h;
            src = row * 64 + (src & 63);
        }
        acc = acc * 0.5f + to_f(in[src]);
        if (i < n_out)
            out[i] = from_f<T>(acc);
    }
    // Keeps the reads past n_out live; practically never true.
    if (acc == 1234567.0f)
        out[0] = from_f<T>(acc);
}

// The fill kernels' pseudo-random bits of element i.
__device__ inline uint32_t fill_bits(int64_t i, uint32_t seed)
{
    uint32_t x = (uint32_t)i * 747796405u + seed;
    x ^= x >> 16;
    x *= 2246822519u;
    x ^= x >> 13;
    return x;
}

template <typename T> __global__ void fill_kernel(T *p, int64_t n, uint32_t seed)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = from_f<T>((float)(fill_bits(i, seed) & 0xffffu) / 32768.0f - 1.0f);
}

unsigned blocks_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    if (b < 1)
        b = 1;
    if (b > 65536)
        b = 65536;
    return (unsigned)b;
}

} // namespace

__global__ void fill_fp8_kernel(uint8_t *p, int64_t n, uint32_t seed)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    // sign 0, exponent below 1111: finite, never NaN
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = (uint8_t)(fill_bits(i, seed) & 0x77u);
}

extern "C" int approf_cuda_launch_fill_fp8(void *p, int64_t n, uint32_t seed, cudaStream_t stream)
{
    if (!p || n <= 0)
        return (int)cudaErrorInvalidValue;
    unsigned b = (unsigned)((n + 255) / 256 > 65536 ? 65536 : (n + 255) / 256);
    fill_fp8_kernel<<<b, 256, 0, stream>>>((uint8_t *)p, n, seed);
    return (int)cudaGetLastError();
}

extern "C" int approf_cuda_launch_bw(int dtype, int pattern, const void *in, int64_t n_in,
                                     void *out, int64_t n_out, cudaStream_t stream)
{
    int64_t total = n_in > n_out ? n_in : n_out;
    if (!in || !out || n_in <= 0 || n_out <= 0)
        return (int)cudaErrorInvalidValue;
    unsigned b = blocks_for(total);
    switch (dtype) {
    case 0:
        bw_kernel<float><<<b, 256, 0, stream>>>((const float *)in, n_in, (float *)out, n_out, pattern);
        break;
    case 1:
        bw_kernel<__half><<<b, 256, 0, stream>>>((const __half *)in, n_in, (__half *)out, n_out,
                                                 pattern);
        break;
    case 2:
        bw_kernel<__nv_bfloat16><<<b, 256, 0, stream>>>((const __nv_bfloat16 *)in, n_in,
                                                        (__nv_bfloat16 *)out, n_out, pattern);
        break;
    default:
        return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" int approf_cuda_launch_fill(int dtype, void *p, int64_t n, uint32_t seed,
                                       cudaStream_t stream)
{
    if (!p || n <= 0)
        return (int)cudaErrorInvalidValue;
    unsigned b = blocks_for(n);
    switch (dtype) {
    case 0: fill_kernel<float><<<b, 256, 0, stream>>>((float *)p, n, seed); break;
    case 1: fill_kernel<__half><<<b, 256, 0, stream>>>((__half *)p, n, seed); break;
    case 2: fill_kernel<__nv_bfloat16><<<b, 256, 0, stream>>>((__nv_bfloat16 *)p, n, seed); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
