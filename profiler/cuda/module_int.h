/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the approf-cuda module (only the module includes this): the
 * per-device context, one prepared kernel, the GEMM (cuBLASLt) and
 * convolution (cuDNN) helpers and the error conversion (ck.c) shared by module.c,
 * gemm.c, conv.c, probe_run.c and probe_gemm.c. Every helper returns 0, APPROF_ENOMEM
 * when CUDA, cuBLAS or cuDNN ran out of memory, or APPROF_EIO for any other
 * failure, with the library's message in err.
 */
#ifndef APPROF_CUDA_MODULE_INT_H
#define APPROF_CUDA_MODULE_INT_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "../backend.h"
#include "host.h"

#define APPROF_EXPORT __attribute__((visibility("default")))

typedef struct CudaCtx {
    int device;
    cudaStream_t stream;
    cudaEvent_t ev_start, ev_stop;
    cublasLtHandle_t lt;
    cublasHandle_t blas;         /* grouped GEMMs (grouped_gemm.c) */
    cudnnHandle_t dnn;
    ApprofAlgoCache *algos;
    int warmup, repeats;
    int allow_tf32;              /* this measurement: env_tf32 and the spec's allow_tf32 */
    int env_tf32;                /* APPROF_CUDA_TF32 (default 1): 0 forbids TF32 */
    int standin;                 /* APPROF_CUDA_STANDIN (default 0): 1 runs every memory-bound
                                  * kernel as the bandwidth kernel */
    int grouped;                 /* APPROF_CUDA_GROUPED_GEMM (default 1): 0 runs expert GEMMs
                                  * as cuBLASLt strided batches, as before backend ABI 11 */
    int adam;                    /* APPROF_CUDA_ADAM (default 1): 0 leaves the optimizer step
                                  * to the analytic price */
    int sdpa;                    /* APPROF_CUDA_SDPA (default 1): 0 runs a fused attention as
                                  * its GEMMs (cuBLASLt), as before backend ABI 14 */
    uint64_t sdpa_said[32];      /* fallback reasons already on stderr (hashes) */
    int n_sdpa_said;
    struct CudaSdpa *sdpa_cache[64]; /* fused attention plans (and refusals) by shape (sdpa.c) */
    int n_sdpa_cache;
    size_t workspace_limit;      /* bytes for cuBLASLt/cuDNN workspace */
} CudaCtx;

/* One kernel of a phase, ready to run. */
typedef struct CudaOp {
    ApprofKernel k;
    ApprofKernelBuffers b;
    void *buf[3];                /* GEMM A B C; conv x w y; operator in out aux */
    /* GEMM */
    cublasLtMatmulDesc_t mm;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    /* convolution */
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int conv_algo;
    size_t ws_need;
    /* an expert GEMM as one grouped GEMM (grouped_gemm.c) */
    struct CudaGrouped *grouped;
    /* a fused attention through cuDNN (sdpa.c), run in place of the
     * attention's GEMMs; skip: one of those GEMMs (nothing runs) */
    struct CudaSdpa *sdpa;
    int sdpa_cached;             /* sdpa belongs to the context's cache */
    int skip;
    /* batch norm through cuDNN (bnorm.c) */
    cudnnTensorDescriptor_t bn_x, bn_p;
    ApprofOpArrays arrays[3];
} CudaOp;

/* The module links no core library, so it names dtypes itself. */
static inline const char *cuda_dtype_name(ApprofDtype dt)
{
    return dt == APPROF_F16 ? "f16" : dt == APPROF_BF16 ? "bf16" : "f32";
}

int cuda_ck(cudaError_t e, const char *what, char *err, size_t errlen);
int cublas_ck(cublasStatus_t s, const char *what, char *err, size_t errlen);
int cudnn_ck(cudnnStatus_t s, const char *what, char *err, size_t errlen);

/* Creates the cuBLASLt descriptors and picks an algorithm (heuristic) for
 * op->k with op->buf set; ws_size is the workspace it may use. */
int cuda_gemm_prepare(CudaCtx *c, CudaOp *op, ApprofDtype dt, size_t ws_size, char *err,
                      size_t errlen);
int cuda_gemm_run(CudaCtx *c, CudaOp *op, void *ws, size_t ws_size, char *err, size_t errlen);
void cuda_gemm_release(CudaOp *op);

/* An expert GEMM (op->k.experts > 0) as one cublasGemmGroupedBatchedEx
 * call over the experts (approf_grouped_gemm_plan, uniform tokens), with
 * op->buf set: the per-expert arrays, the device array of operand
 * pointers; the handle's math mode and workspace (ws, ws_size). 1 (and
 * nothing prepared) for a kernel the plan does not take: the caller runs
 * it as a strided batch (cuda_gemm_prepare). */
int cuda_grouped_prepare(CudaCtx *c, CudaOp *op, ApprofDtype dt, void *ws, size_t ws_size,
                         char *err, size_t errlen);
int cuda_grouped_run(CudaCtx *c, CudaOp *op, char *err, size_t errlen);
void cuda_grouped_release(CudaOp *op);

/* Median seconds of one fused Adam step (adam.cu) over `elements`
 * parameters in dt (adam_step.c): its arrays at the start of the arena
 * when they fit in arena_bytes, else in a block of their own from t (the
 * arena freed first); warmup untimed steps, then repeats timed ones. */
int cuda_time_adam(CudaCtx *c, ApprofTrackAlloc *t, void **arena, int64_t arena_bytes,
                   ApprofDtype dt, double elements, double *sec, char *err, size_t errlen);

/* Creates the cuDNN descriptors and chooses the algorithm with
 * cudnnFind*AlgorithmEx, once per shape (the context's cache). */
int cuda_conv_prepare(CudaCtx *c, CudaOp *op, ApprofDtype dt, void *ws, size_t ws_size,
                      char *err, size_t errlen);
int cuda_conv_run(CudaCtx *c, CudaOp *op, void *ws, size_t ws_size, char *err, size_t errlen);
void cuda_conv_release(CudaOp *op);

/* Batch norm (an operator kernel of kind BATCH_NORM) through cuDNN's
 * batch norm API: descriptors and the operator's array offsets, the call. */
int cuda_bn_prepare(CudaCtx *c, CudaOp *op, ApprofDtype dt, char *err, size_t errlen);
int cuda_bn_run(CudaCtx *c, CudaOp *op, ApprofDtype dt, char *err, size_t errlen);
void cuda_bn_release(CudaOp *op);

/* A fused attention of shape s through cuDNN's backend API (sdpa.c): the
 * graph of sdpa_plan.c, an execution plan from cuDNN's heuristics, the
 * variant pack over the arrays at bufs ([0] in, [1] out, [2] aux laid out
 * as approf_sdpa_graph's arrays say) and the workspace ws (ws_size bytes).
 * 0 with op->sdpa set; APPROF_EUNSUPPORTED when cuDNN refuses (its text in
 * err: the caller runs the GEMMs instead), another code for a failure. A
 * shape's plan, or its refusal, is kept in the context (c->sdpa_cache) and
 * reused: cuDNN's runtime-compiled engine builds its kernel once a shape. */
struct ApprofSdpaShape;
int cuda_sdpa_prepare(CudaCtx *c, CudaOp *op, const struct ApprofSdpaShape *s,
                      void *const bufs[3], void *ws, size_t ws_size, char *err, size_t errlen);
int cuda_sdpa_run(CudaCtx *c, CudaOp *op, char *err, size_t errlen);
/* Releases op's hold (the plan stays in the context's cache, keyed by
 * shape, until cuda_sdpa_cache_free). */
void cuda_sdpa_release(CudaOp *op);
void cuda_sdpa_cache_free(CudaCtx *c);
/* Makes and finalizes the tensor and operation descriptors of s's graph
 * and sets them on an operation graph, all without a handle (so without a
 * GPU): cuDNN's checks of each descriptor's attributes. 0, or the first
 * refusal with cuDNN's text. */
int cuda_sdpa_check(const struct ApprofSdpaShape *s, const char *device_json, char *engine,
                    size_t enginelen, char *err, size_t errlen);

/* Median seconds of one m x n x k GEMM in dt (probe_gemm.c): operands at
 * bufs (A' k x n, B' m x k, C m x n, as approf_kernel_buffers lays them
 * out, each at least that large), warmup untimed GEMMs, then repeats
 * batches of iters back-to-back GEMMs between CUDA events; repeats 1..64. */
int cuda_time_gemm_shape(CudaCtx *c, ApprofDtype dt, int64_t m, int64_t n, int64_t k,
                         void *const bufs[3], void *ws, size_t ws_size, int warmup, int iters,
                         int repeats, double *sec, char *err, size_t errlen);
/* The probe's GEMM shape grid (req->gemm_grid, probe.h) to req->on_gemm_shape
 * and a progress line per dtype (probe_gemm.c). 0, a callback's non-zero
 * value or an error. */
struct ApprofProbeRequest;
/* One progress line of the probe to req->on_progress (probe_gemm.c). */
void cuda_probe_say(const struct ApprofProbeRequest *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cuda_probe_gemm_grid(CudaCtx *c, const struct ApprofProbeRequest *req, int repeats,
                         char *err, size_t errlen);

/* Median seconds of one s x s x s FP8 (E4M3 in, bf16 out) GEMM on
 * cuBLASLt (gemm_fp8.c); APPROF_EUNSUPPORTED without FP8 tensor cores. */
/* The GEMM / collective overlap points of approf probe (probe_overlap.c):
 * on_compute ops "overlap-gemm:<coll>" and "overlap-gemm+<coll>" (bf16
 * GEMM FLOP/s alone and beside the collective), "overlap-<coll>" and
 * "overlap-<coll>+gemm" (f32 algorithm bytes/s alone and beside the GEMM),
 * <coll> all-reduce and all-gather, over devices 0..count-1. With fewer
 * than 2 devices it says why it measured nothing and returns 0. */
int cuda_probe_overlap(const struct ApprofProbeRequest *req, int count, int repeats, char *err,
                       size_t errlen);
int cuda_time_gemm_fp8(CudaCtx *c, int s, int repeats, double *sec, char *err, size_t errlen);

/* Both read APPROF_CUDA_* environment variables: an integer in [lo, hi] or
 * def when unset or malformed. */
int cuda_env_int(const char *name, int def, int lo, int hi);

#endif
