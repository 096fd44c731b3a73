// SPDX-License-Identifier: Apache-2.0
//
// The memory-bound operators of the approf-cuda module, forward and
// backward, as op_shape.h documents them. Each is written the way the
// frameworks' own kernels are organised, so that its time is that of the
// same memory traffic and the same reductions:
// - row-wise norms, softmax and cross-entropy: one thread block per row, a
//   first pass of block reductions and a second pass that writes (Apex's
//   fused_layer_norm_cuda and Megatron's fused softmax / vocab-parallel
//   cross-entropy do the same passes);
// - the parameter gradients of a norm, a bias, a broadcast operand: column
//   sums in f32 over row chunks, chunk results added atomically (Apex's
//   cuComputePartGradGammaBeta computes partial column sums and reduces
//   them in a second kernel);
// - batch norm: per-channel sums over the batch and the image in chunks,
//   then an elementwise pass (cuDNN's spatial batch norm, two passes);
// - embedding and pooling gradients: a zero fill, then a scatter-add
//   (PyTorch's embedding_dense_backward and max_pool2d backward write a
//   zeroed gradient);
// - elementwise kinds: one grid-stride pass.
// Ids and labels are read modulo the table rows or the vocabulary: the
// module places every kernel of a phase at the start of one arena, so a
// later kernel may have overwritten what approf_cuda_op_init wrote.
// Rows, elementwise passes and broadcasts step 16 bytes per thread where the
// sizes allow it (PyTorch's vectorised elementwise kernels and Apex's norms
// do), scalar elements otherwise; softmax and cross-entropy find a row's
// maximum and sum in one online pass. Batch norm, pooling, rotary and the
// scatter-adds are scalar: what they measure is an upper bound on what
// tuned kernels (cuDNN's batch norm, PyTorch's) take; docs/validation.md
// keeps the comparison.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.h"

namespace {

#include "dtype_access.cuh"

// V consecutive elements: one 16-byte access when V > 1 (the caller checks
// alignment: every array starts at 256 bytes and the row length or count is
// a multiple of V), V scalar accesses otherwise. PyTorch's elementwise and
// Apex's norm kernels load vectors the same way.
template <typename T, int V> struct Pack {
    float v[V];
};
template <typename T, int V> __device__ inline Pack<T, V> ldv(const T *p, int64_t i)
{
    Pack<T, V> r;
    if (V == 1) {
        r.v[0] = ld(p, i);
    } else {
        uint4 u = *reinterpret_cast<const uint4 *>(p + i);
        const T *t = reinterpret_cast<const T *>(&u);
#pragma unroll
        for (int j = 0; j < V; j++)
            r.v[j] = ld(t, j);
    }
    return r;
}
template <typename T, int V> __device__ inline void stv(T *p, int64_t i, const float *v)
{
    if (V == 1) {
        st(p, i, v[0]);
    } else {
        uint4 u;
        T *t = reinterpret_cast<T *>(&u);
#pragma unroll
        for (int j = 0; j < V; j++)
            st(t, j, v[j]);
        *reinterpret_cast<uint4 *>(p + i) = u;
    }
}
template <typename T> constexpr int vec_of() { return (int)(16 / sizeof(T)); }

// A row of C in steps of V per thread.
#define FOR_ROW(c) for (int64_t c = (int64_t)threadIdx.x * V; c < C; c += (int64_t)blockDim.x * V)

__device__ inline uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

// Sum (max when is_max) over the block; blockDim.x a multiple of 32, at
// most 1024. sh holds 32 floats. Every thread gets the result.
__device__ float block_reduce(float v, float *sh, bool is_max)
{
    for (int o = 16; o; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    int w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = blockDim.x >> 5;
    __syncthreads();
    if (l == 0)
        sh[w] = v;
    __syncthreads();
    v = l < nw ? sh[l] : (is_max ? -INFINITY : 0.0f);
    for (int o = 16; o; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    return v;
}

// ---- norms ------------------------------------------------------------------

template <typename T, int V>
__global__ void norm_fwd(const T *x, T *y, const T *gamma, const T *beta, float *mean,
                         float *rstd, int64_t C, bool rms)
{
    __shared__ float sh[32];
    int64_t row = blockIdx.x;
    const T *xr = x + row * C;
    float s = 0, s2 = 0;
    FOR_ROW(c) {
        Pack<T, V> a = ldv<T, V>(xr, c);
#pragma unroll
        for (int j = 0; j < V; j++) {
            s += a.v[j];
            s2 += a.v[j] * a.v[j];
        }
    }
    s = block_reduce(s, sh, false);
    s2 = block_reduce(s2, sh, false);
    float mu = rms ? 0.0f : s / (float)C;
    float var = s2 / (float)C - mu * mu;
    float r = rsqrtf(fmaxf(var, 0.0f) + 1e-5f);
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
    FOR_ROW(c) {
        Pack<T, V> a = ldv<T, V>(xr, c), g = ldv<T, V>(gamma, c), b;
        if (!rms)
            b = ldv<T, V>(beta, c);
        float o[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            o[j] = (a.v[j] - mu) * r * g.v[j] + (rms ? 0.0f : b.v[j]);
        stv<T, V>(y, row * C + c, o);
    }
}

template <typename T, int V>
__global__ void norm_bwd_dx(const T *x, const T *dy, T *dx, const T *gamma, const float *mean,
                            const float *rstd, int64_t C, bool rms)
{
    __shared__ float sh[32];
    int64_t row = blockIdx.x, o = row * C;
    float mu = mean[row], r = rstd[row], s1 = 0, s2 = 0;
    FOR_ROW(c) {
        Pack<T, V> d = ldv<T, V>(dy, o + c), w = ldv<T, V>(gamma, c), a = ldv<T, V>(x, o + c);
#pragma unroll
        for (int j = 0; j < V; j++) {
            float g = d.v[j] * w.v[j];
            s1 += g;
            s2 += g * (a.v[j] - mu) * r;
        }
    }
    s1 = rms ? 0.0f : block_reduce(s1, sh, false);
    s2 = block_reduce(s2, sh, false);
    FOR_ROW(c) {
        Pack<T, V> d = ldv<T, V>(dy, o + c), w = ldv<T, V>(gamma, c), a = ldv<T, V>(x, o + c);
        float out[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            out[j] = r * (d.v[j] * w.v[j] - (s1 + (a.v[j] - mu) * r * s2) / (float)C);
        stv<T, V>(dx, o + c, out);
    }
}

// Column sums over row chunks: blocks of 32 columns x 8 row lanes; mode 0
// sums dy (a bias), 1 dy * a (a broadcast product), 2 dy * xhat and dy
// (a norm's gamma and beta, into acc and acc2).
template <typename T>
__global__ void col_sums(const T *dy, const T *a, const float *mean, const float *rstd,
                         int64_t R, int64_t C, int mode, float *acc, float *acc2)
{
    __shared__ float s1[8][33], s2[8][33];
    int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    float v1 = 0, v2 = 0;
    if (c < C) {
        for (int64_t r = (int64_t)blockIdx.y * 8 + threadIdx.y; r < R; r += (int64_t)gridDim.y * 8) {
            float g = ld(dy, r * C + c);
            if (mode == 0)
                v1 += g;
            else if (mode == 1)
                v1 += g * ld(a, r * C + c);
            else {
                v1 += g * (ld(a, r * C + c) - mean[r]) * rstd[r];
                v2 += g;
            }
        }
    }
    s1[threadIdx.y][threadIdx.x] = v1;
    s2[threadIdx.y][threadIdx.x] = v2;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        for (int i = 1; i < 8; i++) {
            v1 += s1[i][threadIdx.x];
            v2 += s2[i][threadIdx.x];
        }
        atomicAdd(&acc[c], v1);
        if (acc2)
            atomicAdd(&acc2[c], v2);
    }
}

// ---- softmax, cross-entropy, global pool --------------------------------------

// Row maximum and sum of exp(x - max) in one pass (the online softmax of
// Milakov & Gimelshein 2018, as Megatron's fused softmax and FlashAttention
// use): each thread keeps its own running pair, the block merges them.
template <typename T, int V>
__device__ void row_max_sum(const T *xr, int64_t C, float *sh, float *m_out, float *s_out)
{
    float m = -INFINITY, s = 0;
    FOR_ROW(c) {
        Pack<T, V> a = ldv<T, V>(xr, c);
#pragma unroll
        for (int j = 0; j < V; j++) {
            if (a.v[j] > m) {
                s = s * __expf(m - a.v[j]) + 1.0f;
                m = a.v[j];
            } else {
                s += __expf(a.v[j] - m);
            }
        }
    }
    float bm = block_reduce(m, sh, true);
    s = m == -INFINITY ? 0.0f : s * __expf(m - bm);
    *s_out = block_reduce(s, sh, false);
    *m_out = bm;
}

template <typename T, int V> __global__ void softmax_fwd(const T *x, T *y, int64_t C)
{
    __shared__ float sh[32];
    int64_t o = (int64_t)blockIdx.x * C;
    float m, s;
    row_max_sum<T, V>(x + o, C, sh, &m, &s);
    float inv = 1.0f / s;
    FOR_ROW(c) {
        Pack<T, V> a = ldv<T, V>(x, o + c);
        float out[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            out[j] = __expf(a.v[j] - m) * inv;
        stv<T, V>(y, o + c, out);
    }
}

template <typename T, int V> __global__ void softmax_bwd(const T *y, const T *dy, T *dx, int64_t C)
{
    __shared__ float sh[32];
    int64_t o = (int64_t)blockIdx.x * C;
    float s = 0;
    FOR_ROW(c) {
        Pack<T, V> a = ldv<T, V>(y, o + c), d = ldv<T, V>(dy, o + c);
#pragma unroll
        for (int j = 0; j < V; j++)
            s += a.v[j] * d.v[j];
    }
    s = block_reduce(s, sh, false);
    FOR_ROW(c) {
        Pack<T, V> a = ldv<T, V>(y, o + c), d = ldv<T, V>(dy, o + c);
        float out[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            out[j] = a.v[j] * (d.v[j] - s);
        stv<T, V>(dx, o + c, out);
    }
}

template <typename T, int V>
__global__ void xent_fwd(const T *x, float *loss, const int32_t *label, float *lse, int64_t C)
{
    __shared__ float sh[32];
    int64_t row = blockIdx.x, o = row * C;
    float m, s;
    row_max_sum<T, V>(x + o, C, sh, &m, &s);
    if (threadIdx.x == 0) {
        float l = m + __logf(s);
        lse[row] = l;
        loss[row] = l - ld(x, o + (uint32_t)label[row] % (uint32_t)C);
    }
}

template <typename T, int V>
__global__ void xent_bwd(const T *x, T *dx, const int32_t *label, const float *lse, int64_t C)
{
    int64_t row = blockIdx.x, o = row * C;
    float l = lse[row];
    int64_t lab = (uint32_t)label[row] % (uint32_t)C;
    FOR_ROW(c) {
        Pack<T, V> a = ldv<T, V>(x, o + c);
        float out[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            out[j] = __expf(a.v[j] - l) - (c + j == lab ? 1.0f : 0.0f);
        stv<T, V>(dx, o + c, out);
    }
}

template <typename T> __global__ void row_mean(const T *x, T *y, int64_t C)
{
    __shared__ float sh[32];
    int64_t o = (int64_t)blockIdx.x * C;
    float s = 0;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
        s += ld(x, o + c);
    s = block_reduce(s, sh, false);
    if (threadIdx.x == 0)
        st(y, blockIdx.x, s / (float)C);
}

// ---- elementwise ----------------------------------------------------------------

enum { EW_GELU, EW_SILU, EW_RELU, EW_DROPOUT };

__device__ inline float gelu_f(float x, float *d)
{
    const float k = 0.7978845608f, a = 0.044715f;
    float u = k * (x + a * x * x * x), t = tanhf(u);
    *d = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * a * x * x);
    return 0.5f * x * (1.0f + t);
}

__device__ inline float unary_one(int op, bool bwd, float v, float g, int64_t i, float keep,
                                  uint32_t thresh)
{
    float d = 1.0f, r;
    switch (op) {
    case EW_GELU: r = gelu_f(v, &d); break;
    case EW_SILU: {
        float sg = 1.0f / (1.0f + __expf(-v));
        r = v * sg;
        d = sg * (1.0f + v * (1.0f - sg));
        break;
    }
    case EW_RELU: r = fmaxf(v, 0.0f); d = v > 0.0f ? 1.0f : 0.0f; break;
    default:  // dropout: forward keeps by hash; backward reads the output
        if (!bwd)
            return mix((uint32_t)i * 0x9e3779b9U ^ (uint32_t)(i >> 32) ^ 0x5eedU) >= thresh
                       ? v * keep : 0.0f;
        d = v != 0.0f ? keep : 0.0f;
        r = 0;
        break;
    }
    return bwd ? d * g : r;
}

// n elements in steps of V per thread (n a multiple of V).
template <typename T, int V>
__global__ void unary(int op, bool bwd, const T *x, const T *dy, T *y, int64_t n, float rate)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x * V;
    float keep = 1.0f / (1.0f - rate);
    uint32_t thresh = (uint32_t)((double)rate * 4294967296.0);
    for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * V; i < n; i += stride) {
        Pack<T, V> a = ldv<T, V>(x, i), g;
        if (bwd)
            g = ldv<T, V>(dy, i);
        float out[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            out[j] = unary_one(op, bwd, a.v[j], bwd ? g.v[j] : 0.0f, i + j, keep, thresh);
        stv<T, V>(y, i, out);
    }
}

// y = a op b[i % e] (mul when is_mul); n and e multiples of V.
template <typename T, int V>
__global__ void binary(bool is_mul, const T *a, const T *b, int64_t e, T *y, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x * V;
    for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * V; i < n; i += stride) {
        Pack<T, V> x = ldv<T, V>(a, i), w = ldv<T, V>(b, e == n ? i : i % e);
        float out[V];
#pragma unroll
        for (int j = 0; j < V; j++)
            out[j] = is_mul ? x.v[j] * w.v[j] : x.v[j] + w.v[j];
        stv<T, V>(y, i, out);
    }
}

// ---- embedding, rotary, batch norm, pooling ------------------------------------

template <typename T>
__global__ void embed_fwd(const int32_t *ids, const T *table, T *y, int64_t C, int64_t E)
{
    int64_t row = blockIdx.x, src = (int64_t)((uint32_t)ids[row] % (uint32_t)E) * C;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
        y[row * C + c] = table[src + c];
}

template <typename T>
__global__ void embed_bwd(const int32_t *ids, const T *dy, float *dt, int64_t C, int64_t E)
{
    int64_t row = blockIdx.x, dst = (int64_t)((uint32_t)ids[row] % (uint32_t)E) * C;
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
        atomicAdd(&dt[dst + c], ld(dy, row * C + c));
}

template <typename T>
__global__ void rope(const T *x, T *y, int64_t R, int64_t C, int64_t E, bool bwd)
{
    int64_t half = C / 2, n = R * half, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int64_t r = i / half, j = i % half, o = r * C;
        float pos = (float)(E > 0 ? r % E : r);
        float sn, cs;
        __sincosf(pos * __powf(10000.0f, -2.0f * (float)j / (float)C), &sn, &cs);
        if (bwd)
            sn = -sn;
        float x1 = ld(x, o + j), x2 = ld(x, o + j + half);
        st(y, o + j, x1 * cs - x2 * sn);
        st(y, o + j + half, x2 * cs + x1 * sn);
    }
}

// Per-channel sums over chunks of the n * h * w values of channel
// blockIdx.x: into s1 (x, or dy) and s2 (x^2, or dy * xhat).
template <typename T>
__global__ void bn_sums(const T *x, const T *dy, const float *mean, const float *rstd, int64_t N,
                        int64_t Cn, int64_t HW, float *s1, float *s2)
{
    __shared__ float sh[32];
    int64_t c = blockIdx.x, m = N * HW;
    float a = 0, b = 0;
    for (int64_t j = (int64_t)blockIdx.y * blockDim.x + threadIdx.x; j < m;
         j += (int64_t)gridDim.y * blockDim.x) {
        int64_t i = m <= 0xffffffffLL
                        ? ((int64_t)((uint32_t)j / (uint32_t)HW) * Cn + c) * HW +
                              (uint32_t)j % (uint32_t)HW
                        : ((j / HW) * Cn + c) * HW + j % HW;
        float v = ld(x, i);
        if (!dy) {
            a += v;
            b += v * v;
        } else {
            float g = ld(dy, i);
            a += g;
            b += g * (v - mean[c]) * rstd[c];
        }
    }
    a = block_reduce(a, sh, false);
    b = block_reduce(b, sh, false);
    if (threadIdx.x == 0) {
        atomicAdd(&s1[c], a);
        atomicAdd(&s2[c], b);
    }
}

__global__ void bn_finish(float *mean, float *rstd, int64_t Cn, float m)
{
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < Cn) {
        float mu = mean[c] / m;
        rstd[c] = rsqrtf(fmaxf(rstd[c] / m - mu * mu, 0.0f) + 1e-5f);
        mean[c] = mu;
    }
}

template <typename T>
__global__ void bn_apply(const T *x, const T *dy, T *y, const float *gamma, const float *beta,
                         const float *mean, const float *rstd, const float *dg, const float *db,
                         int64_t Cn, int64_t HW, int64_t n, float m)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int64_t c = n <= 0xffffffffLL ? (int64_t)(((uint32_t)i / (uint32_t)HW) % (uint32_t)Cn)
                                      : (i / HW) % Cn;
        float xh = (ld(x, i) - mean[c]) * rstd[c], g = gamma[c];
        if (!dy)
            st(y, i, xh * g + beta[c]);
        else
            st(y, i, g * rstd[c] * (ld(dy, i) - db[c] / m - xh * dg[c] / m));
    }
}

template <typename T>
__global__ void pool(const T *x, const T *dy, T *y, float *dx, ApprofOpShape s, bool is_max,
                     int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int64_t ow = i % s.ow, oh = (i / s.ow) % s.oh, nc = i / (s.ow * s.oh);
        const T *xp = x + nc * s.h * s.w;
        float best = -INFINITY, sum = 0;
        int64_t arg = -1;
        for (int a = 0; a < s.r; a++) {
            int64_t hh = oh * s.stride[0] - s.pad[0] + a;
            if (hh < 0 || hh >= s.h)
                continue;
            for (int b = 0; b < s.s; b++) {
                int64_t ww = ow * s.stride[1] - s.pad[1] + b;
                if (ww < 0 || ww >= s.w)
                    continue;
                float v = ld(xp, hh * s.w + ww);
                sum += v;
                if (v > best) {
                    best = v;
                    arg = hh * s.w + ww;
                }
                if (dy && !is_max)
                    atomicAdd(&dx[nc * s.h * s.w + hh * s.w + ww],
                              ld(dy, i) / (float)(s.r * s.s));
            }
        }
        if (!dy)
            st(y, i, is_max ? best : sum / (float)(s.r * s.s));
        else if (is_max && arg >= 0)
            atomicAdd(&dx[nc * s.h * s.w + arg], ld(dy, i));
    }
}

// dx[i] = dy[i / C] / C: a global mean's gradient.
template <typename T> __global__ void spread(const T *dy, T *dx, int64_t C, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        st(dx, i, ld(dy, i / C) / (float)C);
}

__global__ void write_ids(int32_t *p, int64_t n, int64_t mod)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = (int32_t)(mix((uint32_t)i + 0x1234567U) % (uint32_t)mod);
}

unsigned grid_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

// Threads per row: enough for 4 values each, a multiple of 32, 32..512.
unsigned row_threads(int64_t C)
{
    int64_t t = 32;
    while (t < 512 && t * 4 < C)
        t *= 2;
    return (unsigned)t;
}

// Row chunks of a column sum: about 64 rows each, at most 512 chunks.
unsigned col_chunks(int64_t R)
{
    int64_t c = (R + 63) / 64;
    return (unsigned)(c < 1 ? 1 : c > 512 ? 512 : c);
}

struct Arrays {
    char *base[3];
    const ApprofOpArrays *l;
    template <typename U> U *p(int buf, int i) const { return (U *)(base[buf] + l[buf].offset[i]); }
};

template <typename T>
int run(const ApprofOpShape *s, const ApprofOpArrays *l, void *in, void *out, void *aux,
        cudaStream_t st)
{
    Arrays A = {{(char *)in, (char *)out, (char *)aux}, l};
    int64_t R = s->rows, C = s->cols, n = R * C, E = s->extent;
    bool bw = s->backward != 0;
    unsigned rt = row_threads(C);
    // Vector steps where the row (and so every array) allows them.
    const int VN = vec_of<T>();
    bool rv = C % VN == 0;
    unsigned rtv = rv ? row_threads(C / VN) : rt;
#define ROW_LAUNCH(K, ...)                                                       \
    do {                                                                         \
        if (rv)                                                                  \
            K<T, vec_of<T>()><<<(unsigned)R, rtv, 0, st>>>(__VA_ARGS__);         \
        else                                                                     \
            K<T, 1><<<(unsigned)R, rt, 0, st>>>(__VA_ARGS__);                    \
    } while (0)
#define FLAT_LAUNCH(K, N, E, ...)                                                \
    do {                                                                         \
        if ((N) % VN == 0 && (E) % VN == 0)                                      \
            K<T, vec_of<T>()><<<grid_for((N) / VN), 256, 0, st>>>(__VA_ARGS__);  \
        else                                                                     \
            K<T, 1><<<grid_for(N), 256, 0, st>>>(__VA_ARGS__);                   \
    } while (0)
    dim3 cb(32, 8), cg((unsigned)((C + 31) / 32), col_chunks(R));
    cudaError_t e = cudaSuccess;

    switch (s->op) {
    case APPROF_CUDA_OP_LAYER_NORM: case APPROF_CUDA_OP_RMS_NORM: {
        bool rms = s->op == APPROF_CUDA_OP_RMS_NORM;
        const T *g = A.p<T>(2, 0), *b = A.p<T>(2, 1);
        float *mu = A.p<float>(2, 2), *rs = A.p<float>(2, 3);
        if (!bw) {
            ROW_LAUNCH(norm_fwd, A.p<T>(0, 0), A.p<T>(1, 0), g, b, mu, rs, C, rms);
            break;
        }
        const T *x = A.p<T>(0, 0), *dy = A.p<T>(0, 1);
        ROW_LAUNCH(norm_bwd_dx, x, dy, A.p<T>(1, 0), g, mu, rs, C, rms);
        float *dg = A.p<float>(2, 4), *db = A.p<float>(2, 5);
        if ((e = cudaMemsetAsync(dg, 0, (size_t)C * 4, st)) != cudaSuccess ||
            (!rms && (e = cudaMemsetAsync(db, 0, (size_t)C * 4, st)) != cudaSuccess))
            return (int)e;
        col_sums<T><<<cg, cb, 0, st>>>(dy, x, mu, rs, R, C, 2, dg, rms ? nullptr : db);
        break;
    }
    case APPROF_CUDA_OP_SOFTMAX:
        if (!bw)
            ROW_LAUNCH(softmax_fwd, A.p<T>(0, 0), A.p<T>(1, 0), C);
        else
            ROW_LAUNCH(softmax_bwd, A.p<T>(0, 0), A.p<T>(0, 1), A.p<T>(1, 0), C);
        break;
    case APPROF_CUDA_OP_GELU: case APPROF_CUDA_OP_SILU: case APPROF_CUDA_OP_RELU:
    case APPROF_CUDA_OP_DROPOUT: {
        int op = s->op == APPROF_CUDA_OP_GELU ? EW_GELU : s->op == APPROF_CUDA_OP_SILU ? EW_SILU
                 : s->op == APPROF_CUDA_OP_RELU ? EW_RELU : EW_DROPOUT;
        FLAT_LAUNCH(unary, n, n, op, bw, A.p<T>(0, 0), bw ? A.p<T>(0, 1) : nullptr, A.p<T>(1, 0),
                    n, s->rate);
        break;
    }
    case APPROF_CUDA_OP_ADD: case APPROF_CUDA_OP_MUL: {
        bool mul = s->op == APPROF_CUDA_OP_MUL;
        if (!bw) {
            FLAT_LAUNCH(binary, n, E, mul, A.p<T>(0, 0), A.p<T>(0, 1), E, A.p<T>(1, 0), n);
            break;
        }
        if (!mul) {
            if (E == n)
                break;  // the gradient passes through: no kernel
            float *db = A.p<float>(1, 0);
            if ((e = cudaMemsetAsync(db, 0, (size_t)E * 4, st)) != cudaSuccess)
                return (int)e;
            col_sums<T><<<cg, cb, 0, st>>>(A.p<T>(0, 0), nullptr, nullptr, nullptr, R, C, 0,
                                           db, nullptr);
            break;
        }
        const T *a = A.p<T>(0, 0), *b = A.p<T>(0, 1), *dy = A.p<T>(0, 2);
        FLAT_LAUNCH(binary, n, E, true, dy, b, E, A.p<T>(1, 0), n);
        if (E == n) {
            FLAT_LAUNCH(binary, n, n, true, dy, a, n, A.p<T>(1, 1), n);
        } else {
            float *db = A.p<float>(1, 1);
            if ((e = cudaMemsetAsync(db, 0, (size_t)E * 4, st)) != cudaSuccess)
                return (int)e;
            col_sums<T><<<cg, cb, 0, st>>>(dy, a, nullptr, nullptr, R, C, 1, db, nullptr);
        }
        break;
    }
    case APPROF_CUDA_OP_BIAS:
        if (!bw) {
            FLAT_LAUNCH(binary, n, C, false, A.p<T>(0, 0), A.p<T>(2, 0), C, A.p<T>(1, 0), n);
        } else {
            float *db = A.p<float>(1, 0);
            if ((e = cudaMemsetAsync(db, 0, (size_t)C * 4, st)) != cudaSuccess)
                return (int)e;
            col_sums<T><<<cg, cb, 0, st>>>(A.p<T>(0, 0), nullptr, nullptr, nullptr, R, C, 0,
                                           db, nullptr);
        }
        break;
    case APPROF_CUDA_OP_EMBEDDING:
        if (!bw) {
            embed_fwd<T><<<(unsigned)R, rt, 0, st>>>(A.p<int32_t>(0, 0), A.p<T>(2, 0),
                                                     A.p<T>(1, 0), C, E);
        } else {
            float *dt = A.p<float>(1, 0);
            if ((e = cudaMemsetAsync(dt, 0, (size_t)(E * C) * 4, st)) != cudaSuccess)
                return (int)e;
            embed_bwd<T><<<(unsigned)R, rt, 0, st>>>(A.p<int32_t>(0, 0), A.p<T>(0, 1),
                                                     dt, C, E);
        }
        break;
    case APPROF_CUDA_OP_CROSS_ENTROPY:
        if (!bw)
            ROW_LAUNCH(xent_fwd, A.p<T>(0, 0), A.p<float>(1, 0), A.p<int32_t>(2, 0),
                       A.p<float>(2, 1), C);
        else
            ROW_LAUNCH(xent_bwd, A.p<T>(0, 0), A.p<T>(1, 0), A.p<int32_t>(2, 0), A.p<float>(2, 1),
                       C);
        break;
    case APPROF_CUDA_OP_BATCH_NORM: {
        int64_t HW = s->h * s->w, m = s->n * HW, tot = m * s->c;
        const T *x = A.p<T>(0, 0);
        const float *g = A.p<float>(2, 0), *b = A.p<float>(2, 1);
        float *mu = A.p<float>(2, 2), *rs = A.p<float>(2, 3);
        int64_t chunks = (m + 256 * 8 - 1) / (256 * 8);
        dim3 bg((unsigned)s->c, (unsigned)(chunks < 1 ? 1 : chunks > 64 ? 64 : chunks));
        if (!bw) {
            if ((e = cudaMemsetAsync(mu, 0, (size_t)s->c * 4, st)) != cudaSuccess ||
                (e = cudaMemsetAsync(rs, 0, (size_t)s->c * 4, st)) != cudaSuccess)
                return (int)e;
            bn_sums<T><<<bg, 256, 0, st>>>(x, nullptr, nullptr, nullptr, s->n, s->c, HW, mu, rs);
            bn_finish<<<(unsigned)((s->c + 255) / 256), 256, 0, st>>>(mu, rs, s->c, (float)m);
            bn_apply<T><<<grid_for(tot), 256, 0, st>>>(x, nullptr, A.p<T>(1, 0), g, b, mu, rs,
                                                       nullptr, nullptr, s->c, HW, tot, (float)m);
        } else {
            const T *dy = A.p<T>(0, 1);
            float *dg = A.p<float>(2, 6), *db = A.p<float>(2, 7);
            if ((e = cudaMemsetAsync(dg, 0, (size_t)s->c * 4, st)) != cudaSuccess ||
                (e = cudaMemsetAsync(db, 0, (size_t)s->c * 4, st)) != cudaSuccess)
                return (int)e;
            bn_sums<T><<<bg, 256, 0, st>>>(x, dy, mu, rs, s->n, s->c, HW, db, dg);
            bn_apply<T><<<grid_for(tot), 256, 0, st>>>(x, dy, A.p<T>(1, 0), g, b, mu, rs, dg,
                                                       db, s->c, HW, tot, (float)m);
        }
        break;
    }
    case APPROF_CUDA_OP_MAX_POOL: case APPROF_CUDA_OP_AVG_POOL: {
        bool mx = s->op == APPROF_CUDA_OP_MAX_POOL;
        int64_t ny = s->n * s->c * s->oh * s->ow;
        if (!bw) {
            pool<T><<<grid_for(ny), 256, 0, st>>>(A.p<T>(0, 0), nullptr, A.p<T>(1, 0),
                                                  nullptr, *s, mx, ny);
        } else {
            float *dx = A.p<float>(1, 0);
            if ((e = cudaMemsetAsync(dx, 0, (size_t)l[1].bytes[0], st)) != cudaSuccess)
                return (int)e;
            pool<T><<<grid_for(ny), 256, 0, st>>>(A.p<T>(0, 0), A.p<T>(0, 1), nullptr,
                                                  dx, *s, mx, ny);
        }
        break;
    }
    case APPROF_CUDA_OP_GLOBAL_POOL:
        if (!bw) {
            row_mean<T><<<(unsigned)R, rt, 0, st>>>(A.p<T>(0, 0), A.p<T>(1, 0), C);
        } else {
            spread<T><<<grid_for(n), 256, 0, st>>>(A.p<T>(0, 0), A.p<T>(1, 0), C, n);
        }
        break;
    case APPROF_CUDA_OP_ROPE:
        rope<T><<<grid_for(R * (C / 2)), 256, 0, st>>>(A.p<T>(0, 0), A.p<T>(1, 0),
                                                        R, C, E, bw);
        break;
    default:
        return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int approf_cuda_op_init(const ApprofOpShape *s, void *in, void *out, void *aux,
                                   cudaStream_t stream)
{
    ApprofOpArrays l[3];
    (void)out;
    if (!s || approf_op_layout(s, l) < 0)
        return (int)cudaErrorInvalidValue;
    if (s->op == APPROF_CUDA_OP_EMBEDDING)
        write_ids<<<grid_for(s->rows), 256, 0, stream>>>((int32_t *)in, s->rows, s->extent);
    else if (s->op == APPROF_CUDA_OP_CROSS_ENTROPY)
        write_ids<<<grid_for(s->rows), 256, 0, stream>>>((int32_t *)aux, s->rows, s->cols);
    else
        return 0;
    return (int)cudaGetLastError();
}

extern "C" int approf_cuda_launch_op(const ApprofOpShape *s, void *in, void *out, void *aux,
                                     cudaStream_t stream)
{
    ApprofOpArrays l[3];
    if (s && s->op == APPROF_CUDA_OP_ADAM)
        return approf_cuda_launch_adam(s, in, out, aux, stream);  // adam.cu
    if (!s || approf_op_layout(s, l) < 0 || (l[0].total && !in) || (l[1].total && !out) ||
        (l[2].total && !aux) || s->rows > 0x7fffffff)
        return (int)cudaErrorInvalidValue;
    switch (s->dtype) {
    case 0: return run<float>(s, l, in, out, aux, stream);
    case 1: return run<__half>(s, l, in, out, aux, stream);
    case 2: return run<__nv_bfloat16>(s, l, in, out, aux, stream);
    default: return (int)cudaErrorInvalidValue;
    }
}
