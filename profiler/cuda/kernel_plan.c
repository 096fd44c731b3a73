/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the CUDA backend lays out one kernel: the cuBLASLt problem of a GEMM
 * (row-major operands passed as the transposed column-major product), the
 * grouped GEMM of a MoE layer's experts, the
 * buffers of every kernel kind, the arena alignment, and the memory reserve
 * behind available_memory.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "op_shape.h"

static int64_t dtsize(ApprofDtype dt)
{
    return dt == APPROF_F32 ? 4 : 2;
}

/* a * b, or -1 on overflow or a non-positive factor. */
static int64_t mul(int64_t a, int64_t b)
{
    if (a <= 0 || b <= 0 || a > INT64_MAX / b)
        return -1;
    return a * b;
}

int approf_gemm_desc(const ApprofKernel *k, ApprofDtype dt, int allow_tf32, ApprofGemmDesc *out)
{
    int64_t es = dtsize(dt);
    int64_t b, sa, sb, sc;

    if (!k || !out || k->kind != APPROF_K_GEMM || (int)dt < 0 || dt > APPROF_BF16)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    b = k->batch > 0 ? k->batch : 1;
    sa = mul(k->k, k->n);
    sb = mul(k->m, k->k);
    sc = mul(k->m, k->n);
    if (sa < 0 || sb < 0 || sc < 0 || mul(mul(b, sa), es) < 0 || mul(mul(b, sb), es) < 0 ||
        mul(mul(b, sc), es) < 0)
        return APPROF_EINVAL;
    out->ab_type = dt;
    out->c_type = dt;
    out->compute = (dt == APPROF_F32 && allow_tf32) ? APPROF_GEMM_COMPUTE_32F_FAST_TF32
                                                    : APPROF_GEMM_COMPUTE_32F;
    out->scale_f32 = 1;
    out->M = k->n;
    out->N = k->m;
    out->K = k->k;
    out->lda = k->n;
    out->ldb = k->k;
    out->ldc = k->n;
    out->batch = b;
    out->stride_a = sa;
    out->stride_b = sb;
    out->stride_c = sc;
    out->bytes_a = b * sa * es;
    out->bytes_b = b * sb * es;
    out->bytes_c = b * sc * es;
    return APPROF_OK;
}

int approf_grouped_gemm_plan(const ApprofKernel *k, ApprofDtype dt, int allow_tf32,
                             const int64_t *tokens, ApprofGroupedGemm *out)
{
    ApprofGemmDesc d;
    int64_t E, per, total, used = 0, tok_dim;
    int ek;

    if (!out)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    if (!k || k->kind != APPROF_K_GEMM || k->experts <= 0 || k->experts > INT32_MAX ||
        approf_gemm_desc(k, dt, allow_tf32, &d) < 0 || d.batch % k->experts)
        return APPROF_EINVAL;
    E = k->experts;
    ek = k->experts_k != 0;
    tok_dim = ek ? k->k : k->m;
    per = mul(d.batch / E, tok_dim);       /* the uniform count */
    total = mul(per, E);                   /* the dispatch's slots */
    if (per < 0 || total < 0)
        return APPROF_EINVAL;
    out->g = calloc((size_t)E, sizeof *out->g);
    if (!out->g)
        return APPROF_ENOMEM;
    out->ab_type = d.ab_type;
    out->c_type = d.c_type;
    out->compute = d.compute;
    out->groups = (int)E;
    for (int64_t e = 0; e < E; e++) {
        ApprofGemmGroup *g = &out->g[e];
        int64_t t = tokens ? tokens[e] : per;
        if (t <= 0 || t > total - used) {
            approf_grouped_gemm_free(out);
            return APPROF_EINVAL;
        }
        /* row-major rows x kk @ kk x n as ApprofGemmDesc: M = n, N = rows */
        int64_t rows = ek ? k->m : t, kk = ek ? t : k->k;
        g->tokens = t;
        g->M = k->n;
        g->N = rows;
        g->K = kk;
        g->lda = k->n;
        g->ldb = kk;
        g->ldc = k->n;
        g->off_a = ek ? used * k->n : e * k->k * k->n;   /* dy_e, or w_e */
        g->off_b = used * (ek ? k->m : k->k);            /* x_e^T, or x_e */
        g->off_c = ek ? e * k->m * k->n : used * k->n;   /* dw_e, or y_e */
        used += t;
    }
    out->elems_a = ek ? used * k->n : E * k->k * k->n;
    out->elems_b = used * (ek ? k->m : k->k);
    out->elems_c = ek ? E * k->m * k->n : used * k->n;
    return APPROF_OK;
}

void approf_grouped_gemm_free(ApprofGroupedGemm *g)
{
    if (!g)
        return;
    free(g->g);
    g->g = NULL;
    g->groups = 0;
}

int64_t approf_cuda_align(int64_t bytes)
{
    if (bytes <= 0)
        return 0;
    return (bytes + 255) / 256 * 256;
}

static int conv_buffers(const ApprofKernel *k, ApprofDtype dt, ApprofKernelBuffers *out)
{
    ApprofConvKey key;
    int64_t es = dtsize(dt), oh, ow, x, w, y;
    int rc = approf_conv_key_from_kernel(k, dt, &key);
    if (rc < 0)
        return rc;
    oh = (key.h + 2 * key.pad[0] - key.r) / key.stride[0] + 1;
    ow = (key.w + 2 * key.pad[1] - key.s) / key.stride[1] + 1;
    if (key.h + 2 * key.pad[0] < key.r || key.w + 2 * key.pad[1] < key.s || oh <= 0 || ow <= 0)
        return APPROF_EINVAL;
    x = mul(mul(mul(mul(key.n, key.c), key.h), key.w), es);
    w = mul(mul(mul(mul(key.k, key.c / key.groups), key.r), key.s), es);
    y = mul(mul(mul(mul(key.n, key.k), oh), ow), es);
    if (x < 0 || w < 0 || y < 0)
        return APPROF_EINVAL;
    out->n = 3;
    out->bytes[0] = x;
    out->bytes[1] = w;
    out->bytes[2] = y;
    out->out_h = oh;
    out->out_w = ow;
    return APPROF_OK;
}

/* The shape of the operator k names and its arrays; -1 when k names none
 * or its sizes do not make a layout (then the bandwidth kernel runs). */
static int op_buffers(const ApprofKernel *k, ApprofDtype dt, ApprofKernelBuffers *out)
{
    ApprofOpShape *s = &out->op;
    ApprofOpArrays l[3];
    if (k->kop <= APPROF_CUDA_OP_NONE || k->kop >= APPROF_CUDA_OP_COUNT)
        return -1;
    memset(s, 0, sizeof *s);
    s->op = k->kop;
    s->backward = k->kop_backward != 0;
    s->dtype = (int)dt;
    s->rows = k->rows;
    s->cols = k->cols;
    s->extent = k->extent;
    s->rate = (float)k->rate;
    s->n = k->conv_n;
    s->c = k->conv_c;
    s->h = k->conv_h;
    s->w = k->conv_w;
    if (k->kop == APPROF_CUDA_OP_BATCH_NORM || k->kop == APPROF_CUDA_OP_MAX_POOL ||
        k->kop == APPROF_CUDA_OP_AVG_POOL) {
        s->rows = k->conv_c;
        s->cols = mul(mul(k->conv_n, k->conv_h), k->conv_w);
    }
    if (k->kop == APPROF_CUDA_OP_MAX_POOL || k->kop == APPROF_CUDA_OP_AVG_POOL) {
        /* PyTorch's default floor mode. */
        s->r = (int)k->conv_r;
        s->s = (int)k->conv_s;
        s->stride[0] = k->conv_stride[0];
        s->stride[1] = k->conv_stride[1];
        s->pad[0] = k->conv_pad[0];
        s->pad[1] = k->conv_pad[1];
        if (s->stride[0] <= 0 || s->stride[1] <= 0 || k->conv_h + 2 * s->pad[0] < s->r ||
            k->conv_w + 2 * s->pad[1] < s->s)
            return -1;
        s->oh = (k->conv_h + 2 * s->pad[0] - s->r) / s->stride[0] + 1;
        s->ow = (k->conv_w + 2 * s->pad[1] - s->s) / s->stride[1] + 1;
    }
    if (approf_op_layout(s, l) < 0)
        return -1;
    out->n = 3;
    for (int i = 0; i < 3; i++)
        out->bytes[i] = l[i].total;
    out->real = 1;
    return 0;
}

int approf_kernel_buffers(const ApprofKernel *k, ApprofDtype dt, ApprofKernelBuffers *out)
{
    int64_t es = dtsize(dt), total, elem_bytes, rd, wr;
    ApprofGemmDesc g;
    int rc;

    if (!k || !out || (int)dt < 0 || dt > APPROF_BF16)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    switch (k->kind) {
    case APPROF_K_GEMM:
        rc = approf_gemm_desc(k, dt, 0, &g);
        if (rc < 0)
            return rc;
        out->n = 3;
        out->bytes[0] = g.bytes_a;
        out->bytes[1] = g.bytes_b;
        out->bytes[2] = g.bytes_c;
        return APPROF_OK;
    case APPROF_K_CONV_FWD: case APPROF_K_CONV_BWD_DATA: case APPROF_K_CONV_BWD_FILTER:
        return conv_buffers(k, dt, out);
    case APPROF_K_ELEMENTWISE: case APPROF_K_REDUCTION: case APPROF_K_GATHER: case APPROF_K_COPY:
        if (op_buffers(k, dt, out) == 0)
            return APPROF_OK;
        memset(out, 0, sizeof *out);
        break;
    default:
        return APPROF_EINVAL;
    }
    elem_bytes = mul(k->elements, es);
    if (elem_bytes < 0 || !(k->bytes >= 0) || k->bytes > 9.0e18)
        return APPROF_EINVAL;
    total = k->bytes > 0 ? (int64_t)k->bytes : 2 * elem_bytes;
    if (total < 2 * es)
        total = 2 * es;
    if (k->kind == APPROF_K_REDUCTION) {
        rd = elem_bytes < total ? elem_bytes : total - es;
        wr = total - rd;
    } else {
        wr = elem_bytes < total / 2 ? elem_bytes : total / 2;
        rd = total - wr;
    }
    out->n = 2;
    out->in_elems = (rd + es - 1) / es;
    out->out_elems = (wr + es - 1) / es;
    if (out->in_elems < 1)
        out->in_elems = 1;
    if (out->out_elems < 1)
        out->out_elems = 1;
    out->bytes[0] = out->in_elems * es;
    out->bytes[1] = out->out_elems * es;
    out->pattern = k->kind == APPROF_K_GATHER ? APPROF_BW_GATHER : APPROF_BW_STREAM;
    return APPROF_OK;
}

int64_t approf_kernel_buffers_total(const ApprofKernelBuffers *b)
{
    int64_t t = 0;
    for (int i = 0; i < b->n && i < 3; i++)
        t += approf_cuda_align(b->bytes[i]);
    return t;
}

int64_t approf_cuda_memory_reserve(int64_t total)
{
    if (total < 0)
        total = 0;
    return ((int64_t)512 << 20) + total / 50;
}

int64_t approf_cuda_available_memory(int64_t free_bytes, int64_t total)
{
    int64_t a = free_bytes - approf_cuda_memory_reserve(total);
    return a > 0 ? a : 0;
}

/* ---- the arrays of one operator's kernels (kernels.h) --------------------- */

int approf_op_arrays_add(ApprofOpArrays *a, int64_t elems, int64_t esz)
{
    int64_t b = mul(elems, esz);
    if (b < 0 || a->n >= APPROF_OP_MAX_ARRAYS || a->total > INT64_MAX / 2 - b)
        return -1;
    a->offset[a->n] = a->total;
    a->bytes[a->n] = b;
    a->n++;
    a->total += approf_cuda_align(b);
    return 0;
}

static int arr(ApprofOpArrays *a, int64_t elems, int64_t esz)
{
    return approf_op_arrays_add(a, elems, esz);
}

int approf_op_layout(const ApprofOpShape *s, ApprofOpArrays out[3])
{
    ApprofOpArrays *in = &out[0], *o = &out[1], *aux = &out[2];
    int64_t es, rc, n, e, x, y;
    int bw, bad = 0;

    if (!s || !out)
        return -1;
    memset(out, 0, 3 * sizeof *out);
    if (s->dtype < 0 || s->dtype > 2)
        return -1;
    es = s->dtype == 0 ? 4 : 2;
    bw = s->backward != 0;
    n = mul(s->rows, s->cols);
    e = s->extent;
    switch (s->op) {
    case APPROF_CUDA_OP_LAYER_NORM: case APPROF_CUDA_OP_RMS_NORM:
        bad |= arr(in, n, es);
        if (bw)
            bad |= arr(in, n, es);
        bad |= arr(o, n, es);
        bad |= arr(aux, s->cols, es) | arr(aux, s->cols, es) | arr(aux, s->rows, 4) |
               arr(aux, s->rows, 4);
        if (bw)
            bad |= arr(aux, s->cols, 4) | arr(aux, s->cols, 4);
        break;
    case APPROF_CUDA_OP_SOFTMAX: case APPROF_CUDA_OP_GELU: case APPROF_CUDA_OP_SILU:
    case APPROF_CUDA_OP_RELU: case APPROF_CUDA_OP_DROPOUT:
        bad |= arr(in, n, es);
        if (bw)
            bad |= arr(in, n, es);
        bad |= arr(o, n, es);
        if (s->op == APPROF_CUDA_OP_DROPOUT && !(s->rate >= 0.0f && s->rate < 1.0f))
            bad = -1;
        break;
    case APPROF_CUDA_OP_ADD: case APPROF_CUDA_OP_MUL:
        if (n < 0 || e <= 0 || (e != n && e != s->cols))
            return -1;
        if (!bw) {
            bad |= arr(in, n, es) | arr(in, e, es) | arr(o, n, es);
        } else if (s->op == APPROF_CUDA_OP_ADD) {
            bad |= arr(in, n, es) | arr(o, e, e < n ? 4 : es);
        } else {
            bad |= arr(in, n, es) | arr(in, e, es) | arr(in, n, es);
            bad |= arr(o, n, es) | arr(o, e, e < n ? 4 : es);
        }
        break;
    case APPROF_CUDA_OP_BIAS:
        bad |= arr(in, n, es);
        if (bw) {
            bad |= arr(o, s->cols, 4);
        } else {
            bad |= arr(o, n, es) | arr(aux, s->cols, es);
        }
        break;
    case APPROF_CUDA_OP_EMBEDDING:
        bad |= arr(in, s->rows, 4);
        if (bw) {
            bad |= arr(in, n, es) | arr(o, mul(e, s->cols), 4);
        } else {
            bad |= arr(o, n, es) | arr(aux, mul(e, s->cols), es);
        }
        break;
    case APPROF_CUDA_OP_CROSS_ENTROPY:
        bad |= arr(in, n, es);
        bad |= arr(o, bw ? n : s->rows, bw ? es : 4);
        bad |= arr(aux, s->rows, 4) | arr(aux, s->rows, 4);
        break;
    case APPROF_CUDA_OP_BATCH_NORM:
        x = mul(mul(mul(s->n, s->c), s->h), s->w);
        bad |= arr(in, x, es);
        if (bw)
            bad |= arr(in, x, es);
        bad |= arr(o, x, es);
        for (int i = 0; i < (bw ? 8 : 6); i++)
            bad |= arr(aux, s->c, 4);
        break;
    case APPROF_CUDA_OP_MAX_POOL: case APPROF_CUDA_OP_AVG_POOL:
        if (s->r <= 0 || s->s <= 0 || s->stride[0] <= 0 || s->stride[1] <= 0 || s->pad[0] < 0 ||
            s->pad[1] < 0 || s->oh <= 0 || s->ow <= 0)
            return -1;
        x = mul(mul(mul(s->n, s->c), s->h), s->w);
        y = mul(mul(mul(s->n, s->c), s->oh), s->ow);
        bad |= arr(in, x, es);
        if (bw)
            bad |= arr(in, y, es) | arr(o, x, 4);
        else
            bad |= arr(o, y, es);
        break;
    case APPROF_CUDA_OP_GLOBAL_POOL:
        if (bw)
            bad |= arr(in, s->rows, es) | arr(o, n, es);
        else
            bad |= arr(in, n, es) | arr(o, s->rows, es);
        break;
    case APPROF_CUDA_OP_ROPE:
        if (s->cols % 2 || e < 0)
            return -1;
        bad |= arr(in, n, es) | arr(o, n, es);
        break;
    case APPROF_CUDA_OP_ADAM:
        if (bw)
            return -1;
        bad |= arr(in, n, es) | arr(o, n, es);
        if (es != 4)
            bad |= arr(aux, n, 4);
        bad |= arr(aux, n, 4) | arr(aux, n, 4);
        break;
    default:
        return -1;
    }
    rc = bad ? -1 : 0;
    if (rc < 0)
        memset(out, 0, 3 * sizeof *out);
    return (int)rc;
}
