/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hardware probe inside the approf-cuda module ("approf_probe_module_run"):
 * square GEMM FLOP/s per dtype on cuBLASLt, the GEMM shape grid
 * (probe_gemm.c), device-to-device cudaMemcpy
 * bandwidth, and NCCL all-reduce, all-gather, reduce-scatter, all-to-all
 * (grouped ncclSend/ncclRecv to every peer, self included, as nccl-tests
 * does) and send-recv (a ring: rank r sends to r+1) over the 1xG groups of
 * the local devices — or, under mpirun, over the HxG groups of the ranks
 * (one device each, NCCL bootstrapped through the process group) — for
 * message sizes min..max bytes; with >= 2 local devices, a GEMM beside
 * an NCCL collective on another stream (probe_overlap.c). GEMM and memcpy are
 * timed with CUDA events, collectives with the host clock around iters
 * operations after synchronising every stream (nccl-tests' method); each
 * point is the median of the requested repeats. Results go to the caller's
 * callbacks; nothing is stored here.
 */
#include <math.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "probe.h"
#include "kernels.h"
#include "module_int.h"

#define MAX_DEV 16
#define MAX_SIZES 64

/* One communicator: n local slots (devices this process drives), slot i
 * being rank rank0 + i of size ranks on device dev[i]. */
typedef struct Group {
    int n, size, rank0;
    int dev[MAX_DEV];
    ncclComm_t comm[MAX_DEV];
    cudaStream_t stream[MAX_DEV];
    void *send[MAX_DEV], *recv[MAX_DEV];
} Group;

static int nccl_ck(ncclResult_t r, const char *what, char *err, size_t errlen)
{
    if (r == ncclSuccess)
        return 0;
    snprintf(err, errlen, "%s: %s", what, ncclGetErrorString(r));
    return APPROF_EIO;
}

static void fill_info(ApprofProbeInfo *info, int count)
{
    struct cudaDeviceProp prop;
    int v = 0;
    size_t sv;

    info->device_count = count;
    memset(&prop, 0, sizeof prop);
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
        snprintf(info->gpu_model, sizeof info->gpu_model, "%.127s", prop.name);
        info->device_memory = (int64_t)prop.totalGlobalMem;
        info->cc_major = prop.major;
        info->cc_minor = prop.minor;
        info->sm_count = prop.multiProcessorCount;
    }
    if (cudaDriverGetVersion(&v) == cudaSuccess)
        snprintf(info->driver_version, sizeof info->driver_version, "%d.%d", v / 1000, (v % 1000) / 10);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess)
        snprintf(info->runtime_version, sizeof info->runtime_version, "%d.%d", v / 1000,
                 (v % 1000) / 10);
    if (ncclGetVersion(&v) == ncclSuccess)
        snprintf(info->nccl_version, sizeof info->nccl_version, "%d.%d.%d", v / 10000,
                 (v % 10000) / 100, v % 100);
    sv = cudnnGetVersion();
    snprintf(info->cudnn_version, sizeof info->cudnn_version, "%zu.%zu.%zu", sv / 10000,
             (sv % 10000) / 100, sv % 100);
    snprintf(info->cublas_version, sizeof info->cublas_version, "%zu", cublasLtGetVersion());
}

/* Median seconds of one GEMM of size s (m = n = k) in dt. */
static int time_gemm(CudaCtx *c, ApprofDtype dt, int s, int repeats, double *sec, char *err,
                     size_t errlen)
{
    void *buf[3] = {NULL, NULL, NULL}, *ws = NULL;
    size_t ws_size = 32u << 20;
    int iters = s <= 1024 ? 50 : s <= 2048 ? 20 : s <= 4096 ? 5 : 2, rc = 0;
    size_t es = dt == APPROF_F32 ? 4 : 2, bytes = (size_t)s * (size_t)s * es;

    for (int i = 0; i < 3 && rc == 0; i++)
        rc = cuda_ck(cudaMalloc(&buf[i], bytes), "cudaMalloc", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMalloc(&ws, ws_size), "cudaMalloc", err, errlen);
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = cuda_ck((cudaError_t)approf_cuda_launch_fill((int)dt, buf[i], (int64_t)(bytes / es),
                                                          7u + (uint32_t)i, c->stream),
                     "fill kernel", err, errlen);
    if (rc == 0)
        rc = cuda_time_gemm_shape(c, dt, s, s, s, buf, ws, ws_size, 3, iters, repeats, sec, err,
                                  errlen);
    cudaStreamSynchronize(c->stream);
    for (int i = 0; i < 3; i++)
        cudaFree(buf[i]);
    cudaFree(ws);
    return rc;
}

/* Median seconds of one device-to-device cudaMemcpy of bytes. */
static int time_memcpy(CudaCtx *c, void *a, void *b, int64_t bytes, int repeats, double *sec,
                       char *err, size_t errlen)
{
    double samples[64], spread;
    int iters = approf_probe_iters(bytes), rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = cuda_ck(cudaMemcpyAsync(b, a, (size_t)bytes, cudaMemcpyDeviceToDevice, c->stream),
                     "cudaMemcpyAsync", err, errlen);
    for (int r = 0; r < repeats && rc == 0; r++) {
        float ms = 0;
        rc = cuda_ck(cudaEventRecord(c->ev_start, c->stream), "cudaEventRecord", err, errlen);
        for (int i = 0; i < iters && rc == 0; i++)
            rc = cuda_ck(cudaMemcpyAsync(b, a, (size_t)bytes, cudaMemcpyDeviceToDevice, c->stream),
                         "cudaMemcpyAsync", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventRecord(c->ev_stop, c->stream), "cudaEventRecord", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventSynchronize(c->ev_stop), "memcpy", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaEventElapsedTime(&ms, c->ev_start, c->ev_stop), "cudaEventElapsedTime",
                         err, errlen);
        samples[r] = (double)ms * 1e-3 / iters;
    }
    if (rc == 0 && approf_cuda_stats(samples, repeats, sec, &spread) < 0)
        rc = APPROF_EIO;
    return rc;
}

static ncclResult_t launch(ApprofCollKind kind, Group *g, const ApprofCollCounts *cc)
{
    ncclResult_t r = ncclGroupStart();
    size_t chunk = cc->count * sizeof(float);
    for (int i = 0; i < g->n && r == ncclSuccess; i++) {
        switch (kind) {
        case APPROF_COLL_ALL_REDUCE:
            r = ncclAllReduce(g->send[i], g->recv[i], cc->count, ncclFloat, ncclSum, g->comm[i],
                              g->stream[i]);
            break;
        case APPROF_COLL_ALL_GATHER:
            r = ncclAllGather(g->send[i], g->recv[i], cc->count, ncclFloat, g->comm[i], g->stream[i]);
            break;
        case APPROF_COLL_REDUCE_SCATTER:
            r = ncclReduceScatter(g->send[i], g->recv[i], cc->count, ncclFloat, ncclSum, g->comm[i],
                                  g->stream[i]);
            break;
        case APPROF_COLL_ALL_TO_ALL:
            for (int p = 0; p < g->size && r == ncclSuccess; p++) {
                r = ncclSend((char *)g->send[i] + (size_t)p * chunk, cc->count, ncclFloat, p,
                             g->comm[i], g->stream[i]);
                if (r == ncclSuccess)
                    r = ncclRecv((char *)g->recv[i] + (size_t)p * chunk, cc->count, ncclFloat, p,
                                 g->comm[i], g->stream[i]);
            }
            break;
        default:
            r = ncclSend(g->send[i], cc->count, ncclFloat, (g->rank0 + i + 1) % g->size,
                         g->comm[i], g->stream[i]);
            if (r == ncclSuccess)
                r = ncclRecv(g->recv[i], cc->count, ncclFloat,
                             (g->rank0 + i + g->size - 1) % g->size, g->comm[i], g->stream[i]);
            break;
        }
    }
    {
        ncclResult_t e = ncclGroupEnd();
        if (r == ncclSuccess)
            r = e;
    }
    return r;
}

static int sync_group(Group *g, char *err, size_t errlen)
{
    for (int i = 0; i < g->n; i++) {
        int rc = cuda_ck(cudaSetDevice(g->dev[i]), "cudaSetDevice", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaStreamSynchronize(g->stream[i]), "collective", err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int time_coll(Group *g, ApprofCollKind kind, const ApprofCollCounts *cc, int repeats,
                     double *sec, char *err, size_t errlen)
{
    double samples[64], spread;
    int iters = approf_probe_iters(cc->bytes), rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = nccl_ck(launch(kind, g, cc), "NCCL", err, errlen);
    if (rc == 0)
        rc = sync_group(g, err, errlen);
    for (int r = 0; r < repeats && rc == 0; r++) {
        double t0 = costdb_monotonic_seconds();
        for (int i = 0; i < iters && rc == 0; i++)
            rc = nccl_ck(launch(kind, g, cc), "NCCL", err, errlen);
        if (rc == 0)
            rc = sync_group(g, err, errlen);
        samples[r] = (costdb_monotonic_seconds() - t0) / iters;
    }
    if (rc == 0 && approf_cuda_stats(samples, repeats, sec, &spread) < 0)
        rc = APPROF_EIO;
    return rc;
}

static void group_free(Group *g)
{
    for (int i = 0; i < g->n; i++) {
        cudaSetDevice(g->dev[i]);
        if (g->comm[i])
            ncclCommDestroy(g->comm[i]);
        if (g->stream[i])
            cudaStreamDestroy(g->stream[i]);
        cudaFree(g->send[i]);
        cudaFree(g->recv[i]);
    }
    memset(g, 0, sizeof *g);
}

/* Buffers on every slot of g, then every collective and size over the
 * g->size ranks, reported (rank 0, or the only process) as a hosts x gpus
 * group. */
static int measure_group(const ApprofProbeRequest *req, Group *g, int hosts, int gpus,
                         const int64_t *sizes, int ns, int64_t maxb, int repeats, char *err,
                         size_t errlen)
{
    static const ApprofCollKind kinds[] = {APPROF_COLL_ALL_REDUCE, APPROF_COLL_ALL_GATHER,
                                           APPROF_COLL_REDUCE_SCATTER, APPROF_COLL_ALL_TO_ALL,
                                           APPROF_COLL_SEND_RECV};
    static const char *names[] = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                  "send-recv"};
    int report = !req->pg || req->pg->rank == 0, rc = 0;
    for (int i = 0; i < g->n && rc == 0; i++) {
        rc = cuda_ck(cudaSetDevice(g->dev[i]), "cudaSetDevice", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaStreamCreateWithFlags(&g->stream[i], cudaStreamNonBlocking),
                         "cudaStreamCreate", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaMalloc(&g->send[i], (size_t)maxb), "cudaMalloc", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaMalloc(&g->recv[i], (size_t)maxb), "cudaMalloc", err, errlen);
        if (rc == 0)
            rc = cuda_ck(cudaMemset(g->send[i], 0, (size_t)maxb), "cudaMemset", err, errlen);
    }
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && rc == 0; k++) {
        double last_bus = 0;
        for (int s = 0; s < ns && rc == 0; s++) {
            ApprofCollCounts cc;
            double sec = 0;
            if (approf_coll_counts(kinds[k], sizes[s], g->size, sizeof(float), &cc) < 0)
                continue;
            rc = time_coll(g, kinds[k], &cc, repeats, &sec, err, errlen);
            if (rc == 0 && report && req->on_comm)
                rc = req->on_comm(req->user, kinds[k], hosts, gpus, "f32", cc.bytes, sec);
            last_bus = approf_algbw(cc.bytes, sec) * approf_busbw_factor(kinds[k], g->size);
        }
        if (rc == 0 && report)
            cuda_probe_say(req, "%s %dx%d: bus bandwidth %.1f GB/s at %lld bytes", names[k], hosts,
                     gpus, last_bus / 1e9, (long long)sizes[ns - 1]);
    }
    return rc;
}

/* One process: the 1xn group of local devices 0..n-1. */
static int probe_group(const ApprofProbeRequest *req, int n, int64_t maxb, int repeats,
                       char *err, size_t errlen)
{
    Group g;
    int devs[MAX_DEV], ns, rc;
    int64_t sizes[MAX_SIZES];

    memset(&g, 0, sizeof g);
    ns = approf_probe_sizes(req->min_bytes, maxb, sizes, MAX_SIZES);
    if (ns < 0)
        return ns;
    for (int i = 0; i < n; i++)
        devs[i] = g.dev[i] = i;
    rc = nccl_ck(ncclCommInitAll(g.comm, n, devs), "ncclCommInitAll", err, errlen);
    if (rc == 0) {
        g.n = g.size = n;
        rc = measure_group(req, &g, 1, n, sizes, ns, maxb, repeats, err, errlen);
    }
    group_free(&g);
    return rc;
}

/* Every rank's status through pg->agree; a positive status (a callback's
 * "stopped, and said why") counts as a failure there and stays this rank's
 * return value. */
static int agree(const ApprofProcessGroup *pg, int rc)
{
    int all = pg->agree(pg->ctx, rc > 0 ? APPROF_EINTR : rc);
    return rc != 0 ? rc : all;
}

/* Under mpirun: every HxG group of the ranks (one device each, ranks laid
 * out host by host: rank = host * local_size + local_rank). Collective over
 * the process group: every rank takes part in every bootstrap and
 * agreement, members of a group in its measurement. rc: this rank's status
 * so far (the first agreement tells every rank whether to go on). */
static int probe_mpi(const ApprofProbeRequest *req, int rc, int64_t maxb, int repeats,
                     char *err, size_t errlen)
{
    const ApprofProcessGroup *pg = req->pg;
    int hs[64], gs[64], ng, hosts, per_host, host, ns;
    int64_t sizes[MAX_SIZES], common = maxb;

    if (rc == 0 && (!pg->bcast || !pg->agree || pg->local_size < 1 ||
                    pg->size % pg->local_size || pg->rank % pg->local_size != pg->local_rank)) {
        snprintf(err, errlen,
                 "rank %d: ranks must be placed host by host (mpirun --map-by slot) with the "
                 "same number on every host (%d ranks, %d on this host)",
                 pg->rank, pg->size, pg->local_size);
        rc = APPROF_EINVAL;
    }
    if (pg->agree)
        rc = agree(pg, rc);
    if (rc != 0)
        return rc;
    per_host = pg->local_size;
    hosts = pg->size / per_host;
    host = pg->rank / per_host;
    /* every rank uses rank 0's message sizes; a rank that cannot hold them
     * says so before anything is measured */
    rc = pg->bcast(pg->ctx, &common, sizeof common, 0);
    if (rc == 0 && common > maxb) {
        snprintf(err, errlen, "rank %d: %lld-byte messages do not fit its free device memory",
                 pg->rank, (long long)common);
        rc = APPROF_EIO;
    }
    rc = agree(pg, rc);
    if (rc < 0)
        return rc;
    ns = approf_probe_sizes(req->min_bytes, common, sizes, MAX_SIZES);
    if (ns < 0)
        return ns;
    ng = approf_probe_mpi_groups(hosts, per_host, hs, gs, 64);
    for (int i = 0; i < ng && rc == 0; i++) {
        ncclUniqueId id;
        Group g;
        int member = host < hs[i] && pg->local_rank < gs[i];
        memset(&g, 0, sizeof g);
        memset(&id, 0, sizeof id);
        if (pg->rank == 0)
            rc = nccl_ck(ncclGetUniqueId(&id), "ncclGetUniqueId", err, errlen);
        rc = agree(pg, rc);
        if (rc == 0)
            rc = pg->bcast(pg->ctx, &id, sizeof id, 0);
        if (rc == 0 && member) {
            g.n = 1;
            g.size = hs[i] * gs[i];
            g.rank0 = host * gs[i] + pg->local_rank;
            g.dev[0] = pg->local_rank;
            rc = cuda_ck(cudaSetDevice(g.dev[0]), "cudaSetDevice", err, errlen);
            if (rc == 0)
                rc = nccl_ck(ncclCommInitRank(&g.comm[0], g.size, id, g.rank0),
                             "ncclCommInitRank", err, errlen);
            if (rc == 0)
                rc = measure_group(req, &g, hs[i], gs[i], sizes, ns, common, repeats, err,
                                   errlen);
            group_free(&g);
        }
        rc = agree(pg, rc);
    }
    return rc;
}

APPROF_EXPORT int approf_probe_module_run(int abi, const ApprofProbeRequest *req,
                                          ApprofProbeInfo *info, char *err, size_t errlen);

/* Entry point (ApprofProbeModuleRun); see probe.h. */
int approf_probe_module_run(int abi, const ApprofProbeRequest *req, ApprofProbeInfo *info,
                            char *err, size_t errlen)
{
    static const ApprofDtype dts[] = {APPROF_F32, APPROF_F16, APPROF_BF16};
    CudaCtx c;
    int count = 0, rc = 0, repeats = 5, groups[8], ng, multi, report, mydev;
    size_t free_b = 0, total_b = 0;
    int64_t maxb = 0, cap;
    void *a = NULL, *b = NULL;
    cudaError_t e;

    if (!req || !info || !err || errlen == 0)
        return APPROF_EINVAL;
    memset(info, 0, sizeof *info);
    memset(&c, 0, sizeof c);
    if (abi != APPROF_PROBE_ABI) {
        snprintf(err, errlen, "no CUDA backend: probe ABI %d, approf expects %d", APPROF_PROBE_ABI,
                 abi);
        return APPROF_ENODEV;
    }
    /* under mpirun every failure below goes through the agreement in
     * probe_mpi, so that no rank waits for one that gave up */
    multi = req->pg && req->pg->size > 1;
    report = !multi || req->pg->rank == 0;
    mydev = multi ? req->pg->local_rank : 0;
    e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(e));
        rc = APPROF_ENODEV;
        goto out;
    }
    if (count < 1 || mydev >= count) {
        snprintf(err, errlen, "no CUDA device%s: cudaGetDeviceCount found %d",
                 multi ? " for this rank" : "", count);
        rc = APPROF_ENODEV;
        goto out;
    }
    if (count > MAX_DEV)
        count = MAX_DEV;
    fill_info(info, count);
    if (req->on_info && (rc = req->on_info(req->user, info)) != 0)
        goto out;
    repeats = req->repeats >= 1 && req->repeats <= 64 ? req->repeats : 5;

    rc = cuda_ck(cudaSetDevice(mydev), "cudaSetDevice", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), "cudaStreamCreate",
                     err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaEventCreate(&c.ev_start), "cudaEventCreate", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaEventCreate(&c.ev_stop), "cudaEventCreate", err, errlen);
    if (rc == 0)
        rc = cublas_ck(cublasLtCreate(&c.lt), "cublasLtCreate", err, errlen);
    c.allow_tf32 = cuda_env_int("APPROF_CUDA_TF32", 1, 0, 1);
    for (size_t d = 0; d < 3 && rc == 0 && report; d++) {
        for (int i = 0; i < req->n_gemm_sizes && i < APPROF_PROBE_MAX_GEMM_SIZES && rc == 0; i++) {
            int s = req->gemm_sizes[i];
            double sec = 0, rate;
            if (s <= 0)
                continue;
            rc = time_gemm(&c, dts[d], s, repeats, &sec, err, errlen);
            rate = sec > 0 ? 2.0 * s * (double)s * s / sec : 0;
            if (rc == 0 && req->on_compute)
                rc = req->on_compute(req->user, "gemm", cuda_dtype_name(dts[d]), s, rate);
            if (rc == 0)
                cuda_probe_say(req, "gemm %s %d: %.1f TFLOP/s", cuda_dtype_name(dts[d]), s, rate / 1e12);
        }
    }
    /* FP8 on the same sizes, where the device has FP8 tensor cores
     * (stored as dtype "f8e4m3"; the hardware row keeps no FP8 peak yet). */
    for (int i = 0; i < req->n_gemm_sizes && i < APPROF_PROBE_MAX_GEMM_SIZES && rc == 0 && report;
         i++) {
        int s = req->gemm_sizes[i];
        double sec = 0, rate;
        if (s <= 0 || s % 16)
            continue;
        rc = cuda_time_gemm_fp8(&c, s, repeats, &sec, err, errlen);
        if (rc == APPROF_EUNSUPPORTED) {
            cuda_probe_say(req, "gemm f8e4m3: skipped (%s)", err);
            err[0] = '\0';
            rc = 0;
            break;
        }
        rate = sec > 0 ? 2.0 * s * (double)s * s / sec : 0;
        if (rc == 0 && req->on_compute)
            rc = req->on_compute(req->user, "gemm", "f8e4m3", s, rate);
        if (rc == 0)
            cuda_probe_say(req, "gemm f8e4m3 %d: %.1f TFLOP/s", s, rate / 1e12);
    }
    /* The shape grid (probe_gemm.c), in the same dtypes. */
    if (rc == 0 && report)
        rc = cuda_probe_gemm_grid(&c, req, repeats, err, errlen);
    /* Message and copy sizes are capped by what device 0 can hold twice over. */
    if (rc == 0)
        rc = cuda_ck(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", err, errlen);
    cap = (int64_t)(free_b / 4);
    maxb = req->max_bytes < cap ? req->max_bytes : cap;
    if (rc == 0 && maxb < req->min_bytes) {
        snprintf(err, errlen, "not enough free device memory for %lld-byte messages",
                 (long long)req->min_bytes);
        rc = APPROF_EIO;
    }
    if (rc == 0)
        rc = cuda_ck(cudaMalloc(&a, (size_t)maxb), "cudaMalloc", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMalloc(&b, (size_t)maxb), "cudaMalloc", err, errlen);
    if (rc == 0)
        rc = cuda_ck(cudaMemset(a, 0, (size_t)maxb), "cudaMemset", err, errlen);
    for (int64_t s = (int64_t)1 << 20; rc == 0 && report && s <= maxb; s *= 2) {
        double sec = 0, rate;
        rc = time_memcpy(&c, a, b, s, repeats, &sec, err, errlen);
        rate = sec > 0 ? 2.0 * (double)s / sec : 0;
        if (rc == 0 && req->on_compute)
            rc = req->on_compute(req->user, "memcpy", "u8", s, rate);
        if (rc == 0 && s > maxb / 2)
            cuda_probe_say(req, "memcpy device to device %lld bytes: %.1f GB/s", (long long)s, rate / 1e9);
    }
    cudaFree(a);
    cudaFree(b);
    if (c.lt)
        cublasLtDestroy(c.lt);
    if (c.ev_start)
        cudaEventDestroy(c.ev_start);
    if (c.ev_stop)
        cudaEventDestroy(c.ev_stop);
    if (c.stream)
        cudaStreamDestroy(c.stream);
out:
    if (multi) {
        if (rc == 0 && report)
            cuda_probe_say(req, "overlap: not measured under mpirun (a single-process probe "
                                "measures it over the local GPUs)");
        return probe_mpi(req, rc, maxb, repeats, err, errlen);
    }
    if (rc != 0)
        return rc;
    /* a GEMM beside an NCCL collective and the reverse (probe_overlap.c) */
    rc = cuda_probe_overlap(req, count, repeats, err, errlen);
    if (rc != 0)
        return rc;
    ng = approf_probe_groups(count, groups, 8);
    for (int i = 0; i < ng && rc == 0; i++)
        rc = probe_group(req, groups[i], maxb, repeats, err, errlen);
    return rc;
}
