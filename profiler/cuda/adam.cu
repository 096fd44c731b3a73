// SPDX-License-Identifier: Apache-2.0
//
// The optimizer step of the approf-cuda module: one fused AdamW step over
// N parameters (op_shape.h, APPROF_CUDA_OP_ADAM), organised as the
// multi-tensor kernels of the frameworks: Transformer Engine's FusedAdam
// (transformer_engine/common/multi_tensor/adam.cu, AdamFunctorMaster, and
// multi_tensor_apply.cuh) and Apex's, which Megatron-Core's optimizer
// imports (megatron/core/optimizer/__init__.py at core_v0.19.0: TE's
// FusedAdam, else Apex's). What is kept of them:
// - chunks of 65536 elements (TE's multi_tensor_applier = MultiTensorApply(2048 * 32)),
//   one 512-thread block per chunk (BLOCK_SIZE 512), each thread ILP = 4
//   elements per step, strided by the block so that every load coalesces;
// - at most 320 blocks per launch (depth_to_max_blocks): a large step is
//   several launches, as a large parameter set is;
// - math in f32: read g, p (the f32 master under mixed precision), m, v;
//   write p (the master, and the 16-bit parameter rounded from it), m, v.
// The parameters are one flat list here (the stage program knows their
// count, not their tensors), so no chunk is cut short at a tensor's end.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels.h"

namespace {

constexpr int kBlock = 512;
constexpr int kIlp = 4;
constexpr int64_t kChunk = 65536;
constexpr int64_t kMaxBlocks = 320;

// Megatron-LM's defaults (--lr is the user's; 1e-3 here), AdamW, step 1.
constexpr float kLr = 1e-3f, kBeta1 = 0.9f, kBeta2 = 0.999f, kEps = 1e-8f, kDecay = 0.01f;

#include "dtype_access.cuh"

// G the gradient's and the parameter's type; master: the f32 master copy
// (nullptr when the parameter is f32 itself: p is read and written).
template <typename G>
__global__ void __launch_bounds__(kBlock)
adam_chunks(const G *g, G *p, float *master, float *m, float *v, int64_t n, int64_t chunk0)
{
    const float c1 = 1.0f - kBeta1, c2 = 1.0f - kBeta2;  // bias corrections at step 1
    int64_t base = (chunk0 + blockIdx.x) * kChunk;
    int64_t len = n - base < kChunk ? n - base : kChunk;
    for (int64_t s = 0; s < len; s += (int64_t)kBlock * kIlp) {
        float rg[kIlp], rp[kIlp], rm[kIlp], rv[kIlp];
#pragma unroll
        for (int j = 0; j < kIlp; j++) {
            int64_t i = s + threadIdx.x + (int64_t)j * kBlock;
            bool in = i < len;
            rg[j] = in ? ld(g, base + i) : 0.0f;
            rp[j] = in ? (master ? master[base + i] : ld(p, base + i)) : 0.0f;
            rm[j] = in ? m[base + i] : 0.0f;
            rv[j] = in ? v[base + i] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < kIlp; j++) {
            rm[j] = kBeta1 * rm[j] + (1.0f - kBeta1) * rg[j];
            rv[j] = kBeta2 * rv[j] + (1.0f - kBeta2) * rg[j] * rg[j];
            float denom = sqrtf(rv[j] / c2) + kEps;
            rp[j] = rp[j] - kLr * ((rm[j] / c1) / denom + kDecay * rp[j]);
        }
#pragma unroll
        for (int j = 0; j < kIlp; j++) {
            int64_t i = s + threadIdx.x + (int64_t)j * kBlock;
            if (i < len) {
                if (master)
                    master[base + i] = rp[j];
                st(p, base + i, rp[j]);
                m[base + i] = rm[j];
                v[base + i] = rv[j];
            }
        }
    }
}

template <typename G>
int launch(const ApprofOpShape *s, const ApprofOpArrays *l, void *in, void *out, void *aux,
           cudaStream_t stream)
{
    int64_t n = s->rows * s->cols, chunks = (n + kChunk - 1) / kChunk;
    char *a = (char *)aux;
    bool mixed = s->dtype != 0;
    float *master = mixed ? (float *)(a + l[2].offset[0]) : nullptr;
    float *m = (float *)(a + l[2].offset[mixed ? 1 : 0]);
    float *v = (float *)(a + l[2].offset[mixed ? 2 : 1]);
    for (int64_t c = 0; c < chunks; c += kMaxBlocks) {
        int64_t nb = chunks - c < kMaxBlocks ? chunks - c : kMaxBlocks;
        adam_chunks<G><<<(unsigned)nb, kBlock, 0, stream>>>(
            (const G *)((char *)in + l[0].offset[0]), (G *)((char *)out + l[1].offset[0]), master,
            m, v, n, c);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return (int)e;
    }
    return 0;
}

} // namespace

extern "C" int approf_cuda_launch_adam(const ApprofOpShape *s, void *in, void *out, void *aux,
                                       cudaStream_t stream)
{
    ApprofOpArrays l[3];
    if (!s || s->op != APPROF_CUDA_OP_ADAM || approf_op_layout(s, l) < 0 || !in || !out || !aux)
        return (int)cudaErrorInvalidValue;
    switch (s->dtype) {
    case 0: return launch<float>(s, l, in, out, aux, stream);
    case 1: return launch<__half>(s, l, in, out, aux, stream);
    case 2: return launch<__nv_bfloat16>(s, l, in, out, aux, stream);
    default: return (int)cudaErrorInvalidValue;
    }
}
