/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NCCL's tuning model as costdb prices a collective (costdb/nccl_model.c,
 * docs/nccl-tuning.md): figures computed by hand from NCCL v2.21.5-1's
 * constants (src/graph/tuning.cc) for a ring inside one host, a ring over
 * two hosts and a tree over 256; the tuner's choice (tree for a small
 * all-reduce over many hosts, the ring for a large one over few, no tree
 * for the all-gather, no LL128 off NVLink); and what grows with scale: at
 * the same bytes per GPU an all-reduce over 2,048 ranks takes longer than
 * over 16 by its latency, by the tree's log2 of the hosts, not by a ring's
 * step per rank.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "collective.h"
#include "cunit_run.h"

#define US 1e-6
#define REL(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b) + 1e-15)

/* An NVLink host of 8 GPUs with the built-in specs' link latencies (ring,
 * Simple: NVLink 3.4 us, network 9.6 us), links priced as given. */
static void fabric(CostdbFabric *f)
{
    memset(f, 0, sizeof *f);
    f->intra_bandwidth = 100e9;
    f->intra_latency = 3.4 * US;
    f->inter_bandwidth = 100e9;
    f->inter_latency = 9.6 * US;
    f->gpus_per_host = 8;
}

/* Hand-computed ring and tree times. */
static void test_hand_figures(void)
{
    CostdbFabric f;
    double b = 1 << 30, bus = 100e9, t;
    fabric(&f);
    /* all-reduce, ring, Simple, 8 ranks in one host: baseLat 8.4 + 14 steps
     * x 3.4 us; algorithm bandwidth bus x 8/14 */
    t = costdb_nccl_time(&f, COSTDB_COLL_ALL_REDUCE, b, 8, 1, bus, COSTDB_NCCL_RING,
                         COSTDB_NCCL_SIMPLE);
    CU_ASSERT(REL(t, (8.4 + 14 * 3.4) * US + b * 14.0 / (8.0 * bus)));
    /* the same over 2 hosts of 8: 30 steps, nInterSteps 2 x nNodes = 4 at
     * 9.6 us, 26 at max(3.4, 3 x 1 us net overhead) */
    t = costdb_nccl_time(&f, COSTDB_COLL_ALL_REDUCE, b, 16, 2, bus, COSTDB_NCCL_RING,
                         COSTDB_NCCL_SIMPLE);
    CU_ASSERT(REL(t, (8.4 + 26 * 3.4 + 4 * 9.6) * US + b * 30.0 / (16.0 * bus)));
    /* all-gather, ring, LL over 2 hosts: baseLat 6.6, 14 steps at max(0.6,
     * 1) us, 1 at 2.7 us; half the bus bandwidth */
    t = costdb_nccl_time(&f, COSTDB_COLL_ALL_GATHER, b, 16, 2, bus, COSTDB_NCCL_RING,
                         COSTDB_NCCL_LL);
    CU_ASSERT(REL(t, (6.6 + 14 * 1.0 + 1 * 2.7) * US + b * 15.0 / (16.0 * 0.5 * bus)));
    /* LL128 ring over 2 hosts: 0.92 of the bus bandwidth, hwLat 1.9 / 4.0 */
    t = costdb_nccl_time(&f, COSTDB_COLL_REDUCE_SCATTER, b, 16, 2, bus, COSTDB_NCCL_RING,
                         COSTDB_NCCL_LL128);
    CU_ASSERT(REL(t, (14.0 + 14 * 1.9 + 1 * 4.0) * US + b * 15.0 / (16.0 * 0.92 * bus)));
    /* all-reduce, tree, LL, 2,048 ranks over 256 hosts, 1 KiB: baseLat 6.8
     * + 2 x (7 x 0.6 + log2(256) x 5.0) us; bus x 0.92 / 3.8, algorithm
     * bandwidth half of it, treeCorrectionFactor[LL][log2(1024/64) = 4] 0.9 */
    t = costdb_nccl_time(&f, COSTDB_COLL_ALL_REDUCE, 1024, 2048, 256, bus, COSTDB_NCCL_TREE,
                         COSTDB_NCCL_LL);
    CU_ASSERT(REL(t, (6.8 + 2 * (7 * 0.6 + 8 * 5.0)) * US + 1024 / (bus * 0.92 / 3.8 * 0.5 * 0.9)));
    /* tree, Simple: NVLink 28 us a level inside the host and 28 across,
     * bus x 0.92, correction 0.9 (64 B << 22 = 256 MiB: log2 22) */
    t = costdb_nccl_time(&f, COSTDB_COLL_ALL_REDUCE, 256.0 * 1024 * 1024, 2048, 256, bus,
                         COSTDB_NCCL_TREE, COSTDB_NCCL_SIMPLE);
    CU_ASSERT(REL(t, 2 * (7 * 28.0 + 8 * 28.0) * US +
                         256.0 * 1024 * 1024 / (bus * 0.92 * 0.5 * 0.9)));
}

/* What NCCL's tuner picks. */
static void test_choice(void)
{
    CostdbFabric f;
    int a, p;
    double t;
    fabric(&f);
    /* a small all-reduce over 256 hosts: the tree in LL, log2(256) levels */
    t = costdb_nccl_seconds(&f, COSTDB_COLL_ALL_REDUCE, 1024, 2048, 256, 100e9, &a, &p);
    CU_ASSERT(a == COSTDB_NCCL_TREE && p == COSTDB_NCCL_LL);
    CU_ASSERT(t < costdb_nccl_time(&f, COSTDB_COLL_ALL_REDUCE, 1024, 2048, 256, 100e9,
                                   COSTDB_NCCL_RING, COSTDB_NCCL_LL));
    /* a large one over 2 hosts: the ring, Simple (full bus bandwidth) */
    costdb_nccl_seconds(&f, COSTDB_COLL_ALL_REDUCE, 1 << 30, 16, 2, 100e9, &a, &p);
    CU_ASSERT(a == COSTDB_NCCL_RING && p == COSTDB_NCCL_SIMPLE);
    /* a small one inside a host: the ring, LL (6.6 + 14 x 0.6 us against
     * the tree's 6.8 + 2 x 7 x 0.6) */
    costdb_nccl_seconds(&f, COSTDB_COLL_ALL_REDUCE, 64, 8, 1, 100e9, &a, &p);
    CU_ASSERT(a == COSTDB_NCCL_RING && p == COSTDB_NCCL_LL);
    /* the all-gather and reduce-scatter have no tree */
    CU_ASSERT(costdb_nccl_time(&f, COSTDB_COLL_ALL_GATHER, 1024, 2048, 256, 100e9,
                               COSTDB_NCCL_TREE, COSTDB_NCCL_LL) < 0);
    costdb_nccl_seconds(&f, COSTDB_COLL_ALL_GATHER, 1024, 2048, 256, 100e9, &a, &p);
    CU_ASSERT(a == COSTDB_NCCL_RING && p == COSTDB_NCCL_LL);
    /* PCIe hosts (ring Simple 5.7 us): LL128 is off */
    f.intra_latency = 5.7 * US;
    CU_ASSERT(costdb_nccl_time(&f, COSTDB_COLL_ALL_REDUCE, 1 << 20, 8, 1, 100e9,
                               COSTDB_NCCL_RING, COSTDB_NCCL_LL128) < 0);
    /* not NCCL's tuner's: all-to-all, send-recv */
    CU_ASSERT(costdb_nccl_seconds(&f, COSTDB_COLL_ALL_TO_ALL, 1024, 8, 1, 100e9, &a, &p) < 0 &&
              a == -1 && p == -1);
}

/* The fabric's price (costdb_collective_seconds) is the tuner's, and grows
 * with the rank count by the latency term. */
static void test_scale(void)
{
    CostdbFabric f;
    double b = 25.0 * 1024 * 1024, t16, t2048, bw;
    fabric(&f);
    f.nics_per_host = 8;
    f.nic_bandwidth = 25e9;
    f.bus_efficiency = 0.8;
    bw = costdb_fabric_bandwidth(&f, 16, 2, 1);
    /* 8 adapters of 25 GB/s, capped at the 100 GB/s NVLink, x 0.8 */
    CU_ASSERT(REL(bw, 80e9));
    t16 = costdb_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 16, 2, 1);
    t2048 = costdb_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 2048, 256, 1);
    CU_ASSERT(REL(t16, costdb_nccl_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 16, 2, bw, NULL, NULL)));
    CU_ASSERT(REL(t2048,
                  costdb_nccl_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 2048, 256, bw, NULL, NULL)));
    /* same bytes per GPU, same link: slower at 2,048 ranks ... */
    CU_ASSERT(t2048 > t16);
    /* ... by less than a ring's 2(n - 1) inter-host steps would add */
    CU_ASSERT(t2048 - t16 < 2.0 * (2048 - 16) * f.inter_latency);
    /* ... and the 25 MiB bucket at 2,048 ranks takes the tree in LL128:
     * 14 + 2 x (7 x 1.25 + 8 x 8.5) us of latency, 0.92 x 120/128 of the
     * bus bandwidth halved, treeCorrectionFactor[LL128][log2(25 MiB / 64)
     * = 18] 0.9 */
    CU_ASSERT(REL(t2048, (14.0 + 2 * (7 * 1.25 + 8 * 8.5)) * US +
                             b / (bw * 0.92 * (120.0 / 128.0) * 0.5 * 0.9)));
    /* a group across hosts of unknown layout: one GPU a host */
    CU_ASSERT(REL(costdb_collective_seconds(&f, COSTDB_COLL_ALL_GATHER, b, 4, 0, 1),
                  costdb_nccl_seconds(&f, COSTDB_COLL_ALL_GATHER, b, 4, 4,
                                      costdb_fabric_bandwidth(&f, 4, 0, 1), NULL, NULL)));
    /* no bandwidth: never runs */
    f.intra_bandwidth = 0;
    CU_ASSERT(isinf(costdb_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 8, 1, 0)));
}

/* costdb_nccl_seconds as the six pairs of costdb_nccl_time give it, with
 * no memo: the tuner's order, a later pair only when strictly faster. */
static double fresh_seconds(const CostdbFabric *f, CostdbCollKind kind, double bytes, int n,
                            int nodes, double bus, int *algo, int *proto)
{
    double best = -1.0;
    *algo = *proto = -1;
    for (int a = COSTDB_NCCL_TREE; a <= COSTDB_NCCL_RING; a++)
        for (int p = COSTDB_NCCL_LL; p <= COSTDB_NCCL_SIMPLE; p++) {
            double t = costdb_nccl_time(f, kind, bytes, n, nodes, bus, a, p);
            if (t >= 0 && (best < 0 || t < best)) {
                best = t;
                *algo = a;
                *proto = p;
            }
        }
    return best;
}

/* One call through the memo against the fresh price, bit for bit. */
static int same_as_fresh(const CostdbFabric *f, CostdbCollKind kind, double bytes, int n,
                         int nodes, double bus)
{
    int a, p, fa, fp;
    double t = costdb_nccl_seconds(f, kind, bytes, n, nodes, bus, &a, &p);
    double ft = fresh_seconds(f, kind, bytes, n, nodes, bus, &fa, &fp);
    return memcmp(&t, &ft, sizeof t) == 0 && a == fa && p == fp;
}

/* The memo's key (costdb_nccl_seconds): each input priced once, then again
 * with that one input changed, then the first again; every answer the
 * fresh one bit for bit. A key that leaves a field out answers the second
 * call with the first's price. */
static void test_memo_key(void)
{
    CostdbFabric f, g;
    const double b = 3.0 * 1024 * 1024, bus = 80e9;
    fabric(&f);
    for (int round = 0; round < 2; round++) {
        /* intra_latency: NVLink against PCIe (LL128 off) */
        g = f;
        g.intra_latency = 5.7 * US;
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, 4096, 8, 1, bus));
        CU_ASSERT(same_as_fresh(&g, COSTDB_COLL_ALL_REDUCE, 4096, 8, 1, bus));
        /* inter_latency: the network's ring/Simple step */
        g = f;
        g.inter_latency = 20.0 * US;
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_GATHER, 1 << 30, 16, 2, bus));
        CU_ASSERT(same_as_fresh(&g, COSTDB_COLL_ALL_GATHER, 1 << 30, 16, 2, bus));
        /* the kind */
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 16, 2, bus));
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_REDUCE_SCATTER, b, 16, 2, bus));
        /* bytes */
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 8, 1, bus));
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b * 1.5, 8, 1, bus));
        /* the ranks */
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 8, 2, bus));
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 4, 2, bus));
        /* the nodes */
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 16, 1, bus));
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 16, 2, bus));
        /* nodes clamped: 0 is 1 and 99 is n, the same price */
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 16, 0, bus));
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 16, 99, bus));
        /* the bus bandwidth */
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 8, 1, bus));
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 8, 1, bus * 0.5));
        /* no price: not kept, still -1 */
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_TO_ALL, b, 8, 1, bus));
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, b, 8, 1, 0.0));
        CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, 0.0, 8, 1, bus));
    }
    /* many distinct prices (more than the memo holds) and back */
    for (int round = 0; round < 2; round++)
        for (int i = 1; i <= 3000; i++)
            CU_ASSERT(same_as_fresh(&f, COSTDB_COLL_ALL_REDUCE, 256.0 * i, 2 + i % 15,
                                    1 + i % 3, bus));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"hand-computed figures", test_hand_figures},
        {"the tuner's choice", test_choice},
        {"what grows with scale", test_scale},
        {"the price memo's key, bit for bit", test_memo_key},
    };
    return CUNIT_RUN("costdb_nccl_model", tests);
}
