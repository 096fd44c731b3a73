/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The optimizer step measured: one fused Adam step (adam.cu; op_shape.h,
 * ADAM) over a stage's optimizer_elements, timed as a phase is (warm-up
 * steps, then the median of the repeats between CUDA events). The module
 * calls it after the backward phase's timing, whose arena holds nothing
 * needed any more: the step's arrays (gradient, parameter, f32 master
 * under mixed precision, two f32 moments) go at its start, or, when they
 * do not fit, in a block of their own after the arena is freed (the
 * phase's peak is taken before). The moments and the master start at zero
 * (a first step's state); gradient and parameter get the fill kernel's
 * values.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "module_int.h"

int cuda_time_adam(CudaCtx *c, ApprofTrackAlloc *t, void **arena, int64_t arena_bytes,
                   ApprofDtype dt, double elements, double *sec, char *err, size_t errlen)
{
    ApprofOpShape s;
    ApprofOpArrays l[3];
    double samples[1000], spread;
    char *base, *buf[3];
    int64_t total = 0;
    int rc = 0;

    memset(&s, 0, sizeof s);
    s.op = APPROF_CUDA_OP_ADAM;
    s.dtype = (int)dt;
    s.rows = 1;
    s.cols = (int64_t)llround(elements);
    if (!(elements >= 1.0) || elements > 9.0e15 || approf_op_layout(&s, l) < 0 ||
        c->repeats > (int)(sizeof samples / sizeof samples[0])) {
        snprintf(err, errlen, "optimizer step over %.0f parameters: unsupported size", elements);
        return APPROF_EIO;
    }
    for (int i = 0; i < 3; i++)
        total += l[i].total;
    if (total > arena_bytes || !*arena) {
        if (*arena) {
            approf_track_free(t, *arena);
            *arena = NULL;
        }
        rc = approf_track_alloc(t, (size_t)total, arena);
        if (rc < 0) {
            snprintf(err, errlen, "cudaMalloc of the optimizer step's %.3f GiB: %s",
                     (double)total / 1073741824.0, rc == APPROF_ENOMEM ? "out of memory" : "failed");
            return rc;
        }
    }
    base = *arena;
    buf[0] = base;
    buf[1] = base + l[0].total;
    buf[2] = buf[1] + l[1].total;
    rc = cuda_ck((cudaError_t)approf_cuda_launch_fill((int)dt, buf[0], s.cols, 21u, c->stream),
                 "fill kernel", err, errlen);
    if (rc == 0)
        rc = cuda_ck((cudaError_t)approf_cuda_launch_fill((int)dt, buf[1], s.cols, 22u, c->stream),
                     "fill kernel", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMemsetAsync(buf[2], 0, (size_t)l[2].total, c->stream),
                     "cudaMemsetAsync", err, errlen);
    for (int w = 0; w < c->warmup && rc == 0; w++)
        rc = cuda_ck((cudaError_t)approf_cuda_launch_op(&s, buf[0], buf[1], buf[2], c->stream),
                     "optimizer step", err, errlen);
    for (int r = 0; r < c->repeats && rc == 0; r++) {
        float ms = 0.0f;
        rc = cuda_ck(cudaEventRecord(c->ev_start, c->stream), "cudaEventRecord", err, errlen);
        if (rc == 0)
            rc = cuda_ck((cudaError_t)approf_cuda_launch_op(&s, buf[0], buf[1], buf[2], c->stream),
                         "optimizer step", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventRecord(c->ev_stop, c->stream), "cudaEventRecord", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventSynchronize(c->ev_stop), "timed optimizer step", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop),
                         "cudaEventElapsedTime", err, errlen);
        samples[r] = (double)ms * 1e-3;
    }
    if (rc == 0 && approf_cuda_stats(samples, c->repeats, sec, &spread) < 0) {
        snprintf(err, errlen, "invalid optimizer step timings");
        rc = APPROF_EIO;
    }
    return rc;
}
