/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe's arithmetic: message sizes, device groups, NCCL counts per
 * collective, and algorithm / bus bandwidth exactly as nccl-tests define
 * them (the GetBw functions of its src/ files: all-reduce busbw = algbw * 2(n-1)/n,
 * all-gather, reduce-scatter and all-to-all (n-1)/n, send-recv 1).
 */
#include <string.h>

#include "host.h"

int approf_probe_sizes(int64_t min_bytes, int64_t max_bytes, int64_t *out, int cap)
{
    int n = 0;
    int64_t s = min_bytes, last = 0;
    if (min_bytes <= 0 || max_bytes < min_bytes || cap < 0 || (cap > 0 && !out))
        return APPROF_EINVAL;
    for (;;) {
        if (n < cap)
            out[n] = s;
        n++;
        last = s;
        if (s > max_bytes / 2)
            break;
        s *= 2;
    }
    if (last != max_bytes) {
        if (n < cap)
            out[n] = max_bytes;
        n++;
    }
    return n < cap ? n : cap;
}

int approf_probe_groups(int devices, int *out, int cap)
{
    int n = 0;
    for (int g = 2; g <= devices && n < cap; g *= 2)
        out[n++] = g;
    return n;
}

int approf_probe_mpi_groups(int hosts, int gpus, int *out_h, int *out_g, int cap)
{
    int n = 0;
    for (int h = 1; h <= hosts; h *= 2)
        for (int g = 1; g <= gpus && n < cap; g *= 2)
            if (h * g >= 2) {
                out_h[n] = h;
                out_g[n] = g;
                n++;
            }
    return n;
}

int approf_coll_counts(ApprofCollKind kind, int64_t bytes, int n, size_t esz,
                       ApprofCollCounts *out)
{
    int64_t unit, b;
    if (!out || n < 1 || esz == 0 || bytes <= 0 || kind < 0 || kind >= APPROF_COLL_KIND_COUNT)
        return APPROF_EINVAL;
    memset(out, 0, sizeof *out);
    unit = (kind == APPROF_COLL_ALL_REDUCE || kind == APPROF_COLL_SEND_RECV)
               ? (int64_t)esz : (int64_t)esz * n;
    b = bytes / unit * unit;
    if (b <= 0)
        return APPROF_EINVAL;
    out->bytes = b;
    switch (kind) {
    case APPROF_COLL_ALL_REDUCE:
        out->count = (size_t)(b / (int64_t)esz);
        out->send_elems = out->recv_elems = out->count;
        break;
    case APPROF_COLL_ALL_GATHER:
        out->count = (size_t)(b / unit);            /* sendcount */
        out->send_elems = out->count;
        out->recv_elems = out->count * (size_t)n;
        break;
    case APPROF_COLL_REDUCE_SCATTER:
        out->count = (size_t)(b / unit);            /* recvcount */
        out->send_elems = out->count * (size_t)n;
        out->recv_elems = out->count;
        break;
    case APPROF_COLL_ALL_TO_ALL:
        out->count = (size_t)(b / unit);            /* per peer */
        out->send_elems = out->recv_elems = out->count * (size_t)n;
        break;
    case APPROF_COLL_SEND_RECV:
        out->count = (size_t)(b / (int64_t)esz);
        out->send_elems = out->recv_elems = out->count;
        break;
    default:
        return APPROF_EINVAL;
    }
    return APPROF_OK;
}

double approf_algbw(int64_t bytes, double seconds)
{
    return seconds > 0 ? (double)bytes / seconds : 0.0;
}

double approf_busbw_factor(ApprofCollKind kind, int n)
{
    if (n < 1)
        return 0.0;
    switch (kind) {
    case APPROF_COLL_ALL_REDUCE: return 2.0 * (n - 1) / n;
    case APPROF_COLL_ALL_GATHER:
    case APPROF_COLL_REDUCE_SCATTER:
    case APPROF_COLL_ALL_TO_ALL: return (double)(n - 1) / n;
    case APPROF_COLL_SEND_RECV: return 1.0;
    default: return 0.0;
    }
}

int approf_probe_iters(int64_t bytes)
{
    if (bytes <= ((int64_t)64 << 20))
        return 20;
    if (bytes <= ((int64_t)256 << 20))
        return 10;
    return 5;
}
