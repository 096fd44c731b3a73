/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Turns a probe's results into database rows: the measured hardware row
 * (fingerprint, capabilities, best rates) and the stored curves. Used by
 * `approf probe`; unit-tested with synthetic points on machines without a
 * GPU.
 */
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "probe_store.h"

void approf_probe_fingerprint(const ApprofProbeInfo *info, char *out, size_t len)
{
    snprintf(out, len, "measured:%s:%dx%lldMiB:driver %s:cuda %s:nccl %s", info->gpu_model,
             info->device_count, (long long)(info->device_memory >> 20),
             info->driver_version[0] ? info->driver_version : "?",
             info->runtime_version[0] ? info->runtime_version : "?",
             info->nccl_version[0] ? info->nccl_version : "?");
}

static int fits(char *dst, size_t cap, const char *src)
{
    int n = snprintf(dst, cap, "%s", src);
    return n >= 0 && (size_t)n < cap;
}

int approf_probe_overlap_slowdown(const CostdbComputePoint *cp, size_t n_cp, double *out,
                                  char *which, size_t len)
{
    static const char *colls[] = {"all-reduce", "all-gather"};
    int found = 0;
    *out = 0.0;
    if (which && len)
        which[0] = '\0';
    for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++) {
        char alone_op[64], beside_op[64];
        double alone = 0.0, beside = 0.0, s;
        snprintf(alone_op, sizeof alone_op, "overlap-gemm:%s", colls[c]);
        snprintf(beside_op, sizeof beside_op, "overlap-gemm+%s", colls[c]);
        for (size_t i = 0; i < n_cp; i++) {
            if (strcmp(cp[i].dtype, "bf16"))
                continue;
            if (!strcmp(cp[i].op, alone_op))
                alone = cp[i].rate;
            else if (!strcmp(cp[i].op, beside_op))
                beside = cp[i].rate;
        }
        if (!(alone > 0.0) || !(beside > 0.0))
            continue;
        s = 1.0 - beside / alone;
        if (s < 0.0)
            s = 0.0;
        if (!found || s > *out) {
            *out = s;
            if (which && len)
                snprintf(which, len, "%s", colls[c]);
        }
        found = 1;
    }
    return found;
}

int approf_probe_hardware_row(const ApprofProbeInfo *info, const CostdbComputePoint *cp,
                              size_t n_cp, const CostdbCommPoint *mp, size_t n_mp,
                              CostdbHardware *out)
{
    char fp[COSTDB_TEXT_MAX + 1];
    char group[32] = "";
    int smallest = 0;
    int64_t min_bytes = -1, largest_copy = 0;
    int n;

    if (!info || !out || (n_cp && !cp) || (n_mp && !mp))
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    approf_probe_fingerprint(info, fp, sizeof fp);
    if (strlen(fp) >= sizeof out->fingerprint || !fits(out->gpu_model, sizeof out->gpu_model, info->gpu_model) ||
        !fits(out->driver_version, sizeof out->driver_version, info->driver_version) ||
        !fits(out->cuda_version, sizeof out->cuda_version, info->runtime_version) ||
        !fits(out->nccl_version, sizeof out->nccl_version, info->nccl_version))
        return APPROF_EINVAL;
    memcpy(out->fingerprint, fp, strlen(fp) + 1);
    memcpy(out->kind, "measured", sizeof "measured");
    out->gpus_per_host = info->device_count > 0 ? info->device_count : 1;
    out->device_memory = info->device_memory;
    snprintf(out->interconnect, sizeof out->interconnect, "measured (NCCL %s)", info->nccl_version);
    for (size_t i = 0; i < n_cp; i++) {
        double r = cp[i].rate;
        if (!strcmp(cp[i].op, "gemm")) {
            double *slot = !strcmp(cp[i].dtype, "f32") ? &out->peak_flops_f32
                           : !strcmp(cp[i].dtype, "f16") ? &out->peak_flops_f16
                           : !strcmp(cp[i].dtype, "bf16") ? &out->peak_flops_bf16 : NULL;
            if (slot && r > *slot)
                *slot = r;
        } else if (!strcmp(cp[i].op, "memcpy") && cp[i].size >= largest_copy) {
            /* the largest copy: smaller ones may run from the L2 cache (on
             * an H100, 16 MiB copies ran at 3.83 TB/s, past HBM3's 3.35) */
            if (cp[i].size > largest_copy || r > out->memory_bandwidth)
                out->memory_bandwidth = r;
            largest_copy = cp[i].size;
        }
    }
    /* The smallest group measured: "1xG" with the least G. */
    for (size_t i = 0; i < n_mp; i++) {
        int g = 0;
        if (strcmp(mp[i].collective, "send-recv") || sscanf(mp[i].group_desc, "1x%d", &g) != 1)
            continue;
        if (g > 1 && (smallest == 0 || g < smallest))
            smallest = g;
    }
    if (smallest)
        snprintf(group, sizeof group, "1x%d", smallest);
    for (size_t i = 0; smallest && i < n_mp; i++) {
        double bw;
        if (strcmp(mp[i].collective, "send-recv") || strcmp(mp[i].group_desc, group))
            continue;
        bw = approf_algbw(mp[i].bytes, mp[i].seconds);
        if (bw > out->intra_host_bandwidth)
            out->intra_host_bandwidth = bw;
        if (min_bytes < 0 || mp[i].bytes < min_bytes) {
            min_bytes = mp[i].bytes;
            out->intra_host_latency = mp[i].seconds;
        }
    }
    /* Across hosts (mpirun probes): send-recv over "2x1", one GPU on each
     * of two hosts. */
    min_bytes = -1;
    for (size_t i = 0; i < n_mp; i++) {
        double bw;
        if (strcmp(mp[i].collective, "send-recv") || strcmp(mp[i].group_desc, "2x1"))
            continue;
        bw = approf_algbw(mp[i].bytes, mp[i].seconds);
        if (bw > out->inter_host_bandwidth)
            out->inter_host_bandwidth = bw;
        if (min_bytes < 0 || mp[i].bytes < min_bytes) {
            min_bytes = mp[i].bytes;
            out->inter_host_latency = mp[i].seconds;
        }
    }
    n = snprintf(out->capabilities, sizeof out->capabilities,
                 "{\"compute_capability\": \"%d.%d\", \"sm_count\": %d, \"devices\": %d, "
                 "\"cudnn\": \"%s\", \"cublaslt\": \"%s\", \"memory_reserve\": %lld}",
                 info->cc_major, info->cc_minor, info->sm_count, info->device_count,
                 info->cudnn_version, info->cublas_version,
                 (long long)approf_cuda_memory_reserve(info->device_memory));
    if (n < 0 || (size_t)n >= sizeof out->capabilities)
        return APPROF_EINVAL;
    {
        double s;
        if (approf_probe_overlap_slowdown(cp, n_cp, &s, NULL, 0)) {
            int e = snprintf(out->capabilities + n - 1, sizeof out->capabilities - (size_t)n + 1,
                             ", \"overlap_gemm_slowdown\": %.6g}", s);
            if (e < 0 || (size_t)e >= sizeof out->capabilities - (size_t)n + 1)
                return APPROF_EINVAL;
        }
    }
    return APPROF_OK;
}

int approf_probe_store(Costdb *db, CostdbHardware *hw, const CostdbComputePoint *cp, size_t n_cp,
                       const CostdbCommPoint *mp, size_t n_mp)
{
    return approf_probe_store_all(db, hw, cp, n_cp, mp, n_mp, NULL, 0);
}

int approf_probe_store_all(Costdb *db, CostdbHardware *hw, const CostdbComputePoint *cp,
                           size_t n_cp, const CostdbCommPoint *mp, size_t n_mp,
                           const CostdbGemmPoint *gp, size_t n_gp)
{
    int rc;
    if (!db || !hw)
        return COSTDB_EINVAL;
    rc = costdb_begin(db);
    if (rc < 0)
        return rc;
    rc = costdb_hardware_upsert(db, hw);
    if (rc == 0 && n_mp)
        rc = costdb_comm_put(db, hw->id, mp, n_mp);
    if (rc == 0 && n_cp)
        rc = costdb_compute_put(db, hw->id, cp, n_cp);
    if (rc == 0 && n_gp)
        rc = costdb_gemm_put(db, hw->id, gp, n_gp);
    if (rc < 0) {
        costdb_rollback(db);
        return rc;
    }
    return costdb_commit(db);
}
