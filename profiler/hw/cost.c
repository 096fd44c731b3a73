/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The analytic cost formulas: ring collectives on the link a mesh axis
 * crosses (docs/alpa-semantics.md, exact formulas in hardware.h) unless the spec carries
 * a measured curve for the collective (comm_curves.c), the roofline time of one
 * kernel, and interpolation in a measured communication curve. Pure
 * functions of their arguments, evaluated in a fixed order so that equal
 * inputs give bit-identical results.
 */
#include <math.h>

#include "costdb.h"
#include "hardware.h"
#include "stage.h"

double approf_collective_seconds(const ApprofHardwareSpec *hw, ApprofCollKind kind,
                                 double bytes, int group_size, int crosses_hosts)
{
    double n = (double)group_size, bw, lat, traffic, steps;

    if (!hw || group_size <= 1 || !(bytes > 0))
        return 0.0;
    bw = crosses_hosts ? hw->inter_host_bandwidth : hw->intra_host_bandwidth;
    lat = crosses_hosts ? hw->inter_host_latency : hw->intra_host_latency;
    if (!(bw > 0))
        return INFINITY;
    switch (kind) {
    case APPROF_COLL_ALL_REDUCE:
        /* reduce-scatter then all-gather: 2(n-1) ring steps */
        traffic = 2.0 * (n - 1.0) / n * bytes;
        steps = 2.0 * (n - 1.0);
        break;
    case APPROF_COLL_ALL_GATHER:
    case APPROF_COLL_REDUCE_SCATTER:
        traffic = (n - 1.0) / n * bytes;
        steps = n - 1.0;
        break;
    case APPROF_COLL_ALL_TO_ALL:
        /* docs/alpa-semantics.md's (Alpa's) model; n-1 pairwise exchange rounds */
        traffic = (n - 1.0) / (n * n) * bytes;
        steps = n - 1.0;
        break;
    case APPROF_COLL_SEND_RECV:
        traffic = bytes;
        steps = 1.0;
        break;
    default:
        return 0.0;
    }
    return traffic / bw + steps * lat;
}

double approf_collective_cost(const ApprofHardwareSpec *hw, const ApprofCollective *c)
{
    if (!hw || !c)
        return 0.0;
    if (hw->curves && c->group_size > 1 && c->bytes > 0 && c->hosts > 0 &&
        c->group_size % c->hosts == 0) {
        double t = approf_comm_curves_seconds(hw->curves, c->kind, c->hosts,
                                              c->group_size / c->hosts, c->bytes);
        if (t >= 0)
            return t;
    }
    return approf_collective_seconds(hw, c->kind, c->bytes, c->group_size, c->crosses_hosts);
}

double approf_kernel_seconds(const ApprofHardwareSpec *hw, const ApprofKernel *k)
{
    double mem_rate, mem_t, eff, peak, compute_t;
    int dt;

    if (!hw || !k)
        return 0.0;
    mem_rate = hw->memory_bandwidth * hw->memory_efficiency;
    mem_t = k->bytes > 0 ? (mem_rate > 0 ? k->bytes / mem_rate : INFINITY) : 0.0;
    switch (k->kind) {
    case APPROF_K_GEMM:
        eff = hw->gemm_efficiency;
        break;
    case APPROF_K_CONV_FWD:
    case APPROF_K_CONV_BWD_DATA:
    case APPROF_K_CONV_BWD_FILTER:
        eff = hw->conv_efficiency;
        break;
    default:
        /* elementwise, reduction, gather, copy: memory bound */
        return mem_t + hw->kernel_launch_overhead;
    }
    dt = (k->dtype >= APPROF_F32 && k->dtype <= APPROF_BF16) ? (int)k->dtype : APPROF_F32;
    peak = hw->peak_flops[dt] * eff;
    compute_t = k->flops > 0 ? (peak > 0 ? k->flops / peak : INFINITY) : 0.0;
    return (compute_t > mem_t ? compute_t : mem_t) + hw->kernel_launch_overhead;
}

double approf_collective_seconds_curve(const CostdbCommPoint *pts, size_t n, double bytes)
{
    const CostdbCommPoint *a, *b;
    double t;
    size_t i, j;

    if (!pts || n == 0 || !(bytes > 0))
        return 0.0;
    if (bytes <= (double)pts[0].bytes)
        return pts[0].seconds; /* below the smallest size: latency floor */
    for (i = 1; i < n; i++) {
        if (bytes <= (double)pts[i].bytes) {
            a = &pts[i - 1];
            b = &pts[i];
            /* a->bytes < bytes <= b->bytes, so the span is not empty */
            return a->seconds + (b->seconds - a->seconds) * (bytes - (double)a->bytes) /
                                    (double)(b->bytes - a->bytes);
        }
    }
    /* Above the largest size: the slope of the last two distinct sizes. */
    b = &pts[n - 1];
    for (j = n - 1; j > 0 && pts[j - 1].bytes >= b->bytes; j--)
        ;
    if (j == 0) {
        /* a single size: proportional to bytes (bandwidth bound) */
        return b->bytes > 0 ? b->seconds * bytes / (double)b->bytes : b->seconds;
    }
    a = &pts[j - 1];
    t = b->seconds + (b->seconds - a->seconds) * (bytes - (double)b->bytes) /
                         (double)(b->bytes - a->bytes);
    /* A noisy curve can fall at its end; never extrapolate below the last
     * point's time. */
    return t > b->seconds ? t : b->seconds;
}

double approf_stage_apply_seconds(const ApprofHardwareSpec *hw, const ApprofStageProgram *p)
{
    double t = 0.0, rate;
    if (!hw || !p)
        return 0.0;
    for (size_t i = 0; i < p->n_apply_colls && i < 2; i++)
        if (p->apply_colls[i].group_size > 1 && p->apply_colls[i].bytes > 0)
            t += approf_collective_cost(hw, &p->apply_colls[i]);
    rate = hw->memory_bandwidth * hw->memory_efficiency;
    if (rate > 0 && p->optimizer_bytes > 0)
        t += p->optimizer_bytes / rate;
    return t;
}
