/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe's overlap measurement (approf probe, >= 2 GPUs): how much a
 * large bf16 GEMM slows down while an NCCL all-reduce or all-gather runs
 * beside it on another stream of the same GPUs, and how much the
 * collective slows down beside the GEMM. ApprofHardwareSpec
 * overlap_gemm_slowdown (docs/hardware.md) is derived from these points
 * on the host (approf_probe_overlap_slowdown).
 *
 * Semantics relied on (docs/validation.md, "Overlap slowdown"):
 * - CUDA streams (CUDA C++ Programming Guide, "Asynchronous Concurrent
 *   Execution", "Streams"): kernels issued to two different non-blocking
 *   streams of one device may run at the same time and share its SMs;
 *   work in one stream runs in issue order. cudaEventRecord marks a point
 *   of one stream; cudaEventElapsedTime between two events of one device
 *   is the time between them (ms, about 0.5 us resolution), and events of
 *   two streams of one device can be compared.
 * - NCCL (user guide, "CUDA Stream Semantics"): a collective is enqueued on
 *   the stream passed to it and runs as a CUDA kernel there; the call
 *   returns once it is enqueued. One communicator per device in one
 *   process (ncclCommInitAll) is used as the probe's collective groups
 *   are, and a rank per device: NCCL refuses two ranks of one communicator
 *   on one device ("Duplicate GPU detected"), so one GPU cannot measure
 *   this.
 * - nccl-tests (src/common.cu, src/all_gather.cu): warm-up operations
 *   before timing, then the average over a batch of iters operations;
 *   "size" is the bytes of the whole buffer (all-gather: the gathered
 *   output, count / nranks elements sent by each rank). Here, as in the
 *   rest of the probe, the median of the repeats of such batches.
 *
 * Method, for each collective: (1) the GEMM batch alone on every device
 * (events on device 0's compute stream); (2) K collectives alone (events
 * on device 0's communication stream); (3) the K' collectives first, then
 * the GEMM batch, K' chosen to outlast the GEMMs three times over: the
 * GEMM batch's time beside the collective; (4) the GEMMs first (enough to
 * outlast the collectives three times), then K collectives: their time
 * beside the GEMMs. In (3) and (4) the events prove the timed work ran
 * wholly inside the other: a collective whose batch was not covered is
 * said and not stored, and the probe goes on. Every device runs the same GEMMs and the same collective, as
 * the ranks of a training step do.
 */
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "module_int.h"
#include "probe.h"

#define OV_MAX_DEV 16
#define OV_GEMM 8192                 /* m = n = k, bf16: 1.1 TFLOP, ~1.6 ms at 700 TFLOP/s */
#define OV_BYTES ((int64_t)256 << 20) /* nccl-tests size of the collective */
#define OV_WS ((size_t)32 << 20)

typedef struct Dev {
    CudaCtx c;                       /* compute stream, events (device 0), cuBLASLt */
    CudaOp op;
    int op_ready;
    void *buf[3], *ws;
    cudaStream_t comm_stream;
    ncclComm_t comm;
    void *send, *recv;
    cudaEvent_t ev_c0, ev_c1;        /* communication stream's window (device 0) */
} Dev;

typedef struct Ov {
    int n;
    Dev d[OV_MAX_DEV];
} Ov;

static int ov_nccl(ncclResult_t r, const char *what, char *err, size_t errlen)
{
    if (r == ncclSuccess)
        return 0;
    snprintf(err, errlen, "%s: %s", what, ncclGetErrorString(r));
    return APPROF_EIO;
}

static int gemms(Ov *o, int iters, char *err, size_t errlen)
{
    int rc = 0;
    for (int i = 0; i < o->n && rc == 0; i++) {
        rc = cuda_ck(cudaSetDevice(i), "cudaSetDevice", err, errlen);
        for (int k = 0; k < iters && rc == 0; k++)
            rc = cuda_gemm_run(&o->d[i].c, &o->d[i].op, o->d[i].ws, OV_WS, err, errlen);
    }
    return rc;
}

/* count elements per rank (ncclFloat): all-reduce bytes / 4, all-gather
 * bytes / 4 / n (its "size" is the gathered output) */
static int colls(Ov *o, ApprofCollKind kind, int times, char *err, size_t errlen)
{
    size_t count = (size_t)(OV_BYTES / 4);
    int rc = 0;
    if (kind == APPROF_COLL_ALL_GATHER)
        count /= (size_t)o->n;
    for (int t = 0; t < times && rc == 0; t++) {
        ncclResult_t r = ncclGroupStart();
        for (int i = 0; i < o->n && r == ncclSuccess; i++)
            r = kind == APPROF_COLL_ALL_GATHER
                    ? ncclAllGather(o->d[i].send, o->d[i].recv, count, ncclFloat, o->d[i].comm,
                                    o->d[i].comm_stream)
                    : ncclAllReduce(o->d[i].send, o->d[i].recv, count, ncclFloat, ncclSum,
                                    o->d[i].comm, o->d[i].comm_stream);
        {
            ncclResult_t e = ncclGroupEnd();
            if (r == ncclSuccess)
                r = e;
        }
        rc = ov_nccl(r, "NCCL", err, errlen);
    }
    return rc;
}

static int sync_all(Ov *o, char *err, size_t errlen)
{
    int rc = 0;
    for (int i = 0; i < o->n && rc == 0; i++) {
        rc = cuda_ck(cudaSetDevice(i), "cudaSetDevice", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaDeviceSynchronize(), "overlap", err, errlen);
    }
    return rc;
}

static int ms_between(cudaEvent_t a, cudaEvent_t b, double *sec, char *err, size_t errlen)
{
    float ms = 0;
    int rc = cuda_ck(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime", err, errlen);
    *sec = (double)ms * 1e-3;
    return rc;
}

/* One timed batch. mode 0: GEMMs alone; 1: collectives alone; 2: the
 * collectives, then the GEMMs (timed, must lie inside); 3: the GEMMs, then
 * the collectives (timed, must lie inside). *sec: the timed batch. */
static int batch(Ov *o, ApprofCollKind kind, int mode, int g_iters, int c_times, double *sec,
                 char *err, size_t errlen)
{
    Dev *d0 = &o->d[0];
    double a = 0, b = 0;
    int rc = cuda_ck(cudaSetDevice(0), "cudaSetDevice", err, errlen);
    if (rc == 0 && mode != 1 && mode != 2)
        rc = cuda_ck(cudaEventRecord(d0->c.ev_start, d0->c.stream), "cudaEventRecord", err,
                     errlen);
    if (rc == 0 && mode == 3) /* the GEMMs first */
        rc = gemms(o, g_iters, err, errlen);
    /* the collectives' window opens as they are issued (not before the
     * GEMMs' issue in mode 3) */
    if (rc == 0 && mode != 0)
        rc = cuda_ck(cudaSetDevice(0), "cudaSetDevice", err, errlen);
    if (rc == 0 && mode != 0)
        rc = cuda_ck(cudaEventRecord(d0->ev_c0, d0->comm_stream), "cudaEventRecord", err, errlen);
    if (rc == 0 && mode != 0)
        rc = colls(o, kind, c_times, err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaSetDevice(0), "cudaSetDevice", err, errlen);
    if (rc == 0 && mode != 0)
        rc = cuda_ck(cudaEventRecord(d0->ev_c1, d0->comm_stream), "cudaEventRecord", err, errlen);
    if (rc == 0 && mode == 2)
        rc = cuda_ck(cudaEventRecord(d0->c.ev_start, d0->c.stream), "cudaEventRecord", err,
                     errlen);
    if (rc == 0 && (mode == 0 || mode == 2))
        rc = gemms(o, g_iters, err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaSetDevice(0), "cudaSetDevice", err, errlen);
    if (rc == 0 && mode != 1)
        rc = cuda_ck(cudaEventRecord(d0->c.ev_stop, d0->c.stream), "cudaEventRecord", err, errlen);
    if (rc == 0)
        rc = sync_all(o, err, errlen);
    if (rc < 0)
        return rc;
    if (mode == 0 || mode == 2)
        rc = ms_between(d0->c.ev_start, d0->c.ev_stop, sec, err, errlen);
    else
        rc = ms_between(d0->ev_c0, d0->ev_c1, sec, err, errlen);
    if (rc == 0 && mode >= 2) {
        /* the timed work inside the other: started after it, ended before */
        cudaEvent_t in0 = mode == 2 ? d0->c.ev_start : d0->ev_c0;
        cudaEvent_t in1 = mode == 2 ? d0->c.ev_stop : d0->ev_c1;
        cudaEvent_t out0 = mode == 2 ? d0->ev_c0 : d0->c.ev_start;
        cudaEvent_t out1 = mode == 2 ? d0->ev_c1 : d0->c.ev_stop;
        rc = ms_between(out0, in0, &a, err, errlen);
        if (rc == 0)
            rc = ms_between(in1, out1, &b, err, errlen);
        if (rc == 0 && (a < 0 || b < 0)) {
            snprintf(err, errlen,
                     "overlap: the timed %s did not run wholly beside the %s (%.3f ms before, "
                     "%.3f ms after it)",
                     mode == 2 ? "GEMMs" : "collectives", mode == 2 ? "collectives" : "GEMMs",
                     -a * 1e3, -b * 1e3);
            rc = APPROF_EUNSUPPORTED; /* not stored; the probe goes on */
        }
    }
    return rc;
}

static int median_of(Ov *o, ApprofCollKind kind, int mode, int g_iters, int c_times, int repeats,
                     double *sec, char *err, size_t errlen)
{
    double samples[64], spread;
    int rc = batch(o, kind, mode, g_iters, c_times, &samples[0], err, errlen); /* warm-up */
    for (int r = 0; r < repeats && rc == 0; r++)
        rc = batch(o, kind, mode, g_iters, c_times, &samples[r], err, errlen);
    if (rc == 0 && approf_cuda_stats(samples, repeats, sec, &spread) < 0)
        rc = APPROF_EIO;
    return rc;
}

static int setup(Ov *o, int n, char *err, size_t errlen)
{
    int devs[OV_MAX_DEV], rc = 0;
    size_t bytes = (size_t)OV_GEMM * OV_GEMM * 2;
    ncclComm_t comms[OV_MAX_DEV];
    memset(o, 0, sizeof *o);
    for (int i = 0; i < n; i++)
        devs[i] = i;
    rc = ov_nccl(ncclCommInitAll(comms, n, devs), "ncclCommInitAll", err, errlen);
    if (rc < 0)
        return rc;
    o->n = n;
    for (int i = 0; i < n; i++)
        o->d[i].comm = comms[i];
    for (int i = 0; i < n && rc == 0; i++) {
        Dev *d = &o->d[i];
        d->c.device = i;
        rc = cuda_ck(cudaSetDevice(i), "cudaSetDevice", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaStreamCreateWithFlags(&d->c.stream, cudaStreamNonBlocking),
                         "cudaStreamCreate", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaStreamCreateWithFlags(&d->comm_stream, cudaStreamNonBlocking),
                         "cudaStreamCreate", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventCreate(&d->c.ev_start), "cudaEventCreate", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventCreate(&d->c.ev_stop), "cudaEventCreate", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventCreate(&d->ev_c0), "cudaEventCreate", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventCreate(&d->ev_c1), "cudaEventCreate", err, errlen);
        if (rc == 0)
            rc = cublas_ck(cublasLtCreate(&d->c.lt), "cublasLtCreate", err, errlen);
        for (int b = 0; b < 3 && rc == 0; b++)
            rc = cuda_ck(cudaMalloc(&d->buf[b], bytes), "cudaMalloc", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaMalloc(&d->ws, OV_WS), "cudaMalloc", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaMalloc(&d->send, (size_t)OV_BYTES), "cudaMalloc", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaMalloc(&d->recv, (size_t)OV_BYTES), "cudaMalloc", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaMemset(d->send, 0, (size_t)OV_BYTES), "cudaMemset", err, errlen);
        /* the operands' values (zeros would run cooler) */
        for (int b = 0; b < 2 && rc == 0; b++)
            rc = cuda_ck((cudaError_t)approf_cuda_launch_fill((int)APPROF_BF16, d->buf[b],
                                                              (int64_t)OV_GEMM * OV_GEMM,
                                                              13u + (uint32_t)b, d->c.stream),
                         "fill kernel", err, errlen);
        if (rc == 0) {
            d->op.k.kind = APPROF_K_GEMM;
            d->op.k.batch = 1;
            d->op.k.m = d->op.k.n = d->op.k.k = OV_GEMM;
            for (int b = 0; b < 3; b++)
                d->op.buf[b] = d->buf[b];
            rc = cuda_gemm_prepare(&d->c, &d->op, APPROF_BF16, OV_WS, err, errlen);
            d->op_ready = rc == 0;
        }
    }
    return rc;
}

static void teardown(Ov *o)
{
    for (int i = 0; i < o->n; i++) {
        Dev *d = &o->d[i];
        cudaSetDevice(i);
        cudaDeviceSynchronize();
        if (d->op_ready)
            cuda_gemm_release(&d->op);
        if (d->comm)
            ncclCommDestroy(d->comm);
        for (int b = 0; b < 3; b++)
            cudaFree(d->buf[b]);
        cudaFree(d->ws);
        cudaFree(d->send);
        cudaFree(d->recv);
        if (d->c.lt)
            cublasLtDestroy(d->c.lt);
        if (d->c.ev_start)
            cudaEventDestroy(d->c.ev_start);
        if (d->c.ev_stop)
            cudaEventDestroy(d->c.ev_stop);
        if (d->ev_c0)
            cudaEventDestroy(d->ev_c0);
        if (d->ev_c1)
            cudaEventDestroy(d->ev_c1);
        if (d->c.stream)
            cudaStreamDestroy(d->c.stream);
        if (d->comm_stream)
            cudaStreamDestroy(d->comm_stream);
    }
    memset(o, 0, sizeof *o);
}

/* One collective: the four medians, handed to on_compute. */
static int measure(Ov *o, const ApprofProbeRequest *req, ApprofCollKind kind, const char *name,
                   int repeats, char *err, size_t errlen)
{
    const int g_iters = 10;
    const int c_times = 4;
    double flop = 2.0 * OV_GEMM * (double)OV_GEMM * OV_GEMM, g_alone = 0, c_alone = 0;
    double g_beside = 0, c_beside = 0;
    char op[64];
    int rc, cover_c, cover_g;

    rc = median_of(o, kind, 0, g_iters, 0, repeats, &g_alone, err, errlen);
    if (rc == 0)
        rc = median_of(o, kind, 1, 0, c_times, repeats, &c_alone, err, errlen);
    if (rc < 0)
        return rc;
    if (!(g_alone > 0) || !(c_alone > 0)) {
        snprintf(err, errlen, "overlap: a batch timed 0 s (GEMMs %g s, %s %g s)", g_alone, name,
                 c_alone);
        return APPROF_EIO;
    }
    /* enough of the other to outlast the timed batch three times over */
    cover_c = (int)ceil(3.0 * g_alone / (c_alone / c_times)) + 1;
    cover_g = (int)ceil(3.0 * c_alone / (g_alone / g_iters)) + 1;
    rc = median_of(o, kind, 2, g_iters, cover_c, repeats, &g_beside, err, errlen);
    if (rc == 0)
        rc = median_of(o, kind, 3, cover_g, c_times, repeats, &c_beside, err, errlen);
    if (rc < 0)
        return rc;
    /* rates: GEMM FLOP/s (size = m = n = k), collective algorithm bytes/s
     * (size = nccl-tests size) */
    snprintf(op, sizeof op, "overlap-gemm:%s", name);
    rc = req->on_compute(req->user, op, "bf16", OV_GEMM, flop * g_iters / g_alone);
    snprintf(op, sizeof op, "overlap-gemm+%s", name);
    if (rc == 0)
        rc = req->on_compute(req->user, op, "bf16", OV_GEMM, flop * g_iters / g_beside);
    snprintf(op, sizeof op, "overlap-%s", name);
    if (rc == 0)
        rc = req->on_compute(req->user, op, "f32", OV_BYTES,
                             (double)OV_BYTES * c_times / c_alone);
    snprintf(op, sizeof op, "overlap-%s+gemm", name);
    if (rc == 0)
        rc = req->on_compute(req->user, op, "f32", OV_BYTES,
                             (double)OV_BYTES * c_times / c_beside);
    if (rc == 0)
        cuda_probe_say(req,
                       "overlap 1x%d: bf16 GEMM %d beside %s of %lld bytes: %.3f ms -> %.3f ms "
                       "(slowdown %.3f); %s beside the GEMM: %.3f ms -> %.3f ms",
                       o->n, OV_GEMM, name, (long long)OV_BYTES, g_alone * 1e3 / g_iters,
                       g_beside * 1e3 / g_iters, 1.0 - g_alone / g_beside, name,
                       c_alone * 1e3 / c_times, c_beside * 1e3 / c_times);
    return rc;
}

int cuda_probe_overlap(const ApprofProbeRequest *req, int count, int repeats, char *err,
                       size_t errlen)
{
    Ov o;
    size_t free_b = 0, total_b = 0, need = 3 * (size_t)OV_GEMM * OV_GEMM * 2 + OV_WS +
                                           2 * (size_t)OV_BYTES;
    int n = count < OV_MAX_DEV ? count : OV_MAX_DEV, rc;

    if (!req->on_compute)
        return 0;
    if (n < 2) {
        cuda_probe_say(req, "overlap: not measured: it needs 2 GPUs (NCCL takes one rank per "
                            "device and refuses two ranks of a communicator on one device); "
                            "found %d", count);
        return 0;
    }
    rc = cuda_ck(cudaSetDevice(0), "cudaSetDevice", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", err, errlen);
    if (rc < 0)
        return rc;
    if (free_b / 2 < need) {
        cuda_probe_say(req, "overlap: not measured: %zu bytes free on device 0, it needs %zu",
                       free_b, 2 * need);
        return 0;
    }
    rc = setup(&o, n, err, errlen);
    for (int k = 0; k < 2 && rc == 0; k++) {
        const char *name = k ? "all-gather" : "all-reduce";
        rc = measure(&o, req, k ? APPROF_COLL_ALL_GATHER : APPROF_COLL_ALL_REDUCE, name, repeats,
                     err, errlen);
        if (rc == APPROF_EUNSUPPORTED) { /* the streams did not overlap as issued */
            cuda_probe_say(req, "overlap %s: not stored: %s", name, err);
            err[0] = '\0';
            rc = 0;
        }
    }
    teardown(&o);
    return rc;
}
