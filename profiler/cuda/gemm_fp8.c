/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe's FP8 GEMM: E4M3 inputs, bf16 output, FP32 accumulation on
 * cuBLASLt, as Transformer Engine's fp8 linear layers call it on Hopper
 * (transformer_engine/common/gemm/cublaslt_gemm.cu: the "TN" layout FP8
 * needs, A transposed, with per-tensor scales; the scales are left unset
 * here, which cuBLASLt reads as 1). Devices before compute capability 8.9
 * have no FP8 tensor cores: APPROF_EUNSUPPORTED, and the probe skips it.
 */
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "module_int.h"

typedef struct {
    cublasLtMatmulDesc_t mm;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    size_t ws_need;
} Fp8Gemm;

static void fp8_release(Fp8Gemm *g)
{
    if (g->la)
        cublasLtMatrixLayoutDestroy(g->la);
    if (g->lb)
        cublasLtMatrixLayoutDestroy(g->lb);
    if (g->lc)
        cublasLtMatrixLayoutDestroy(g->lc);
    if (g->mm)
        cublasLtMatmulDescDestroy(g->mm);
}

/* s x s x s: D (bf16, s x s, ld s) = A^T B with A and B (E4M3) s x s, ld s. */
static int fp8_prepare(CudaCtx *c, Fp8Gemm *g, int s, size_t ws_size, char *err, size_t errlen)
{
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    uint64_t ws = ws_size;
    int found = 0;
    int rc = cublas_ck(cublasLtMatmulDescCreate(&g->mm, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                       "cublasLtMatmulDescCreate", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtMatmulDescSetAttribute(g->mm, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                                      sizeof ta), "transa", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtMatmulDescSetAttribute(g->mm, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                                      sizeof tb), "transb", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_8F_E4M3, (uint64_t)s, (uint64_t)s, s),
                       "FP8 layout", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_8F_E4M3, (uint64_t)s, (uint64_t)s, s),
                       "FP8 layout", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtMatrixLayoutCreate(&g->lc, CUDA_R_16BF, (uint64_t)s, (uint64_t)s, s),
                       "bf16 layout", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", err,
                       errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtMatmulPreferenceSetAttribute(
                           pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                       "workspace preference", err, errlen);
    memset(&res, 0, sizeof res);
    if (rc == 0)
        rc = cublas_ck(cublasLtMatmulAlgoGetHeuristic(c->lt, g->mm, g->la, g->lb, g->lc, g->lc, pref,
                                                      1, &res, &found),
                       "cublasLtMatmulAlgoGetHeuristic (FP8)", err, errlen);
    if (rc == 0 && (found < 1 || res.state != CUBLAS_STATUS_SUCCESS)) {
        snprintf(err, errlen, "cuBLASLt has no FP8 algorithm for GEMM %d^3", s);
        rc = APPROF_EUNSUPPORTED;
    }
    if (rc == 0) {
        g->algo = res.algo;
        g->ws_need = res.workspaceSize;
    }
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    return rc;
}

int cuda_time_gemm_fp8(CudaCtx *c, int s, int repeats, double *sec, char *err, size_t errlen)
{
    struct cudaDeviceProp prop;
    Fp8Gemm g;
    const float one = 1.0f, zero = 0.0f;
    void *a = NULL, *b = NULL, *d = NULL, *ws = NULL;
    size_t ws_size = 32u << 20, n = (size_t)s * (size_t)s;
    double samples[64], spread;
    int iters = s <= 1024 ? 50 : s <= 2048 ? 20 : s <= 4096 ? 5 : 2, dev = 0, rc;

    memset(&g, 0, sizeof g);
    if (s <= 0 || s % 16 || repeats < 1 || repeats > 64)
        return APPROF_EINVAL;
    rc = cuda_ck(cudaGetDevice(&dev), "cudaGetDevice", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties", err, errlen);
    if (rc < 0)
        return rc;
    if (prop.major * 10 + prop.minor < 89) {
        snprintf(err, errlen, "no FP8 tensor cores (compute capability %d.%d)", prop.major,
                 prop.minor);
        return APPROF_EUNSUPPORTED;
    }
    rc = cuda_ck(cudaMalloc(&a, n), "cudaMalloc", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMalloc(&b, n), "cudaMalloc", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMalloc(&d, 2 * n), "cudaMalloc", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMalloc(&ws, ws_size), "cudaMalloc", err, errlen);
    if (rc == 0)
        rc = cuda_ck((cudaError_t)approf_cuda_launch_fill_fp8(a, (int64_t)n, 7u, c->stream),
                     "FP8 fill", err, errlen);
    if (rc == 0)
        rc = cuda_ck((cudaError_t)approf_cuda_launch_fill_fp8(b, (int64_t)n, 8u, c->stream),
                     "FP8 fill", err, errlen);
    if (rc == 0)
        rc = fp8_prepare(c, &g, s, ws_size, err, errlen);
    for (int r = -1; r < repeats && rc == 0; r++) {
        float ms = 0;
        rc = cuda_ck(cudaEventRecord(c->ev_start, c->stream), "cudaEventRecord", err, errlen);
        for (int i = 0; i < iters && rc == 0; i++)
            rc = cublas_ck(cublasLtMatmul(c->lt, g.mm, &one, a, g.la, b, g.lb, &zero, d, g.lc, d,
                                          g.lc, &g.algo, g.ws_need ? ws : NULL,
                                          g.ws_need ? ws_size : 0, c->stream),
                           "cublasLtMatmul (FP8)", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventRecord(c->ev_stop, c->stream), "cudaEventRecord", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventSynchronize(c->ev_stop), "FP8 GEMM", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop), "cudaEventElapsedTime",
                         err, errlen);
        if (r >= 0)                     /* r = -1: the warm-up round */
            samples[r] = (double)ms * 1e-3 / iters;
    }
    if (rc == 0 && approf_cuda_stats(samples, repeats, sec, &spread) < 0)
        rc = APPROF_EIO;
    cudaStreamSynchronize(c->stream);
    fp8_release(&g);
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
    cudaFree(ws);
    return rc;
}
