/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe's GEMMs on cuBLASLt as the CUDA backend runs them (gemm.c):
 * the timing of one m x n x k GEMM (the square sizes of approf probe's
 * compute points use it too) and the shape grid (ApprofProbeRequest
 * gemm_grid, probe ABI 3): every (m, n, k) of the grid's sizes in bf16,
 * f16 and f32 (dtype "tf32" when TF32 tensor cores are allowed), handed to
 * on_gemm_shape. A GPU is not smooth in the shape: a tile count that
 * leaves a partial last wave of the SMs, or a short K loop, runs below
 * what the peak and one efficiency figure say (docs/validation.md, "Third
 * run"); the analytic backend interpolates in the grid instead
 * (profiler/hw/gemm_table.c).
 *
 * Time with the default grid (512 ... 16384, 6 sizes: 216 shapes per
 * dtype; each timed as the square GEMMs are, the median of the repeats of
 * batches of back-to-back GEMMs, iters per batch so that a batch is about
 * 2e11 FLOP, 2..50): 2 untimed + 5 x iters timed GEMMs per shape, about
 * 1.1 s of GEMMs per 16-bit dtype at 700 TFLOP/s and twice that in TF32,
 * plus the descriptors and cuBLASLt's heuristic per shape. Measured on one
 * H200 (2026-11-28): bf16 1.5 s, f16 1.5 s, tf32 2.8 s, 5.8 s in all
 * (bench/h200/probe-grid.tsv). The operands are allocated once, for the
 * largest shape that fits half the free memory (3 x 16384^2 x 4 bytes =
 * 3 GiB), and filled once per dtype.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "kernels.h"
#include "module_int.h"
#include "probe.h"

int cuda_time_gemm_shape(CudaCtx *c, ApprofDtype dt, int64_t m, int64_t n, int64_t k,
                         void *const bufs[3], void *ws, size_t ws_size, int warmup, int iters,
                         int repeats, double *sec, char *err, size_t errlen)
{
    CudaOp op;
    double samples[64], spread;
    int rc;

    if (repeats < 1 || repeats > 64 || iters < 1)
        return APPROF_EINVAL;
    memset(&op, 0, sizeof op);
    op.k.kind = APPROF_K_GEMM;
    op.k.batch = 1;
    op.k.m = m;
    op.k.n = n;
    op.k.k = k;
    for (int i = 0; i < 3; i++)
        op.buf[i] = bufs[i];
    rc = cuda_gemm_prepare(c, &op, dt, ws_size, err, errlen);
    for (int i = 0; i < warmup && rc == 0; i++)
        rc = cuda_gemm_run(c, &op, ws, ws_size, err, errlen);
    for (int r = 0; r < repeats && rc == 0; r++) {
        float ms = 0;
        rc = cuda_ck(cudaEventRecord(c->ev_start, c->stream), "cudaEventRecord", err, errlen);
        for (int i = 0; i < iters && rc == 0; i++)
            rc = cuda_gemm_run(c, &op, ws, ws_size, err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventRecord(c->ev_stop, c->stream), "cudaEventRecord", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventSynchronize(c->ev_stop), "GEMM", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop), "cudaEventElapsedTime",
                         err, errlen);
        samples[r] = (double)ms * 1e-3 / iters;
    }
    if (rc == 0 && approf_cuda_stats(samples, repeats, sec, &spread) < 0)
        rc = APPROF_EIO;
    cudaStreamSynchronize(c->stream);
    cuda_gemm_release(&op);
    return rc;
}

void cuda_probe_say(const ApprofProbeRequest *req, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    if (!req->on_progress)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    req->on_progress(req->user, line);
}

/* GEMMs per timed batch: about 2e11 FLOP, 2..50. */
static int grid_iters(int64_t m, int64_t n, int64_t k)
{
    double f = 2.0 * (double)m * (double)n * (double)k, it = ceil(2e11 / f);
    return it < 2 ? 2 : it > 50 ? 50 : (int)it;
}

/* Every shape of the grid in dt whose operands fit cap elements each. */
static int grid_dtype(CudaCtx *c, const ApprofProbeRequest *req, ApprofDtype dt,
                      const char *name, const int *g, int ng, int64_t cap, void *const bufs[3],
                      void *ws, size_t ws_size, int repeats, char *err, size_t errlen)
{
    double t0 = costdb_monotonic_seconds(), lo = INFINITY, hi = 0;
    int done = 0, skipped = 0, rc = 0;
    /* the operands' values once per dtype (zeros would run cooler) */
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = cuda_ck((cudaError_t)approf_cuda_launch_fill((int)dt, bufs[i], cap, 11u + (uint32_t)i,
                                                          c->stream),
                     "fill kernel", err, errlen);
    for (int a = 0; a < ng && rc == 0; a++)
        for (int b = 0; b < ng && rc == 0; b++)
            for (int d = 0; d < ng && rc == 0; d++) {
                int64_t m = g[a], n = g[b], k = g[d];
                double sec = 0, rate;
                if (m * k > cap || k * n > cap || m * n > cap) {
                    skipped++;
                    continue;
                }
                rc = cuda_time_gemm_shape(c, dt, m, n, k, bufs, ws, ws_size, 2,
                                          grid_iters(m, n, k), repeats, &sec, err, errlen);
                if (rc < 0)
                    continue; /* the loops end on rc */
                if (!(sec > 0)) {
                    skipped++;
                    continue;
                }
                rate = 2.0 * (double)m * (double)n * (double)k / sec;
                lo = rate < lo ? rate : lo;
                hi = rate > hi ? rate : hi;
                rc = req->on_gemm_shape(req->user, name, m, n, k, rate);
                done++;
            }
    if (rc == 0)
        cuda_probe_say(req, "gemm shapes %s: %d of %dx%dx%d, %.1f-%.1f TFLOP/s (%.1f s)%s", name, done, ng,
            ng, ng, done ? lo / 1e12 : 0.0, hi / 1e12, costdb_monotonic_seconds() - t0,
            skipped ? "; larger ones do not fit the free memory" : "");
    return rc;
}

int cuda_probe_gemm_grid(CudaCtx *c, const ApprofProbeRequest *req, int repeats, char *err,
                         size_t errlen)
{
    static const ApprofDtype dts[] = {APPROF_BF16, APPROF_F16, APPROF_F32};
    int g[APPROF_PROBE_MAX_GEMM_GRID], ng = 0, rc = 0;
    int64_t gmax = 0, cap;
    size_t free_b = 0, total_b = 0, ws_size = 32u << 20;
    void *bufs[3] = {NULL, NULL, NULL}, *ws = NULL;

    for (int i = 0; i < req->n_gemm_grid && i < APPROF_PROBE_MAX_GEMM_GRID; i++)
        if (req->gemm_grid[i] > 0) {
            g[ng++] = req->gemm_grid[i];
            gmax = req->gemm_grid[i] > gmax ? req->gemm_grid[i] : gmax;
        }
    if (ng == 0 || !req->on_gemm_shape)
        return 0;
    /* three operands of the largest shape in f32, or as many elements as
     * half the free memory holds */
    rc = cuda_ck(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", err, errlen);
    if (rc < 0)
        return rc;
    cap = gmax * gmax;
    if (free_b / 2 < ws_size + 3 * (size_t)cap * 4)
        cap = free_b / 2 > ws_size ? (int64_t)((free_b / 2 - ws_size) / 12) : 0;
    if (cap < 1) {
        cuda_probe_say(req, "gemm shapes: skipped (no free device memory)");
        return 0;
    }
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = cuda_ck(cudaMalloc(&bufs[i], (size_t)cap * 4), "cudaMalloc", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMalloc(&ws, ws_size), "cudaMalloc", err, errlen);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0] && rc == 0; d++) {
        const char *name = dts[d] == APPROF_F32 ? (c->allow_tf32 ? "tf32" : "f32")
                                                : cuda_dtype_name(dts[d]);
        rc = grid_dtype(c, req, dts[d], name, g, ng, cap, bufs, ws, ws_size, repeats, err,
                        errlen);
    }
    cudaStreamSynchronize(c->stream);
    for (int i = 0; i < 3; i++)
        cudaFree(bufs[i]);
    cudaFree(ws);
    return rc;
}
