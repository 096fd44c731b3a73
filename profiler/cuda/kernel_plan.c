/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the CUDA backend lays out one kernel: the cuBLASLt problem of a GEMM
 * (row-major operands passed as the transposed column-major product), the
 * buffers of every kernel kind, the arena alignment, and the memory reserve
 * behind available_memory.
 */
#include <stdint.h>
#include <string.h>

#include "host.h"

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
