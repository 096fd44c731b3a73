/* SPDX-License-Identifier: Apache-2.0 */
/*
 * approf probe's overlap measurement on real GPUs (profiler/cuda/
 * probe_overlap.c): on >= 2 devices it hands every overlap point (bf16
 * GEMM alone and beside an NCCL all-reduce and all-gather, each collective
 * alone and beside the GEMM) with a finite positive rate, says so in a
 * progress line, and the points give an overlap_gemm_slowdown in [0, 1).
 * Exits 77 (skipped) without the module, a device or a second device
 * (NCCL takes one rank per device).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
#include "cuda/probe.h"
#include "cuda/probe_store.h"

typedef struct Got {
    CostdbComputePoint cp[64];
    size_t n;
    int said_overlap;
} Got;

static int on_compute(void *user, const char *op, const char *dtype, int64_t size, double rate)
{
    Got *g = user;
    if (strncmp(op, "overlap-", 8) || g->n >= 64)
        return 0;
    snprintf(g->cp[g->n].op, sizeof g->cp[g->n].op, "%s", op);
    snprintf(g->cp[g->n].dtype, sizeof g->cp[g->n].dtype, "%s", dtype);
    g->cp[g->n].size = size;
    g->cp[g->n].rate = rate;
    g->n++;
    return 0;
}

static void on_progress(void *user, const char *line)
{
    Got *g = user;
    printf("  %s\n", line);
    if (!strncmp(line, "overlap 1x", 10))
        g->said_overlap++;
}

int main(void)
{
    static const char *ops[] = {"overlap-gemm:all-reduce", "overlap-gemm+all-reduce",
                                "overlap-all-reduce", "overlap-all-reduce+gemm",
                                "overlap-gemm:all-gather", "overlap-gemm+all-gather",
                                "overlap-all-gather", "overlap-all-gather+gemm"};
    ApprofProbeInfo info;
    ApprofProbeRequest req;
    Got got;
    char err[512] = "", which[32];
    double s = -1;
    int rc, fails = 0;

    rc = approf_cuda_device_info(&info, err, sizeof err);
    if (rc == APPROF_ENODEV) {
        printf("skipped: %s\n", err);
        return 77;
    }
    if (rc < 0) {
        printf("FAIL: device info: %s\n", err);
        return 1;
    }
    if (info.device_count < 2) {
        printf("skipped: the overlap probe needs 2 GPUs (NCCL takes one rank per device), "
               "found %d\n", info.device_count);
        return 77;
    }
    memset(&req, 0, sizeof req);
    memset(&got, 0, sizeof got);
    req.min_bytes = req.max_bytes = 1 << 20; /* the collective curves: one small size */
    req.repeats = 3;
    req.user = &got;
    req.on_compute = on_compute;
    req.on_progress = on_progress;
    rc = approf_cuda_probe(&req, &info, err, sizeof err);
    if (rc != 0) {
        printf("FAIL: approf_cuda_probe: %d %s\n", rc, err);
        return 1;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        int found = 0;
        for (size_t j = 0; j < got.n; j++)
            if (!strcmp(got.cp[j].op, ops[i])) {
                found = 1;
                if (!isfinite(got.cp[j].rate) || !(got.cp[j].rate > 0)) {
                    printf("FAIL: %s rate %g\n", ops[i], got.cp[j].rate);
                    fails++;
                }
            }
        if (!found) {
            printf("FAIL: no %s point\n", ops[i]);
            fails++;
        }
    }
    if (got.said_overlap != 2) {
        printf("FAIL: %d overlap progress lines, want 2\n", got.said_overlap);
        fails++;
    }
    if (approf_probe_overlap_slowdown(got.cp, got.n, &s, which, sizeof which) != 1 ||
        !(s >= 0.0 && s < 1.0)) {
        printf("FAIL: overlap_gemm_slowdown %g\n", s);
        fails++;
    } else {
        printf("overlap_gemm_slowdown = %.4f (beside %s, %d GPUs)\n", s, which,
               info.device_count);
    }
    printf("%s\n", fails ? "FAILED" : "passed");
    return fails ? 1 : 0;
}
