/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL's own price of an all-reduce, all-gather or reduce-scatter: the
 * tuning model of NCCL v2.21.5-1 (src/graph/tuning.cc, ncclTopoTuneModel
 * and ncclTopoGetAlgoTime; src/enqueue.cc, topoGetAlgoInfo), written down
 * in docs/nccl-tuning.md. For each algorithm (ring; tree for the
 * all-reduce) and protocol (LL, LL128, Simple) the time is a latency (a
 * base plus a per-step or per-level hardware latency, split between the
 * steps inside a host and those that cross one) plus the bytes over the
 * algorithm bandwidth that protocol reaches; NCCL runs the fastest, and so
 * does this price. The bus bandwidth and the ring/Simple latencies of the
 * links are the fabric's (collective.c); the rest are NCCL's constants.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "collective.h"

#define US 1e-6

/* baseLat, us: Tree { LL, LL128, Simple }, Ring { LL, LL128, Simple } */
static const double base_lat[2][3] = {{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}};

/* hwLat, us, per link class: NVLink, PCI, network; Tree then Ring */
enum { HW_NVLINK = 0, HW_PCI, HW_NET };
static const double hw_lat[3][2][3] = {
    {{0.6, 1.25, 28.0}, {0.6, 1.9, 3.4}},
    {{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},
    {{5.0, 8.5, 28.0}, {2.7, 4.0, 14.0}},
};

/* treeCorrectionFactor: per protocol, message sizes 64 B << i, i < 23 */
static const double tree_correction[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

/* getNetOverhead: 1 us per network post on x86 Intel and anything but AMD
 * (2 us); a spec does not name its CPU, so the default. */
#define NET_OVERHEAD_US 1.0

static long log2i(long n)
{
    long l = 0;
    while (n >>= 1)
        l++;
    return l;
}

/* The NCCL link class of the intra-host link: the one whose ring/Simple
 * latency (NVLink 3.4 us, PCI 5.7 us) is nearer the fabric's. */
static int intra_class(const CostdbFabric *f)
{
    double us = f->intra_latency / US;
    return fabs(us - hw_lat[HW_NVLINK][1][2]) <= fabs(us - hw_lat[HW_PCI][1][2]) ? HW_NVLINK
                                                                                 : HW_PCI;
}

/* Latency in us of hardware class c for (algo, proto); the ring/Simple
 * entry is the fabric's own per-step figure for that link. */
static double hw_latency(const CostdbFabric *f, int c, int a, int p, int net)
{
    if (a == COSTDB_NCCL_RING && p == COSTDB_NCCL_SIMPLE)
        return (net ? f->inter_latency : f->intra_latency) / US;
    return hw_lat[c][a][p];
}

/* ncclTopoTuneModel's latency of (algo, proto) in us. */
static double model_latency(const CostdbFabric *f, CostdbCollKind kind, int a, int p, int n,
                            int nodes)
{
    int ic = intra_class(f);
    double lat = base_lat[a][p];
    double intra = hw_latency(f, ic, a, p, 0);
    double inter = hw_latency(f, HW_NET, a, p, 1); /* + graph latencyInter: 0 for IB */

    if (a == COSTDB_NCCL_RING) {
        double nsteps, ninter;
        if (kind == COSTDB_COLL_ALL_REDUCE) {
            nsteps = 2.0 * (n - 1);
            ninter = nodes > 1 ? 2.0 * nodes : 0.0;
        } else {
            nsteps = n - 1;
            ninter = nodes - 1;
        }
        if (nodes > 1) {
            double over = NET_OVERHEAD_US * (p == COSTDB_NCCL_SIMPLE ? 3.0 : 1.0);
            if (intra < over)
                intra = over;
        }
        lat += (nsteps - ninter) * intra + ninter * inter;
    } else {
        lat += 2.0 * ((double)(n / nodes - 1) * intra + (double)log2i(nodes) * inter);
    }
    return lat;
}

/* ncclTopoTuneModel's bus bandwidth of (algo, proto), from the Simple
 * ring's; 0 where NCCL does not run the pair. The per-channel caps
 * (perChMax*Bws) and the LL cap (llMaxBws) need NCCL's channel count, the
 * GPU's compute capability and the CPU's vendor, which a fabric does not
 * carry: not applied. */
static double model_bus_bandwidth(const CostdbFabric *f, CostdbCollKind kind, int a, int p,
                                  int n, int nodes, double bus)
{
    double ppn = (double)n / nodes;
    if (a == COSTDB_NCCL_TREE && kind != COSTDB_COLL_ALL_REDUCE)
        return 0.0;
    /* LL128 is on by default only over NVLink (and a NIC near the GPU) */
    if (p == COSTDB_NCCL_LL128 && intra_class(f) != HW_NVLINK)
        return 0.0;
    if (a == COSTDB_NCCL_RING) {
        if (p == COSTDB_NCCL_LL)
            return bus * 0.5;
        if (p == COSTDB_NCCL_LL128)
            return bus * (ppn < 2 ? 0.7 : 0.92);
        return bus;
    }
    bus *= 0.92;
    if (p == COSTDB_NCCL_LL)
        return bus / 3.8;
    if (p == COSTDB_NCCL_LL128)
        return bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0);
    return bus;
}

double costdb_nccl_time(const CostdbFabric *f, CostdbCollKind kind, double bytes, int n,
                        int nodes, double bus_bw, int algo, int proto)
{
    double bw, lat, ratio;
    long log_size;

    if (!f || n <= 1 || !(bytes > 0) || algo < 0 || algo > 1 || proto < 0 || proto > 2)
        return -1.0;
    if (kind != COSTDB_COLL_ALL_REDUCE && kind != COSTDB_COLL_ALL_GATHER &&
        kind != COSTDB_COLL_REDUCE_SCATTER)
        return -1.0;
    if (nodes < 1)
        nodes = 1;
    if (nodes > n)
        nodes = n;
    bw = model_bus_bandwidth(f, kind, algo, proto, n, nodes, bus_bw);
    if (!(bw > 0))
        return -1.0;
    /* bus bandwidth to algorithm bandwidth */
    if (algo == COSTDB_NCCL_RING)
        ratio = kind == COSTDB_COLL_ALL_REDUCE ? (double)n / (2.0 * (n - 1)) : (double)n / (n - 1);
    else
        ratio = 0.5;
    bw *= ratio;
    log_size = log2i(bytes >= 64.0 && bytes < 9.2e18 ? (long)(bytes / 64.0) : 0);
    if (algo == COSTDB_NCCL_TREE && log_size < 23)
        bw *= tree_correction[proto][log_size];
    lat = model_latency(f, kind, algo, proto, n, nodes);
    return lat * US + bytes / bw;
}

/* costdb_nccl_seconds's answers kept per thread: a direct-mapped table of
 * NCCL_MEMO_SLOTS entries, each keyed by every input the price reads, bit
 * for bit (the fabric's intra_latency and inter_latency, the only fields of
 * f the model reads; the kind; bytes; n; nodes as clamped; bus_bw). A
 * sweep prices the same collectives again and again (the sharding ILP's
 * node costs, docs/performance.md "NCCL's prices kept per thread"); a
 * kept answer is the one the six pairs below gave for the same bits. */
#define NCCL_MEMO_SLOTS 1024

typedef struct {
    uint64_t intra, inter, bytes, bus; /* the doubles' bits */
    int kind, n, nodes;                /* n == 0: empty (a kept n is >= 2) */
    int algo, proto;
    double t;
} NcclMemo;

static _Thread_local NcclMemo nccl_memo[NCCL_MEMO_SLOTS];

static uint64_t dbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static size_t memo_slot(const NcclMemo *k)
{
    uint64_t h = k->intra * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29) ^ k->inter) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 31) ^ k->bytes) * 0x94D049BB133111EBull;
    h = (h ^ (h >> 29) ^ k->bus) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 32) ^ ((uint64_t)(unsigned)k->kind << 48) ^
         ((uint64_t)(unsigned)k->n << 20) ^ (uint64_t)(unsigned)k->nodes) *
        0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    return (size_t)(h & (NCCL_MEMO_SLOTS - 1));
}

double costdb_nccl_seconds(const CostdbFabric *f, CostdbCollKind kind, double bytes, int n,
                           int nodes, double bus_bw, int *algo, int *proto)
{
    double best = -1.0;
    int ba = -1, bp = -1;
    NcclMemo key, *m;

    /* what costdb_nccl_time answers -1 to for every pair, kept out of the
     * memo; nodes as it clamps them */
    if (!f || n <= 1 || !(bytes > 0) ||
        (kind != COSTDB_COLL_ALL_REDUCE && kind != COSTDB_COLL_ALL_GATHER &&
         kind != COSTDB_COLL_REDUCE_SCATTER))
        goto out;
    if (nodes < 1)
        nodes = 1;
    if (nodes > n)
        nodes = n;
    memset(&key, 0, sizeof key);
    key.intra = dbits(f->intra_latency);
    key.inter = dbits(f->inter_latency);
    key.bytes = dbits(bytes);
    key.bus = dbits(bus_bw);
    key.kind = (int)kind;
    key.n = n;
    key.nodes = nodes;
    m = &nccl_memo[memo_slot(&key)];
    if (m->n == n && m->nodes == nodes && m->kind == key.kind && m->bytes == key.bytes &&
        m->bus == key.bus && m->intra == key.intra && m->inter == key.inter) {
        best = m->t;
        ba = m->algo;
        bp = m->proto;
        goto out;
    }
    /* topoGetAlgoInfo's order: tree before ring, LL before LL128 before
     * Simple; a later pair wins only when strictly faster */
    for (int a = COSTDB_NCCL_TREE; a <= COSTDB_NCCL_RING; a++)
        for (int p = COSTDB_NCCL_LL; p <= COSTDB_NCCL_SIMPLE; p++) {
            double t = costdb_nccl_time(f, kind, bytes, n, nodes, bus_bw, a, p);
            if (t >= 0 && (best < 0 || t < best)) {
                best = t;
                ba = a;
                bp = p;
            }
        }
    key.t = best;
    key.algo = ba;
    key.proto = bp;
    *m = key;
out:
    if (algo)
        *algo = ba;
    if (proto)
        *proto = bp;
    return best;
}
