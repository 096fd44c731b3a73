/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which attention kernels go to cuDNN's fused flash attention, and the
 * operation graph handed to cuDNN's backend API for one (sdpa.h). The
 * graph follows cudnn-frontend's SDPA nodes (SDPANode and
 * SDPABackwardNode, include/cudnn_frontend/node/
 * scaled_dot_product_flash_attention.h; its softmax node and the causal
 * mask of utils/attn_score_modifiers.h and node/diagonal_band_mask.h, as
 * of frontend v1.16-v1.23): cuDNN's runtime fusion engine recognises that
 * pattern and compiles one flash kernel for it. docs/cudnn-attention.md
 * lists the facts relied on.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sdpa.h"

/* a * b, or -1 on overflow or a non-positive factor. */
static int64_t mul(int64_t a, int64_t b)
{
    if (a <= 0 || b <= 0 || a > INT64_MAX / b)
        return -1;
    return a * b;
}

int approf_sdpa_route(const ApprofKernel *k, ApprofDtype dt, ApprofSdpaShape *out,
                      const char **why)
{
    *why = NULL;
    if (!k || k->kind != APPROF_K_GEMM || !k->attention || (k->attn_lead != 1 && k->attn_lead != 2))
        return 0;
    if (dt != APPROF_F16 && dt != APPROF_BF16) {
        *why = "f32 (cuDNN's fused attention takes f16 and bf16)";
        return 0;
    }
    if (k->attn_b <= 0 || k->attn_hq <= 0 || k->attn_hkv <= 0 || k->attn_sq <= 0 ||
        k->attn_skv <= 0 || k->attn_d <= 0 || k->attn_hq % k->attn_hkv) {
        *why = "no attention shape on the kernel";
        return 0;
    }
    if (k->attn_d > APPROF_SDPA_MAX_D || k->attn_d % APPROF_SDPA_D_MULTIPLE) {
        *why = "head dim above 128 or not a multiple of 8";
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->b = k->attn_b;
    out->hq = k->attn_hq;
    out->hkv = k->attn_hkv;
    out->sq = k->attn_sq;
    out->skv = k->attn_skv;
    out->d = k->attn_d;
    out->causal = k->attn_causal != 0;
    out->backward = k->attn_lead == 2;
    out->dtype = dt;
    return 1;
}

size_t approf_sdpa_group(const ApprofKernel *k, size_t n, size_t i)
{
    size_t j;
    if (!k || i >= n || k[i].kind != APPROF_K_GEMM || !k[i].attention || !k[i].attn_lead)
        return 0;
    for (j = i + 1; j < n && k[j].kind == APPROF_K_GEMM && k[j].attention && !k[j].attn_lead &&
                    k[j].op == k[i].op;
         j++)
        ;
    return j - i;
}

float approf_sdpa_scale(int64_t d)
{
    return d > 0 ? (float)(1.0 / sqrt((double)d)) : 0.0f;
}

/* ---- graph construction --------------------------------------------------- */

typedef struct Build {
    ApprofSdpaGraph *g;
    int bad;
} Build;

/* A tensor of dims d0..d3 with dense strides (last dim fastest). */
static int tensor(Build *B, int dtype, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int virt)
{
    ApprofSdpaGraph *g = B->g;
    if (g->nt >= APPROF_SDPA_MAX_TENSORS) {
        B->bad = 1;
        return 0;
    }
    ApprofSdpaTensor *t = &g->t[g->nt];
    memset(t, 0, sizeof *t);
    t->uid = g->nt + 1;
    t->dtype = dtype;
    t->dim[0] = d0;
    t->dim[1] = d1;
    t->dim[2] = d2;
    t->dim[3] = d3;
    t->stride[3] = 1;
    t->stride[2] = d3;
    t->stride[1] = d2 * d3;
    t->stride[0] = d1 * d2 * d3;
    t->virt = virt;
    t->buf = t->array = -1;
    return g->nt++;
}

static void strides(Build *B, int i, int64_t s0, int64_t s1, int64_t s2, int64_t s3)
{
    ApprofSdpaTensor *t = &B->g->t[i];
    t->stride[0] = s0;
    t->stride[1] = s1;
    t->stride[2] = s2;
    t->stride[3] = s3;
}

/* A host scalar (a pass-by-value tensor of one element). */
static int scalar(Build *B, float v)
{
    int i = tensor(B, APPROF_SDPA_F32, 1, 1, 1, 1, 0);
    B->g->t[i].by_value = 1;
    B->g->t[i].value = v;
    return i;
}

/* Tensor i is array `array` of buffer `buf` (elems elements of esz bytes). */
static void bind(Build *B, int i, int buf, int64_t elems, int64_t esz)
{
    ApprofOpArrays *a = &B->g->arrays[buf];
    B->g->t[i].buf = buf;
    B->g->t[i].array = a->n;
    if (approf_op_arrays_add(a, elems, esz) < 0)
        B->bad = 1;
}

static void op(Build *B, int kind, int mode, int x, int b, int t, int y)
{
    ApprofSdpaGraph *g = B->g;
    if (g->nop >= APPROF_SDPA_MAX_OPS) {
        B->bad = 1;
        return;
    }
    ApprofSdpaOp *o = &g->op[g->nop++];
    o->kind = kind;
    o->mode = mode;
    o->math = mode == APPROF_SDPA_PW_CMP_GE ? APPROF_SDPA_BOOL : APPROF_SDPA_F32;
    o->axis = -1;
    o->x = x;
    o->b = b;
    o->t = t;
    o->y = y;
}

/* y = x op b, y a new virtual f32 tensor of x's dims. */
static int pw(Build *B, int mode, int x, int b)
{
    const ApprofSdpaTensor *t = &B->g->t[x];
    int y = tensor(B, APPROF_SDPA_F32, t->dim[0], t->dim[1], t->dim[2], t->dim[3], 1);
    op(B, APPROF_SDPA_POINTWISE, mode, x, b, -1, y);
    return y;
}

/* The causal mask of score tensor s (top-left diagonal, the key index
 * never after the query's): row = GEN_INDEX(s, 2), col = GEN_INDEX(s, 3),
 * keep = row >= col, y = keep ? s : neg_inf (cudnn-frontend's
 * DiagonalBandMask with a right bound of 0). */
static int causal_mask(Build *B, int s, float neg_inf)
{
    const ApprofSdpaTensor *t = &B->g->t[s];
    int64_t d0 = t->dim[0], d1 = t->dim[1], d2 = t->dim[2], d3 = t->dim[3];
    int row = tensor(B, APPROF_SDPA_I32, d0, d1, d2, d3, 1);
    op(B, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_GEN_INDEX, s, -1, -1, row);
    B->g->op[B->g->nop - 1].axis = 2;
    int col = tensor(B, APPROF_SDPA_I32, d0, d1, d2, d3, 1);
    op(B, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_GEN_INDEX, s, -1, -1, col);
    B->g->op[B->g->nop - 1].axis = 3;
    int keep = tensor(B, APPROF_SDPA_BOOL, d0, d1, d2, d3, 1);
    op(B, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_CMP_GE, row, col, -1, keep);
    int ninf = scalar(B, neg_inf);
    int y = tensor(B, APPROF_SDPA_F32, d0, d1, d2, d3, 1);
    op(B, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_BINARY_SELECT, s, ninf, keep, y);
    return y;
}

/* K (or V) [b, hkv, skv, d] in memory, as the transposed operand
 * [b, hkv, d, skv] a matmul reads. */
static void transposed_kv(Build *B, int i, const ApprofSdpaShape *s)
{
    strides(B, i, s->hkv * s->skv * s->d, s->skv * s->d, 1, s->d);
}

static void forward(Build *B, const ApprofSdpaShape *s, int io, float neg_inf)
{
    int64_t b = s->b, hq = s->hq, hkv = s->hkv, sq = s->sq, skv = s->skv, d = s->d;
    int64_t es = 2;
    int q = tensor(B, io, b, hq, sq, d, 0);
    bind(B, q, 0, mul(mul(b * hq, sq), d), es);
    int kt = tensor(B, io, b, hkv, d, skv, 0);
    transposed_kv(B, kt, s);
    bind(B, kt, 0, mul(mul(b * hkv, skv), d), es);
    int v = tensor(B, io, b, hkv, skv, d, 0);
    bind(B, v, 0, mul(mul(b * hkv, skv), d), es);

    int sc = tensor(B, APPROF_SDPA_F32, b, hq, sq, skv, 1);
    op(B, APPROF_SDPA_MATMUL, 0, q, kt, -1, sc);
    int x = pw(B, APPROF_SDPA_PW_MUL, sc, scalar(B, approf_sdpa_scale(d)));
    if (s->causal)
        x = causal_mask(B, x, neg_inf);
    /* softmax with its statistics (the frontend's Softmax node, stats on,
     * no M/Zinv outputs): m = max, e = exp(x - m), z = sum e,
     * stats = m + log z, p = e / z */
    int m = tensor(B, APPROF_SDPA_F32, b, hq, sq, 1, 1);
    op(B, APPROF_SDPA_REDUCTION, APPROF_SDPA_RED_MAX, x, -1, -1, m);
    int e = pw(B, APPROF_SDPA_PW_EXP, pw(B, APPROF_SDPA_PW_SUB, x, m), -1);
    int z = tensor(B, APPROF_SDPA_F32, b, hq, sq, 1, 1);
    op(B, APPROF_SDPA_REDUCTION, APPROF_SDPA_RED_ADD, e, -1, -1, z);
    int lz = pw(B, APPROF_SDPA_PW_LOG, z, -1);
    int o = tensor(B, io, b, hq, sq, d, 0);
    bind(B, o, 1, mul(mul(b * hq, sq), d), es);
    int stats = tensor(B, APPROF_SDPA_F32, b, hq, sq, 1, 0);
    bind(B, stats, 1, mul(b * hq, sq), 4);
    op(B, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_ADD, m, lz, -1, stats);
    /* P goes into the second matmul in the io type (the backend asks for
     * its A operand in the io type) */
    int p = tensor(B, io, b, hq, sq, skv, 1);
    op(B, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_DIV, e, z, -1, p);
    op(B, APPROF_SDPA_MATMUL, 0, p, v, -1, o);
}

/* y = x @ b into out [b, hkv, r, d]; under GQA through a [b, hq, r, d]
 * product summed over each group's heads (a reduction), as the frontend. */
static void grad_matmul(Build *B, const ApprofSdpaShape *s, int io, int x, int bb, int out,
                        int64_t rows)
{
    if (s->hq == s->hkv) {
        op(B, APPROF_SDPA_MATMUL, 0, x, bb, -1, out);
        return;
    }
    int full = tensor(B, io, s->b, s->hq, rows, s->d, 1);
    op(B, APPROF_SDPA_MATMUL, 0, x, bb, -1, full);
    op(B, APPROF_SDPA_REDUCTION, APPROF_SDPA_RED_ADD, full, -1, -1, out);
}

static void backward(Build *B, const ApprofSdpaShape *s, int io, float neg_inf)
{
    int64_t b = s->b, hq = s->hq, hkv = s->hkv, sq = s->sq, skv = s->skv, d = s->d;
    int64_t es = 2, nq = mul(mul(b * hq, sq), d), nkv = mul(mul(b * hkv, skv), d);
    int q = tensor(B, io, b, hq, sq, d, 0);
    bind(B, q, 0, nq, es);
    int kt = tensor(B, io, b, hkv, d, skv, 0);
    transposed_kv(B, kt, s);
    bind(B, kt, 0, nkv, es);
    int vt = tensor(B, io, b, hkv, d, skv, 0);
    transposed_kv(B, vt, s);
    bind(B, vt, 0, nkv, es);
    int o = tensor(B, io, b, hq, sq, d, 0);
    bind(B, o, 0, nq, es);
    int dO = tensor(B, io, b, hq, sq, d, 0);
    bind(B, dO, 0, nq, es);
    int stats = tensor(B, APPROF_SDPA_F32, b, hq, sq, 1, 0);
    bind(B, stats, 0, mul(b * hq, sq), 4);
    int dq = tensor(B, io, b, hq, sq, d, 0);
    bind(B, dq, 1, nq, es);
    int dk = tensor(B, io, b, hkv, skv, d, 0);
    bind(B, dk, 1, nkv, es);
    int dv = tensor(B, io, b, hkv, skv, d, 0);
    bind(B, dv, 1, nkv, es);
    int scale = scalar(B, approf_sdpa_scale(d));

    /* softmax_sum = rowsum(dO * O) (times the dropout's inverse scale: 1) */
    int r = tensor(B, APPROF_SDPA_F32, b, hq, sq, 1, 1);
    op(B, APPROF_SDPA_REDUCTION, APPROF_SDPA_RED_ADD, pw(B, APPROF_SDPA_PW_MUL, dO, o), -1, -1, r);
    int ssum = tensor(B, APPROF_SDPA_F32, b, hq, sq, 1, 0);
    bind(B, ssum, 2, mul(b * hq, sq), 4);
    op(B, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_MUL, r, scalar(B, 1.0f), -1, ssum);

    /* P = exp(scale * Q K^T - stats), masked */
    int sc = tensor(B, APPROF_SDPA_F32, b, hq, sq, skv, 1);
    op(B, APPROF_SDPA_MATMUL, 0, q, kt, -1, sc);
    int x = pw(B, APPROF_SDPA_PW_SUB, pw(B, APPROF_SDPA_PW_MUL, sc, scale), stats);
    if (s->causal)
        x = causal_mask(B, x, neg_inf);
    int p = pw(B, APPROF_SDPA_PW_EXP, x, -1);

    /* dV = P^T dO: P viewed as [b, hq, skv, sq] */
    int pt = tensor(B, io, b, hq, skv, sq, 1);
    strides(B, pt, hq * sq * skv, sq * skv, 1, skv);
    op(B, APPROF_SDPA_RESHAPE, 0, p, -1, -1, pt);
    grad_matmul(B, s, io, pt, dO, dv, skv);

    /* dS = P * (dO V^T - softmax_sum) * scale */
    int dp = tensor(B, APPROF_SDPA_F32, b, hq, sq, skv, 1);
    op(B, APPROF_SDPA_MATMUL, 0, dO, vt, -1, dp);
    int ds = pw(B, APPROF_SDPA_PW_MUL,
                pw(B, APPROF_SDPA_PW_MUL, pw(B, APPROF_SDPA_PW_SUB, dp, ssum), p), scale);

    /* dK = dS^T Q */
    int dst = tensor(B, io, b, hq, skv, sq, 1);
    strides(B, dst, hq * sq * skv, sq * skv, 1, skv);
    op(B, APPROF_SDPA_RESHAPE, 0, ds, -1, -1, dst);
    grad_matmul(B, s, io, dst, q, dk, skv);

    /* dQ = dS K into an f32 accumulator, then to dQ's type */
    int kr = tensor(B, io, b, hkv, skv, d, 1);
    op(B, APPROF_SDPA_RESHAPE, 0, kt, -1, -1, kr);
    int acc = tensor(B, APPROF_SDPA_F32, b, hq, sq, d, 0);
    bind(B, acc, 2, nq, 4);
    op(B, APPROF_SDPA_MATMUL, 0, ds, kr, -1, acc);
    op(B, APPROF_SDPA_POINTWISE, APPROF_SDPA_PW_IDENTITY, acc, -1, -1, dq);
    B->g->dq_accum = acc;
}

int approf_sdpa_graph(const ApprofSdpaShape *s, float neg_inf, ApprofSdpaGraph *g)
{
    Build B = {g, 0};
    int io;

    if (!s || !g)
        return -1;
    memset(g, 0, sizeof *g);
    g->dq_accum = -1;
    if (s->dtype != APPROF_F16 && s->dtype != APPROF_BF16)
        return -1;
    if (s->b <= 0 || s->hq <= 0 || s->hkv <= 0 || s->sq <= 0 || s->skv <= 0 || s->d <= 0 ||
        s->hq % s->hkv || s->b > INT32_MAX || s->hq > INT32_MAX || s->sq > INT32_MAX ||
        s->skv > INT32_MAX || s->d > INT32_MAX ||
        mul(mul(mul(s->b, s->hq), s->sq), s->skv) < 0 ||
        mul(mul(mul(s->b, s->hq), s->sq), s->d) < 0 ||
        mul(mul(mul(s->b, s->hq), s->skv), s->d) < 0)
        return -1;
    g->s = *s;
    io = s->dtype == APPROF_F16 ? APPROF_SDPA_F16 : APPROF_SDPA_BF16;
    if (s->backward)
        backward(&B, s, io, neg_inf);
    else
        forward(&B, s, io, neg_inf);
    if (B.bad) {
        memset(g, 0, sizeof *g);
        g->dq_accum = -1;
        return -1;
    }
    return 0;
}
