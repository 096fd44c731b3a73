/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A MoE layer's expert GEMM as one grouped GEMM: cuBLAS's
 * cublasGemmGroupedBatchedEx (CUDA 12.5 and later; the _64 form), one group
 * per expert of one problem each, the per-expert sizes and operand offsets
 * from approf_grouped_gemm_plan (kernel_plan.c). Megatron-Core runs its
 * experts so (core_v0.19.0, megatron/core/transformer/moe/experts.py:
 * TEGroupedMLP, whose GroupedLinear calls Transformer Engine's
 * general_grouped_gemm with m_splits = tokens_per_expert; Transformer
 * Engine then runs one cuBLASLt GEMM per expert over several streams, or
 * CUTLASS's grouped GEMM on Hopper with NVTE_USE_CUTLASS_GROUPED_GEMM=1:
 * transformer_engine/common/gemm/cublaslt_gemm.cu, nvte_multi_tensor_gemm).
 * cuBLAS's grouped call is the library's own kernel for the same problem
 * list. The operand pointers live in a small device array of their own
 * (cuBLAS reads them on the device), outside the tracked arena.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_int.h"

struct CudaGrouped {
    ApprofGroupedGemm plan;
    cudaDataType_t ab, cd;
    int64_t *dims;        /* m, n, k, lda, ldb, ldc, group_size: 7 x groups */
    cublasOperation_t *ops; /* transa, transb: 2 x groups */
    float *scale;         /* alpha, beta: 2 x groups */
    void **dev_ptrs;      /* device: A[groups], B[groups], C[groups] */
};

static cudaDataType_t cuda_type(ApprofDtype dt)
{
    return dt == APPROF_F16 ? CUDA_R_16F : dt == APPROF_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

void cuda_grouped_release(CudaOp *op)
{
    struct CudaGrouped *g = op->grouped;
    if (!g)
        return;
    if (g->dev_ptrs)
        cudaFree(g->dev_ptrs);
    approf_grouped_gemm_free(&g->plan);
    free(g->dims);
    free(g->ops);
    free(g->scale);
    free(g);
    op->grouped = NULL;
}

int cuda_grouped_prepare(CudaCtx *c, CudaOp *op, ApprofDtype dt, void *ws, size_t ws_size,
                         char *err, size_t errlen)
{
    struct CudaGrouped *g = calloc(1, sizeof *g);
    void **host = NULL;
    size_t es = dt == APPROF_F32 ? 4 : 2;
    int n, rc;

    if (!g) {
        snprintf(err, errlen, "out of host memory");
        return APPROF_ENOMEM;
    }
    op->grouped = g;
    rc = approf_grouped_gemm_plan(&op->k, dt, 0, NULL, &g->plan);
    if (rc == APPROF_EINVAL) {
        cuda_grouped_release(op);
        return 1;
    }
    if (rc < 0) {
        snprintf(err, errlen, "expert GEMM %lldx%lldx%lld (batch %lld, %lld experts): %s",
                 (long long)op->k.m, (long long)op->k.n, (long long)op->k.k,
                 (long long)op->k.batch, (long long)op->k.experts,
                 rc == APPROF_ENOMEM ? "out of host memory" : "unsupported shape");
        return rc == APPROF_ENOMEM ? rc : APPROF_EIO;
    }
    /* f32 on TF32 tensor cores as the other GEMMs (approf_gemm_desc): the
     * handle's math mode with CUBLAS_COMPUTE_32F; the context's workspace
     * when there is one (else cuBLAS's own) */
    rc = cublas_ck(cublasSetMathMode(c->blas, c->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                            : CUBLAS_DEFAULT_MATH),
                   "cublasSetMathMode", err, errlen);
    if (rc == 0 && ws && ws_size > 0)
        rc = cublas_ck(cublasSetWorkspace(c->blas, ws, ws_size), "cublasSetWorkspace", err,
                       errlen);
    if (rc < 0)
        return rc;
    n = g->plan.groups;
    g->ab = g->cd = cuda_type(dt);
    g->dims = malloc(7 * (size_t)n * sizeof *g->dims);
    g->ops = malloc(2 * (size_t)n * sizeof *g->ops);
    g->scale = malloc(2 * (size_t)n * sizeof *g->scale);
    host = malloc(3 * (size_t)n * sizeof *host);
    if (!g->dims || !g->ops || !g->scale || !host) {
        free(host);
        snprintf(err, errlen, "out of host memory");
        return APPROF_ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        const ApprofGemmGroup *q = &g->plan.g[i];
        g->dims[i] = q->M;
        g->dims[n + i] = q->N;
        g->dims[2 * n + i] = q->K;
        g->dims[3 * n + i] = q->lda;
        g->dims[4 * n + i] = q->ldb;
        g->dims[5 * n + i] = q->ldc;
        g->dims[6 * n + i] = 1;
        g->ops[i] = g->ops[n + i] = CUBLAS_OP_N;
        g->scale[i] = 1.0f;
        g->scale[n + i] = 0.0f;
        host[i] = (char *)op->buf[0] + (size_t)q->off_a * es;
        host[n + i] = (char *)op->buf[1] + (size_t)q->off_b * es;
        host[2 * n + i] = (char *)op->buf[2] + (size_t)q->off_c * es;
    }
    rc = cuda_ck(cudaMalloc((void **)&g->dev_ptrs, 3 * (size_t)n * sizeof *host),
                 "cudaMalloc (grouped GEMM pointers)", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMemcpy(g->dev_ptrs, host, 3 * (size_t)n * sizeof *host,
                                cudaMemcpyHostToDevice),
                     "cudaMemcpy (grouped GEMM pointers)", err, errlen);
    free(host);
    return rc;
}

int cuda_grouped_run(CudaCtx *c, CudaOp *op, char *err, size_t errlen)
{
    struct CudaGrouped *g = op->grouped;
    int64_t n = g->plan.groups;
    return cublas_ck(cublasGemmGroupedBatchedEx_64(
                         c->blas, g->ops, g->ops + n, g->dims, g->dims + n, g->dims + 2 * n,
                         g->scale, (const void *const *)g->dev_ptrs, g->ab, g->dims + 3 * n,
                         (const void *const *)(g->dev_ptrs + n), g->ab, g->dims + 4 * n,
                         g->scale + n, g->dev_ptrs + 2 * n, g->cd, g->dims + 5 * n, n,
                         g->dims + 6 * n, CUBLAS_COMPUTE_32F),
                     "cublasGemmGroupedBatchedEx", err, errlen);
}
