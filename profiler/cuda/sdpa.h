/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scaled dot-product attention through cuDNN's fused flash attention: the
 * host side, plain C with no CUDA or cuDNN header (sdpa_plan.c; in the
 * host library, unit-tested without a GPU). It says which attention
 * kernels go to cuDNN and describes the operation graph the module hands
 * to cuDNN's backend API (sdpa.c): the tensors with their dimensions,
 * strides, types and unique ids, and the operations between them, in the
 * order and form cudnn-frontend's SDPA nodes build them
 * (docs/cudnn-attention.md says which, and why each choice).
 *
 * Layout (every array dense, BHSD): Q, O, dO, dQ [b, hq, sq, d]; K, V, dK,
 * dV [b, hkv, skv, d]; the softmax statistics (log-sum-exp per query row)
 * [b, hq, sq] in f32. Arrays of one buffer lie back to back, each at a
 * multiple of 256 bytes (ApprofOpArrays):
 *   forward:  in q, k, v; out o, stats
 *   backward: in q, k, v, o, dO, stats; out dq, dk, dv; aux softmax_sum
 *             [b, hq, sq] f32 (rowsum(dO * O)), dq_accum [b, hq, sq, d]
 *             f32 (cuDNN accumulates dQ there)
 */
#ifndef APPROF_CUDA_SDPA_H
#define APPROF_CUDA_SDPA_H

#include <stdint.h>

#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ApprofSdpaShape {
    int64_t b, hq, hkv, sq, skv, d;
    int causal;
    int backward;
    ApprofDtype dtype;       /* f16 or bf16 */
} ApprofSdpaShape;

/* The largest head dim routed to cuDNN, and the multiple it must be
 * (cudnn-frontend's SDPA support checks for Ampere and Hopper). */
#define APPROF_SDPA_MAX_D 128
#define APPROF_SDPA_D_MULTIPLE 8

/* Whether kernel k in dtype dt is the lead of a fused attention that goes
 * to cuDNN: 1 and *out filled when it does; 0 with *why (a static string)
 * when it is no lead (why NULL) or stays on the GEMM path (why says so:
 * f32, head dim, heads). */
int approf_sdpa_route(const ApprofKernel *k, ApprofDtype dt, ApprofSdpaShape *out,
                      const char **why);

/* The kernels the fused attention led by k[i] stands for: i and the
 * attention GEMMs after it of the same operator up to the next lead (a
 * recomputed forward's, or another copy's). Their count, >= 1; 0 when
 * k[i] leads none. */
size_t approf_sdpa_group(const ApprofKernel *k, size_t n, size_t i);

/* Data types of the graph's tensors (the module maps them to cuDNN's). */
enum { APPROF_SDPA_F32 = 0, APPROF_SDPA_F16, APPROF_SDPA_BF16, APPROF_SDPA_I32, APPROF_SDPA_BOOL };

/* Operations: a matmul (x @ b -> y, batched over dims 0 and 1, b's head
 * dim broadcast when it has fewer heads), a pointwise op (mode), a
 * reduction (mode; over the dims where y is 1), a reshape (y views x's
 * elements with its own dims and strides). */
enum { APPROF_SDPA_MATMUL = 0, APPROF_SDPA_POINTWISE, APPROF_SDPA_REDUCTION, APPROF_SDPA_RESHAPE };

/* Pointwise and reduction modes. */
enum {
    APPROF_SDPA_PW_ADD = 0, APPROF_SDPA_PW_SUB, APPROF_SDPA_PW_MUL, APPROF_SDPA_PW_DIV,
    APPROF_SDPA_PW_EXP, APPROF_SDPA_PW_LOG, APPROF_SDPA_PW_IDENTITY, APPROF_SDPA_PW_GEN_INDEX,
    APPROF_SDPA_PW_CMP_GE, APPROF_SDPA_PW_BINARY_SELECT, APPROF_SDPA_RED_ADD, APPROF_SDPA_RED_MAX
};

typedef struct ApprofSdpaTensor {
    int64_t uid;             /* cuDNN's unique id: index + 1 */
    int dtype;               /* APPROF_SDPA_* type */
    int64_t dim[4], stride[4];
    int virt;                /* 1: stays inside the fused kernel */
    int by_value;            /* 1: a host scalar (value) */
    float value;
    int buf, array;          /* a device array: buffer (0 in, 1 out, 2 aux) and array index; -1 */
} ApprofSdpaTensor;

typedef struct ApprofSdpaOp {
    int kind;                /* APPROF_SDPA_MATMUL ... */
    int mode;                /* pointwise / reduction mode */
    int math;                /* pointwise compute type (APPROF_SDPA_F32 or _BOOL) */
    int axis;                /* GEN_INDEX: the dim whose index it writes */
    int x, b, t, y;          /* tensor indices; b, t -1 when unused (t: the
                              * condition of BINARY_SELECT, y = t ? x : b) */
} ApprofSdpaOp;

#define APPROF_SDPA_MAX_TENSORS 48
#define APPROF_SDPA_MAX_OPS 40

typedef struct ApprofSdpaGraph {
    ApprofSdpaShape s;
    int nt, nop;
    ApprofSdpaTensor t[APPROF_SDPA_MAX_TENSORS];
    ApprofSdpaOp op[APPROF_SDPA_MAX_OPS];
    ApprofOpArrays arrays[3];  /* [0] in, [1] out, [2] aux, as listed above */
    int dq_accum;              /* tensor index of dQ's f32 accumulator (backward), else -1 */
} ApprofSdpaGraph;

/* The operation graph of s (forward or backward) into *g. neg_inf is what
 * the causal mask writes (-inf from cuDNN 9.10, the lowest float before,
 * as cudnn-frontend chooses by the backend's version). 0, or -1 for a
 * shape it does not take (non-positive or overflowing sizes, hq not a
 * multiple of hkv, f32). */
int approf_sdpa_graph(const ApprofSdpaShape *s, float neg_inf, ApprofSdpaGraph *g);

/* The softmax scale 1 / sqrt(d). */
float approf_sdpa_scale(int64_t d);

#ifdef __cplusplus
}
#endif
#endif
