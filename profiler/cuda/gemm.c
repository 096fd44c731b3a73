/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GEMM kernels of a stage on cuBLASLt: the descriptor from host.h
 * (approf_gemm_desc) turned into cublasLt matmul and layout descriptors
 * (strided batches), the algorithm from cublasLtMatmulAlgoGetHeuristic with
 * the context's workspace limit, and the call itself.
 */
#include <stdio.h>
#include <string.h>

#include "module_int.h"

static cudaDataType_t cuda_type(ApprofDtype dt)
{
    switch (dt) {
    case APPROF_F16: return CUDA_R_16F;
    case APPROF_BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

static int layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows, int64_t cols,
                  int64_t ld, int64_t batch, int64_t stride, char *err, size_t errlen)
{
    int32_t b = (int32_t)batch;
    int rc = cublas_ck(cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld),
                       "cublasLtMatrixLayoutCreate", err, errlen);
    if (rc < 0 || batch <= 1)
        return rc;
    rc = cublas_ck(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b,
                                                    sizeof b), "batch count", err, errlen);
    if (rc < 0)
        return rc;
    return cublas_ck(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                      &stride, sizeof stride),
                     "batch stride", err, errlen);
}

int cuda_gemm_prepare(CudaCtx *c, CudaOp *op, ApprofDtype dt, size_t ws_size, char *err,
                      size_t errlen)
{
    ApprofGemmDesc g;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    cublasComputeType_t ct;
    cudaDataType_t t = cuda_type(dt);
    uint64_t ws = ws_size;
    int found = 0, rc;

    rc = approf_gemm_desc(&op->k, dt, c->allow_tf32, &g);
    if (rc < 0 || g.batch > INT32_MAX) {
        snprintf(err, errlen, "GEMM %lldx%lldx%lld (batch %lld): unsupported shape",
                 (long long)op->k.m, (long long)op->k.n, (long long)op->k.k,
                 (long long)op->k.batch);
        return APPROF_EIO;
    }
    ct = g.compute == APPROF_GEMM_COMPUTE_32F_FAST_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                       : CUBLAS_COMPUTE_32F;
    rc = cublas_ck(cublasLtMatmulDescCreate(&op->mm, ct, CUDA_R_32F), "cublasLtMatmulDescCreate",
                   err, errlen);
    if (rc < 0)
        goto cleanup;
    rc = layout(&op->la, t, g.M, g.K, g.lda, g.batch, g.stride_a, err, errlen);
    if (rc < 0)
        goto cleanup;
    rc = layout(&op->lb, t, g.K, g.N, g.ldb, g.batch, g.stride_b, err, errlen);
    if (rc < 0)
        goto cleanup;
    rc = layout(&op->lc, t, g.M, g.N, g.ldc, g.batch, g.stride_c, err, errlen);
    if (rc < 0)
        goto cleanup;
    rc = cublas_ck(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", err,
                   errlen);
    if (rc < 0)
        goto cleanup;
    rc = cublas_ck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &ws, sizeof ws),
                   "workspace preference", err, errlen);
    if (rc < 0)
        goto cleanup;
    memset(&res, 0, sizeof res);
    rc = cublas_ck(cublasLtMatmulAlgoGetHeuristic(c->lt, op->mm, op->la, op->lb, op->lc, op->lc,
                                                  pref, 1, &res, &found),
                   "cublasLtMatmulAlgoGetHeuristic", err, errlen);
    if (rc < 0)
        goto cleanup;
    if (found < 1 || res.state != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuBLASLt has no algorithm for GEMM %lldx%lldx%lld %s",
                 (long long)op->k.m, (long long)op->k.n, (long long)op->k.k, cuda_dtype_name(dt));
        rc = APPROF_EIO;
        goto cleanup;
    }
    op->algo = res.algo;
    op->ws_need = res.workspaceSize;

cleanup:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    return rc;
}

int cuda_gemm_run(CudaCtx *c, CudaOp *op, void *ws, size_t ws_size, char *err, size_t errlen)
{
    const float one = 1.0f, zero = 0.0f;
    return cublas_ck(cublasLtMatmul(c->lt, op->mm, &one, op->buf[0], op->la, op->buf[1], op->lb,
                                    &zero, op->buf[2], op->lc, op->buf[2], op->lc, &op->algo,
                                    op->ws_need ? ws : NULL, op->ws_need ? ws_size : 0, c->stream),
                     "cublasLtMatmul", err, errlen);
}

void cuda_gemm_release(CudaOp *op)
{
    if (op->la)
        cublasLtMatrixLayoutDestroy(op->la);
    if (op->lb)
        cublasLtMatrixLayoutDestroy(op->lb);
    if (op->lc)
        cublasLtMatrixLayoutDestroy(op->lc);
    if (op->mm)
        cublasLtMatmulDescDestroy(op->mm);
    op->la = op->lb = op->lc = NULL;
    op->mm = NULL;
}
