/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stand-in for approf-cuda.so with the same two entry points, so the
 * loader, its collective costing and `approf probe`'s storage can be tested
 * on machines without a GPU. measure() reports 0.5 s per kernel, or out of
 * memory when the phase's peak exceeds 1 GiB; the probe reports one fake
 * device and a few deterministic points, and the GEMM shape grid of the
 * request in bf16 and f16 at fake_gemm_rate (affine in log2 of each size,
 * so that interpolation in log2 reproduces it between the grid's points). FAKE_APPROF_NODEV=1 makes every
 * entry point report no device; FAKE_APPROF_DEVICES=N (default 2) is the
 * device count. A backend on device d (init_on) measures what device 0 does
 * and counts its calls per device (fake_module_calls).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "backend.h"
#include "cuda/probe.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int approf_backend_module_init(int abi, ApprofBackend *out, char *err, size_t errlen);
EXPORT int approf_backend_module_init_on(int abi, int device, ApprofBackend *out, char *err,
                                         size_t errlen);
EXPORT int approf_probe_module_run(int abi, const ApprofProbeRequest *req, ApprofProbeInfo *info,
                                   char *err, size_t errlen);

static int nodev(char *err, size_t errlen)
{
    const char *e = getenv("FAKE_APPROF_NODEV");
    if (e && !strcmp(e, "1")) {
        snprintf(err, errlen, "no CUDA device: fake module\nsecond line");
        return 1;
    }
    return 0;
}

static int fake_measure(void *ctx, const ApprofStageProgram *p, int phase,
                        const ApprofHardwareSpec *hw, ApprofMeasurement *out)
{
    (void)ctx;
    (void)hw;
    memset(out, 0, sizeof *out);
    out->peak_memory = p->peak_memory[phase];
    out->available_memory = (int64_t)1 << 30;
    if (p->peak_memory[phase] > ((int64_t)1 << 30)) {
        out->status = 1;
        out->compute_cost = INFINITY;
        snprintf(out->error, sizeof out->error, "out of memory");
        return 0;
    }
    out->compute_cost = 0.5 * (double)p->n_kernels[phase];
    out->repeats = 3;
    /* FAKE_APPROF_APPLY_SECONDS: the optimizer step "measured" with the
     * backward phase (ApprofMeasurement.apply_seconds), as the real module
     * does */
    const char *apply = getenv("FAKE_APPROF_APPLY_SECONDS");
    if (phase == 1 && p->optimizer_elements > 0 && apply) {
        char *end = NULL;
        double v = strtod(apply, &end);
        if (end == apply || *end || !(v >= 0)) {
            snprintf(out->error, sizeof out->error, "FAKE_APPROF_APPLY_SECONDS: not seconds: '%s'",
                     apply);
            return -1;
        }
        out->apply_seconds = v;
    }
    return 0;
}

static int destroyed;

static void fake_destroy(void *ctx)
{
    (void)ctx;
    destroyed++;
}

int approf_backend_module_init(int abi, ApprofBackend *out, char *err, size_t errlen)
{
    if (abi != APPROF_BACKEND_ABI || nodev(err, errlen))
        return APPROF_ENODEV;
    memset(out, 0, sizeof *out);
    out->name = "fake";
    out->ctx = &destroyed;
    out->measure = fake_measure;
    out->destroy = fake_destroy;
    return 0;
}

static int device_count(void)
{
    const char *e = getenv("FAKE_APPROF_DEVICES");
    char *end = NULL;
    long n = e && *e ? strtol(e, &end, 10) : 2;
    if (end && *end)
        n = 2;
    return n >= 1 && n <= 64 ? n : 2;
}

int approf_backend_module_init_on(int abi, int device, ApprofBackend *out, char *err,
                                  size_t errlen)
{
    if (abi != APPROF_BACKEND_ABI || nodev(err, errlen))
        return APPROF_ENODEV;
    if (device >= device_count()) {
        snprintf(err, errlen, "no CUDA device %d: this process sees %d", device, device_count());
        return APPROF_ENODEV;
    }
    return approf_backend_module_init(abi, out, err, errlen);
}

/* bf16: (10 + 10 log2 m + 20 log2 n + 40 log2 k) TFLOP/s; f16 0.9 of it. */
static double fake_gemm_rate(const char *dtype, int64_t m, int64_t n, int64_t k)
{
    double r = 1e12 * (10 + 10 * log2((double)m) + 20 * log2((double)n) + 40 * log2((double)k));
    return strcmp(dtype, "f16") ? r : 0.9 * r;
}

/* Every (m, n, k) of req->gemm_grid in bf16 and f16, as the module's grid. */
static int fake_gemm_grid(const ApprofProbeRequest *req)
{
    static const char *const dts[] = {"bf16", "f16"};
    int rc = 0, ng = req->n_gemm_grid < APPROF_PROBE_MAX_GEMM_GRID ? req->n_gemm_grid
                                                                  : APPROF_PROBE_MAX_GEMM_GRID;
    if (!req->on_gemm_shape)
        return 0;
    for (int d = 0; d < 2 && rc == 0; d++)
        for (int a = 0; a < ng && rc == 0; a++)
            for (int b = 0; b < ng && rc == 0; b++)
                for (int c = 0; c < ng && rc == 0; c++) {
                    int64_t m = req->gemm_grid[a], n = req->gemm_grid[b], k = req->gemm_grid[c];
                    if (m > 0 && n > 0 && k > 0)
                        rc = req->on_gemm_shape(req->user, dts[d], m, n, k,
                                                fake_gemm_rate(dts[d], m, n, k));
                }
    return rc;
}

/* Under mpirun (req->pg, size > 1): what the real module does around NCCL —
 * the placement check and agreements, one "unique id" per HxG group
 * broadcast from rank 0 and checked by every rank — with rank 0 reporting
 * deterministic points per group (slower across hosts). */
static int fake_probe_mpi(const ApprofProbeRequest *req, int rc, char *err, size_t errlen)
{
    const ApprofProcessGroup *pg = req->pg;
    int mine = rc, L = pg->local_size, hosts;
    if (rc == 0 && (L < 1 || pg->size % L || pg->rank % L != pg->local_rank)) {
        snprintf(err, errlen, "rank %d: ranks must be placed host by host", pg->rank);
        rc = APPROF_EINVAL;
    }
    rc = pg->agree(pg->ctx, rc > 0 ? APPROF_EINTR : rc);
    if (rc < 0)
        return mine ? mine : rc;
    hosts = pg->size / L;
    for (int h = 1; h <= hosts && rc == 0; h *= 2)
        for (int g = 1; g <= L && rc == 0; g *= 2) {
            char id[128], want[128];
            if (h * g < 2)
                continue;
            memset(id, 0, sizeof id);
            snprintf(want, sizeof want, "fake-nccl-id %dx%d", h, g);
            if (pg->rank == 0)
                snprintf(id, sizeof id, "%s", want);
            rc = pg->bcast(pg->ctx, id, sizeof id, 0);
            if (rc == 0 && strcmp(id, want)) {
                snprintf(err, errlen, "rank %d: broadcast id '%s'", pg->rank, id);
                rc = APPROF_EIO;
            }
            for (int64_t b = req->min_bytes; rc == 0 && pg->rank == 0 && b <= req->max_bytes;
                 b *= 2) {
                double slow = h > 1 ? 8.0 : 1.0;
                rc = req->on_comm(req->user, APPROF_COLL_ALL_REDUCE, h, g, "f32", b,
                                  slow * (1e-5 + b / 1e11));
                if (rc == 0)
                    rc = req->on_comm(req->user, APPROF_COLL_SEND_RECV, h, g, "f32", b,
                                      slow * (2e-6 + b / 2e11));
            }
            rc = pg->agree(pg->ctx, rc > 0 ? APPROF_EINTR : rc);
        }
    return rc;
}

int approf_probe_module_run(int abi, const ApprofProbeRequest *req, ApprofProbeInfo *info,
                            char *err, size_t errlen)
{
    int rc;
    if (abi != APPROF_PROBE_ABI || nodev(err, errlen))
        return APPROF_ENODEV;
    memset(info, 0, sizeof *info);
    snprintf(info->gpu_model, sizeof info->gpu_model, "Fake GPU 40GB");
    info->device_count = device_count();
    info->device_memory = (int64_t)40 << 30;
    info->cc_major = 8;
    info->sm_count = 108;
    snprintf(info->driver_version, sizeof info->driver_version, "13.0");
    snprintf(info->runtime_version, sizeof info->runtime_version, "13.0");
    snprintf(info->nccl_version, sizeof info->nccl_version, "2.28.3");
    rc = req->on_info ? req->on_info(req->user, info) : 0;
    if (req->pg && req->pg->size > 1) {
        if (rc == 0 && req->pg->rank == 0)
            rc = req->on_compute(req->user, "gemm", "f16", 4096, 250e12);
        if (rc == 0 && req->pg->rank == 0)
            rc = fake_gemm_grid(req);
        return fake_probe_mpi(req, rc, err, errlen);
    }
    if (rc != 0)
        return rc;
    if ((rc = req->on_compute(req->user, "gemm", "f16", 4096, 250e12)) != 0 ||
        (rc = req->on_compute(req->user, "gemm", "f16", 8192, 280e12)) != 0 ||
        (rc = req->on_compute(req->user, "memcpy", "u8", 1 << 20, 1.2e12)) != 0 ||
        (rc = fake_gemm_grid(req)) != 0)
        return rc;
    /* FAKE_APPROF_OVERLAP=1: the overlap points of a 2-GPU probe
     * (probe_overlap.c): the GEMM 1 - 560/640 = 0.125 slower beside the
     * all-reduce, 1 - 585/650 = 0.1 beside the all-gather */
    if (getenv("FAKE_APPROF_OVERLAP") && !strcmp(getenv("FAKE_APPROF_OVERLAP"), "1") &&
        ((rc = req->on_compute(req->user, "overlap-gemm:all-reduce", "bf16", 8192, 640e12)) != 0 ||
         (rc = req->on_compute(req->user, "overlap-gemm+all-reduce", "bf16", 8192, 560e12)) != 0 ||
         (rc = req->on_compute(req->user, "overlap-all-reduce", "f32", 1 << 28, 300e9)) != 0 ||
         (rc = req->on_compute(req->user, "overlap-all-reduce+gemm", "f32", 1 << 28, 270e9)) != 0 ||
         (rc = req->on_compute(req->user, "overlap-gemm:all-gather", "bf16", 8192, 650e12)) != 0 ||
         (rc = req->on_compute(req->user, "overlap-gemm+all-gather", "bf16", 8192, 585e12)) != 0))
        return rc;
    for (int64_t b = req->min_bytes; b <= req->max_bytes; b *= 2) {
        if ((rc = req->on_comm(req->user, APPROF_COLL_ALL_REDUCE, 1, 2, "f32", b, 1e-5 + b / 1e11)) != 0 ||
            (rc = req->on_comm(req->user, APPROF_COLL_SEND_RECV, 1, 2, "f32", b, 2e-6 + b / 2e11)) != 0)
            return rc;
    }
    if (req->on_progress)
        req->on_progress(req->user, "fake probe done");
    return 0;
}
