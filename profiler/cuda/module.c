/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The approf-cuda module's backend: approf_backend_module_init checks for a
 * device and builds the context (stream, events, cuBLASLt and cuDNN
 * handles, algorithm cache); measure() runs the kernels of one phase of a
 * stage program on that GPU and times them. Buffers come from a tracking
 * allocator over cudaMalloc: one arena as large as the stage's peak memory
 * (or the largest kernel's operands, if more) in which every kernel's
 * operands are placed, plus one cuBLASLt/cuDNN workspace; the tracked peak
 * is the entry's peak_memory. The phase runs warmup times, then repeats
 * times between CUDA events; the median is the cost, (max - min) / median
 * the spread. A MoE layer's expert GEMMs run as one grouped GEMM
 * (grouped_gemm.c), a fused attention as cuDNN's fused flash attention
 * (sdpa.c; its GEMMs when cuDNN refuses, with the reason on stderr); with
 * the backward phase the module also times the
 * stage's optimizer step (adam_step.c: apply_seconds). Out of memory gives
 * status oom, any other CUDA error status failed, both with the error text
 * and everything freed. Collectives are costed by the loader, not here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "module_int.h"
#include "sdpa.h"

#define STATUS_OK 0      /* CostdbStatus values */
#define STATUS_OOM 1
#define STATUS_FAILED 2
#define MIB ((size_t)1 << 20)

static int raw_alloc(void *user, size_t bytes, void **ptr)
{
    cudaError_t e;
    (void)user;
    e = cudaMalloc(ptr, bytes);
    if (e == cudaSuccess)
        return 0;
    *ptr = NULL;
    return e == cudaErrorMemoryAllocation ? APPROF_ENOMEM : APPROF_EIO;
}

static void raw_free(void *user, void *ptr)
{
    (void)user;
    cudaFree(ptr);
}

static int run_op(CudaCtx *c, CudaOp *op, ApprofDtype dt, void *ws, size_t ws_size, char *err,
                  size_t errlen)
{
    if (op->skip)
        return 0;
    switch (op->k.kind) {
    case APPROF_K_GEMM:
        if (op->sdpa)
            return cuda_sdpa_run(c, op, err, errlen);
        if (op->grouped)
            return cuda_grouped_run(c, op, err, errlen);
        return cuda_gemm_run(c, op, ws, ws_size, err, errlen);
    case APPROF_K_CONV_FWD: case APPROF_K_CONV_BWD_DATA: case APPROF_K_CONV_BWD_FILTER:
        return cuda_conv_run(c, op, ws, ws_size, err, errlen);
    default:
        if (op->b.real && op->b.op.op == APPROF_CUDA_OP_BATCH_NORM)
            return cuda_bn_run(c, op, dt, err, errlen);
        if (op->b.real)
            return cuda_ck((cudaError_t)approf_cuda_launch_op(&op->b.op, op->buf[0], op->buf[1],
                                                              op->buf[2], c->stream),
                           "operator kernel", err, errlen);
        return cuda_ck((cudaError_t)approf_cuda_launch_bw((int)dt, (int)op->b.pattern, op->buf[0],
                                                          op->b.in_elems, op->buf[1],
                                                          op->b.out_elems, c->stream),
                       "bandwidth kernel", err, errlen);
    }
}

static int run_all(CudaCtx *c, CudaOp *ops, size_t n, ApprofDtype dt, void *ws, size_t ws_size,
                   char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        int rc = run_op(c, &ops[i], dt, ws, ws_size, err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Carves op's buffers out of the arena, back to back from its start. */
static void place(CudaOp *op, char *arena)
{
    int64_t off = 0;
    for (int i = 0; i < op->b.n; i++) {
        op->buf[i] = arena + off;
        off += approf_cuda_align(op->b.bytes[i]);
    }
}

/* The arrays of a fused attention's graph at the start of the arena, its
 * three buffers back to back (as place() lays out a kernel's). */
static void sdpa_place(const ApprofSdpaGraph *g, char *arena, void *bufs[3])
{
    int64_t off = 0;
    for (int i = 0; i < 3; i++) {
        bufs[i] = arena + off;
        off += approf_cuda_align(g->arrays[i].total);
    }
}

static int64_t sdpa_bytes(const ApprofSdpaGraph *g)
{
    int64_t t = 0;
    for (int i = 0; i < 3; i++)
        t += approf_cuda_align(g->arrays[i].total);
    return t;
}

/* Says once per distinct reason (on stderr, the module's diagnostics)
 * that an attention runs as its GEMMs instead of cuDNN's fused kernel. */
static void sdpa_say(CudaCtx *c, const ApprofSdpaShape *s, const char *why)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *q = why; *q; q++)
        h = (h ^ (unsigned char)*q) * 1099511628211ull;
    for (int i = 0; i < c->n_sdpa_said; i++)
        if (c->sdpa_said[i] == h)
            return;
    if (c->n_sdpa_said < (int)(sizeof c->sdpa_said / sizeof c->sdpa_said[0]))
        c->sdpa_said[c->n_sdpa_said++] = h;
    if (s)
        fprintf(stderr,
                "approf-cuda: attention %s b %lld, heads %lld/%lld, %lld x %lld, d %lld%s: "
                "timed as its GEMMs, not cuDNN's fused kernel: %s\n",
                s->backward ? "backward" : "forward", (long long)s->b, (long long)s->hq,
                (long long)s->hkv, (long long)s->sq, (long long)s->skv, (long long)s->d,
                s->causal ? ", causal" : "", why);
    else
        fprintf(stderr, "approf-cuda: attention timed as its GEMMs, not cuDNN's fused kernel: %s\n",
                why);
}

/* Runs the fused attention whose lead GEMM is ops[i] through cuDNN, its
 * other GEMMs (up to the next lead) skipped; when cuDNN refuses, leaves
 * them all to the GEMM path and says why. 0, or a failure's code. */
static int sdpa_try(CudaCtx *c, CudaOp *ops, size_t n, size_t i, ApprofDtype dt, char *arena,
                    void *ws, size_t ws_size, char *err, size_t errlen)
{
    ApprofSdpaShape s;
    ApprofSdpaGraph g;
    const char *why;
    void *bufs[3];
    char text[256];
    int rc;

    if (!approf_sdpa_route(&ops[i].k, dt, &s, &why)) {
        if (why)
            sdpa_say(c, NULL, why);
        return 0;
    }
    if (approf_sdpa_graph(&s, 0.0f, &g) < 0) {
        sdpa_say(c, &s, "no graph for this shape");
        return 0;
    }
    sdpa_place(&g, arena, bufs);
    rc = cuda_sdpa_prepare(c, &ops[i], &s, bufs, ws, ws_size, text, sizeof text);
    if (rc == APPROF_ENOMEM) {
        snprintf(err, errlen, "%s", text);
        return rc;
    }
    if (rc < 0) {
        sdpa_say(c, &s, text);
        cudaGetLastError();
        return 0;
    }
    for (size_t j = i + 1; j < n; j++) {
        /* the group's followers: ops' kernels are the program's, in order */
        ApprofKernel pair[2] = {ops[i].k, ops[j].k};
        if (approf_sdpa_group(pair, 2, 0) != 2)
            break;
        ops[j].skip = 1;
    }
    return 0;
}

static int cuda_measure(void *vctx, const ApprofStageProgram *p, int phase,
                        const ApprofHardwareSpec *hw, ApprofMeasurement *out)
{
    CudaCtx *c = vctx;
    ApprofTrackAlloc t;
    CudaOp *ops = NULL;
    double *samples = NULL;
    void *arena = NULL, *ws = NULL;
    size_t n, ws_size = 0, free_b = 0, total_b = 0;
    int64_t arena_bytes = 0, phase_peak = -1;
    ApprofDtype dt;
    int rc = 0;

    if (!c || !p || !out || phase < 0 || phase > 1)
        return APPROF_EINVAL;
    /* f32 math as the analytic backend prices it: TF32 unless the spec
     * says allow_tf32 = 0 (or APPROF_CUDA_TF32=0 forbids it here). */
    c->allow_tf32 = c->env_tf32 && (!hw || hw->allow_tf32);
    memset(out, 0, sizeof *out);
    approf_track_init(&t, raw_alloc, raw_free, c);
    dt = (p->dtype >= APPROF_F32 && p->dtype <= APPROF_BF16) ? p->dtype : APPROF_F32;
    n = p->n_kernels[phase];
    rc = cuda_ck(cudaSetDevice(c->device), "cudaSetDevice", out->error, sizeof out->error);
    if (rc == 0)
        rc = cuda_ck(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", out->error,
                     sizeof out->error);
    if (rc < 0)
        goto cleanup;
    out->available_memory = approf_cuda_available_memory((int64_t)free_b, (int64_t)total_b);
    ops = calloc(n ? n : 1, sizeof *ops);
    samples = calloc((size_t)c->repeats, sizeof *samples);
    if (!ops || !samples) {
        snprintf(out->error, sizeof out->error, "out of host memory");
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        ops[i].k = p->kernels[phase][i];
        if (c->standin)
            ops[i].k.kop = APPROF_CUDA_OP_NONE;
        if (approf_kernel_buffers(&ops[i].k, dt, &ops[i].b) < 0) {
            snprintf(out->error, sizeof out->error, "kernel %zu (kind %d): unsupported shape", i,
                     (int)ops[i].k.kind);
            rc = APPROF_EIO;
            goto cleanup;
        }
        if (approf_kernel_buffers_total(&ops[i].b) > arena_bytes)
            arena_bytes = approf_kernel_buffers_total(&ops[i].b);
        if (c->sdpa && ops[i].k.attention && ops[i].k.attn_lead) {
            /* room for the fused attention's arrays too */
            ApprofSdpaShape s;
            ApprofSdpaGraph g;
            const char *why;
            if (approf_sdpa_route(&ops[i].k, dt, &s, &why) &&
                approf_sdpa_graph(&s, 0.0f, &g) == 0 && sdpa_bytes(&g) > arena_bytes)
                arena_bytes = sdpa_bytes(&g);
        }
    }
    if (approf_cuda_align(p->peak_memory[phase]) > arena_bytes)
        arena_bytes = approf_cuda_align(p->peak_memory[phase]);
    if (arena_bytes > 0) {
        rc = approf_track_alloc(&t, (size_t)arena_bytes, &arena);
        if (rc < 0) {
            snprintf(out->error, sizeof out->error, "cudaMalloc of the %.3f GiB stage arena: %s",
                     (double)arena_bytes / 1073741824.0,
                     rc == APPROF_ENOMEM ? "out of memory" : "failed");
            goto cleanup;
        }
        rc = cuda_ck((cudaError_t)approf_cuda_launch_fill((int)dt, arena,
                                                          arena_bytes / (dt == APPROF_F32 ? 4 : 2),
                                                          12345u, c->stream),
                     "fill kernel", out->error, sizeof out->error);
        if (rc < 0)
            goto cleanup;
    }
    /* One workspace for cuBLASLt and cuDNN: the limit, or half of what is
     * left, whichever is smaller. */
    if (n > 0) {
        rc = cuda_ck(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", out->error,
                     sizeof out->error);
        if (rc < 0)
            goto cleanup;
        ws_size = free_b / 2 < c->workspace_limit ? free_b / 2 : c->workspace_limit;
        ws_size = ws_size / MIB * MIB;
        if (ws_size >= 4 * MIB && approf_track_alloc(&t, ws_size, &ws) < 0)
            ws = NULL;
        if (!ws)
            ws_size = 0;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        place(&ops[i], arena);
        if (ops[i].skip)
            continue;
        if (ops[i].k.kind == APPROF_K_GEMM && ops[i].k.attention && ops[i].k.attn_lead &&
            c->sdpa) {
            rc = sdpa_try(c, ops, n, i, dt, arena, ws, ws_size, out->error, sizeof out->error);
            if (rc < 0 || ops[i].sdpa)
                continue;
        }
        if (ops[i].k.kind == APPROF_K_GEMM) {
            /* an expert GEMM as one grouped GEMM (1: one its plan does not
             * take, which runs as the strided batch) */
            if (ops[i].k.experts > 0 && c->grouped)
                rc = cuda_grouped_prepare(c, &ops[i], dt, ws, ws_size, out->error,
                                          sizeof out->error);
            if (!ops[i].grouped && rc >= 0)
                rc = cuda_gemm_prepare(c, &ops[i], dt, ws_size < 32 * MIB ? ws_size : 32 * MIB,
                                       out->error, sizeof out->error);
        } else if (ops[i].k.kind >= APPROF_K_CONV_FWD && ops[i].k.kind <= APPROF_K_CONV_BWD_FILTER)
            rc = cuda_conv_prepare(c, &ops[i], dt, ws, ws_size, out->error, sizeof out->error);
        else if (ops[i].b.real && ops[i].b.op.op == APPROF_CUDA_OP_BATCH_NORM)
            rc = cuda_bn_prepare(c, &ops[i], dt, out->error, sizeof out->error);
        else if (ops[i].b.real)
            rc = cuda_ck((cudaError_t)approf_cuda_op_init(&ops[i].b.op, ops[i].buf[0],
                                                          ops[i].buf[1], ops[i].buf[2], c->stream),
                         "operator kernel's indices", out->error, sizeof out->error);
    }
    if (rc < 0)
        goto cleanup;
    if (n == 0) {
        /* Nothing runs in this phase (reshapes only): it costs nothing. */
        out->compute_cost = 0.0;
        out->spread = 0.0;
        goto cleanup;
    }
    for (int w = 0; w < c->warmup && rc == 0; w++)
        rc = run_all(c, ops, n, dt, ws, ws_size, out->error, sizeof out->error);
    if (rc == 0)
        rc = cuda_ck(cudaStreamSynchronize(c->stream), "warm-up", out->error, sizeof out->error);
    for (int r = 0; r < c->repeats && rc == 0; r++) {
        float ms = 0.0f;
        rc = cuda_ck(cudaEventRecord(c->ev_start, c->stream), "cudaEventRecord", out->error,
                     sizeof out->error);
        if (rc == 0)
            rc = run_all(c, ops, n, dt, ws, ws_size, out->error, sizeof out->error);
        if (rc == 0)
            rc = cuda_ck(cudaEventRecord(c->ev_stop, c->stream), "cudaEventRecord", out->error,
                         sizeof out->error);
        if (rc == 0)
            rc = cuda_ck(cudaEventSynchronize(c->ev_stop), "timed run", out->error,
                         sizeof out->error);
        if (rc == 0)
            rc = cuda_ck(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop),
                         "cudaEventElapsedTime", out->error, sizeof out->error);
        samples[r] = (double)ms * 1e-3;
    }
    if (rc == 0 && approf_cuda_stats(samples, c->repeats, &out->compute_cost, &out->spread) < 0) {
        snprintf(out->error, sizeof out->error, "invalid timings");
        rc = APPROF_EIO;
    }
    /* The optimizer step, once per iteration after the last backward: with
     * the backward phase, after its peak is taken. Without room for its
     * arrays it is left to the analytic price (apply_seconds 0). */
    if (rc == 0 && phase == 1 && c->adam && p->optimizer_elements >= 1.0) {
        char why[256];
        int arc;
        phase_peak = t.peak;
        arc = cuda_time_adam(c, &t, &arena, arena_bytes, dt, p->optimizer_elements,
                             &out->apply_seconds, why, sizeof why);
        if (arc == APPROF_ENOMEM) {
            out->apply_seconds = 0.0;
        } else if (arc < 0) {
            snprintf(out->error, sizeof out->error, "optimizer step: %.230s", why);
            rc = arc;
        }
    }

cleanup:
    cudaStreamSynchronize(c->stream);
    for (size_t i = 0; ops && i < n; i++) {
        cuda_gemm_release(&ops[i]);
        cuda_grouped_release(&ops[i]);
        cuda_conv_release(&ops[i]);
        cuda_bn_release(&ops[i]);
        cuda_sdpa_release(&ops[i]);
    }
    approf_track_release_all(&t);
    out->peak_memory = phase_peak >= 0 ? phase_peak : t.peak;
    free(ops);
    free(samples);
    /* Clears a non-sticky error so that the next entry starts clean. */
    cudaGetLastError();
    if (rc < 0) {
        out->status = rc == APPROF_ENOMEM ? STATUS_OOM : STATUS_FAILED;
        out->compute_cost = INFINITY;
        out->repeats = 0;
        out->spread = 0.0;
        out->apply_seconds = 0.0;
    } else {
        out->status = STATUS_OK;
        out->repeats = c->repeats;
        out->error[0] = '\0';
    }
    return APPROF_OK;
}

static void ctx_free(CudaCtx *c)
{
    if (!c)
        return;
    cudaSetDevice(c->device);
    cuda_sdpa_cache_free(c);
    if (c->dnn)
        cudnnDestroy(c->dnn);
    if (c->blas)
        cublasDestroy(c->blas);
    if (c->lt)
        cublasLtDestroy(c->lt);
    if (c->ev_start)
        cudaEventDestroy(c->ev_start);
    if (c->ev_stop)
        cudaEventDestroy(c->ev_stop);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    approf_algo_cache_free(&c->algos);
    free(c);
}

static void cuda_destroy(void *ctx)
{
    ctx_free(ctx);
}

APPROF_EXPORT int approf_backend_module_init(int abi, ApprofBackend *out, char *err,
                                             size_t errlen);
APPROF_EXPORT int approf_backend_module_init_on(int abi, int device, ApprofBackend *out,
                                                char *err, size_t errlen);

/* Entry point (ApprofBackendModuleInit): device APPROF_CUDA_DEVICE (0). */
int approf_backend_module_init(int abi, ApprofBackend *out, char *err, size_t errlen)
{
    return approf_backend_module_init_on(abi, -1, out, err, errlen);
}

/* Entry point "approf_backend_module_init_on" (ApprofBackendModuleInitOn):
 * a backend on device (0 <= device < count; -1: APPROF_CUDA_DEVICE, else 0),
 * one per sweep worker. APPROF_CUDA_WARMUP (2) and APPROF_CUDA_REPEATS (5)
 * runs, TF32 for f32 unless the spec says allow_tf32 = 0 or APPROF_CUDA_TF32=0, workspace
 * APPROF_CUDA_WORKSPACE_MIB (256); APPROF_CUDA_STANDIN, APPROF_CUDA_GROUPED_GEMM,
 * APPROF_CUDA_ADAM and APPROF_CUDA_SDPA choose kernels (below). */
int approf_backend_module_init_on(int abi, int device, ApprofBackend *out, char *err,
                                  size_t errlen)
{
    CudaCtx *c = NULL;
    int count = 0, rc;
    cudaError_t e;

    if (!out || !err || errlen == 0)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    if (abi != APPROF_BACKEND_ABI) {
        snprintf(err, errlen, "no CUDA backend: module ABI %d, approf expects %d",
                 APPROF_BACKEND_ABI, abi);
        return APPROF_ENODEV;
    }
    e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return APPROF_ENODEV;
    }
    if (count < 1) {
        snprintf(err, errlen, "no CUDA device: cudaGetDeviceCount found none");
        return APPROF_ENODEV;
    }
    c = calloc(1, sizeof *c);
    if (!c)
        return APPROF_ENOMEM;
    if (device >= count) {
        snprintf(err, errlen, "no CUDA device %d: this process sees %d", device, count);
        free(c);
        return APPROF_ENODEV;
    }
    c->device = device >= 0 ? device : cuda_env_int("APPROF_CUDA_DEVICE", 0, 0, count - 1);
    c->warmup = cuda_env_int("APPROF_CUDA_WARMUP", 2, 0, 1000);
    c->repeats = cuda_env_int("APPROF_CUDA_REPEATS", 5, 1, 1000);
    c->env_tf32 = cuda_env_int("APPROF_CUDA_TF32", 1, 0, 1);
    /* 1: every memory-bound kernel runs as the bandwidth kernel over its
     * bytes (the backend before it ran the operators' own kernels; kept to
     * measure what the operators' kernels change). */
    c->standin = cuda_env_int("APPROF_CUDA_STANDIN", 0, 0, 1);
    /* 0: a MoE layer's expert GEMMs run as cuBLASLt strided batches (one
     * weight per sample and expert, as before backend ABI 11) instead of
     * one grouped GEMM over the experts */
    c->grouped = cuda_env_int("APPROF_CUDA_GROUPED_GEMM", 1, 0, 1);
    /* 0: the optimizer step is not measured (the analytic price stays) */
    c->adam = cuda_env_int("APPROF_CUDA_ADAM", 1, 0, 1);
    /* 0: a fused attention runs as its GEMMs through cuBLASLt, not as
     * cuDNN's fused flash attention (sdpa.c) */
    c->sdpa = cuda_env_int("APPROF_CUDA_SDPA", 1, 0, 1);
    c->allow_tf32 = c->env_tf32;
    c->workspace_limit = (size_t)cuda_env_int("APPROF_CUDA_WORKSPACE_MIB", 256, 0, 1 << 20) * MIB;
    rc = cuda_ck(cudaSetDevice(c->device), "cudaSetDevice", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
                     "cudaStreamCreate", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaEventCreate(&c->ev_start), "cudaEventCreate", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaEventCreate(&c->ev_stop), "cudaEventCreate", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtCreate(&c->lt), "cublasLtCreate", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasCreate(&c->blas), "cublasCreate", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasSetStream(c->blas, c->stream), "cublasSetStream", err, errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnCreate(&c->dnn), "cudnnCreate", err, errlen);
    if (rc == 0)
        rc = cudnn_ck(cudnnSetStream(c->dnn, c->stream), "cudnnSetStream", err, errlen);
    if (rc == 0 && approf_algo_cache_new(&c->algos) < 0) {
        snprintf(err, errlen, "out of host memory");
        rc = APPROF_ENOMEM;
    }
    if (rc < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "CUDA device %d unusable: %s", c->device, why);
        ctx_free(c);
        return APPROF_ENODEV;
    }
    out->name = "cuda";
    out->ctx = c;
    out->measure = cuda_measure;
    out->destroy = cuda_destroy;
    return APPROF_OK;
}
