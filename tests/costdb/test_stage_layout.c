/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a plan's stages sit (costdb/stage_layout.c), counted by hand on two
 * GB200 NVL72 racks (--cluster 36x4, trays of 4 GPUs, domains of 18 trays:
 * 0-17 and 18-35) and on hosts without a domain: a stage is kept inside
 * the domain its profile priced it in whenever some order of Alpa's
 * contiguous slicing allows it, and the one that cannot be kept straddles,
 * said so; and the price of a straddling stage's gradient all-reduce
 * against the same inside one rack.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "collective.h"
#include "stage_layout.h"

#include "cunit_run.h"

/* GB200 NVL72 as the solver reads its row: trays of 4, a 72-GPU domain,
 * 4 x 50 GB/s adapters a tray (profiler/hw/specs.c) */
static CostdbFabric nvl72(void)
{
    CostdbFabric f;
    memset(&f, 0, sizeof f);
    f.intra_bandwidth = 900e9;
    f.intra_latency = 3.4e-6;
    f.inter_bandwidth = 200e9;
    f.inter_latency = 1e-5;
    f.gpus_per_host = 4;
    f.nics_per_host = 4;
    f.nic_bandwidth = 50e9;
    f.bus_efficiency = 0.8;
    f.scaleup_gpus = 72;
    return f;
}

static void check_spot(const CostdbStageSpot *s, int host, int gpu, int domains, int priced)
{
    CU_ASSERT_EQUAL(s->first_host, host);
    CU_ASSERT_EQUAL(s->first_gpu, gpu);
    CU_ASSERT_EQUAL(s->domains, domains);
    CU_ASSERT_EQUAL(s->priced_domains, priced);
}

/* 16, 16, 2, 2 trays in stage order: the second 16 skips trays 16-17 (it
 * would straddle) for tray 18; the first 2-tray stage follows it in rack
 * 1 (34-35: its send from stage 1 on NVLink), the second finds rack 1
 * full and takes 16-17. */
static void test_kept_in_stage_order(void)
{
    CostdbFabric f = nvl72();
    int hosts[4] = {16, 16, 2, 2}, gpus[4] = {4, 4, 4, 4};
    CostdbStageSpot s[4];
    CU_ASSERT_EQUAL(costdb_stage_layout(&f, 36, 4, hosts, gpus, 4, s), 0);
    check_spot(&s[0], 0, 0, 1, 1);
    check_spot(&s[1], 18, 0, 1, 1);
    check_spot(&s[2], 34, 0, 1, 1);
    check_spot(&s[3], 16, 0, 1, 1);
}

/* 2, 2, 16, 16: in stage order the second 16 finds no rack with 16 free
 * trays (0-3 taken, 18-33 taken); Alpa's order (largest first, the later
 * of equal sizes first) places 16 at 0 (stage 3), 16 at 18 (stage 2), 2 at
 * 16 (stage 1) and 2 at 34 (stage 0). */
static void test_kept_in_alpa_order(void)
{
    CostdbFabric f = nvl72();
    int hosts[4] = {2, 2, 16, 16}, gpus[4] = {4, 4, 4, 4};
    CostdbStageSpot s[4];
    CU_ASSERT_EQUAL(costdb_stage_layout(&f, 36, 4, hosts, gpus, 4, s), 0);
    check_spot(&s[3], 0, 0, 1, 1);
    check_spot(&s[2], 18, 0, 1, 1);
    check_spot(&s[1], 16, 0, 1, 1);
    check_spot(&s[0], 34, 0, 1, 1);
}

/* 16, 16, 4: 16 + 16 + 4 trays leave 2 + 2 free in the racks, no order
 * keeps the 4-tray stage in one; stage order without the rule: 0-15,
 * 16-31 (straddles: trays 16-17 in rack 0, 18-31 in rack 1), 32-35. */
static void test_straddle_unavoidable(void)
{
    CostdbFabric f = nvl72();
    int hosts[3] = {16, 16, 4}, gpus[3] = {4, 4, 4};
    CostdbStageSpot s[3];
    CU_ASSERT_EQUAL(costdb_stage_layout(&f, 36, 4, hosts, gpus, 3, s), 1);
    check_spot(&s[0], 0, 0, 1, 1);
    check_spot(&s[1], 16, 0, 2, 1);
    check_spot(&s[2], 32, 0, 1, 1);
}

/* A stage larger than a rack is priced from a rack's first tray: 4, 32
 * puts the 32 at tray 0 (two racks, as priced) and the 4 at 32. */
static void test_larger_than_a_domain(void)
{
    CostdbFabric f = nvl72();
    int hosts[2] = {4, 32}, gpus[2] = {4, 4};
    CostdbStageSpot s[2];
    CU_ASSERT_EQUAL(costdb_stage_layout(&f, 36, 4, hosts, gpus, 2, s), 0);
    check_spot(&s[1], 0, 0, 2, 2);
    check_spot(&s[0], 32, 0, 1, 1);
}

/* Without a domain the host is the node: first fit in stage order, a
 * (1, m) submesh at the first m-aligned free run of a host (apreport's
 * layout before; a host-major run from device 2 would have split the
 * (1, 4) stage over two hosts). */
static void test_hosts(void)
{
    CostdbFabric f = nvl72();
    int hosts[3] = {1, 1, 1}, gpus[3] = {2, 4, 2};
    CostdbStageSpot s[3];
    f.scaleup_gpus = 0;
    CU_ASSERT_EQUAL(costdb_stage_layout(&f, 2, 4, hosts, gpus, 3, s), 0);
    check_spot(&s[0], 0, 0, 1, 1);
    check_spot(&s[1], 1, 0, 1, 1);
    check_spot(&s[2], 0, 2, 1, 1);
    CU_ASSERT_EQUAL(costdb_stage_layout(NULL, 2, 4, hosts, gpus, 3, s), 0);
    check_spot(&s[2], 0, 2, 1, 1);
    /* a stage that fits no order */
    hosts[1] = 3;
    gpus[1] = 4;
    CU_ASSERT_EQUAL(costdb_stage_layout(&f, 2, 4, hosts, gpus, 3, s), -1);
    CU_ASSERT_EQUAL(s[1].first_host, -1);
    CU_ASSERT_EQUAL(s[1].domains, 0);
}

/* The hosts' nodes: racks of 18 trays, or hosts. */
static void test_hosts_domains(void)
{
    CostdbFabric f = nvl72();
    CU_ASSERT_EQUAL(costdb_hosts_domains(&f, 0, 18), 1);
    CU_ASSERT_EQUAL(costdb_hosts_domains(&f, 16, 16), 2);
    CU_ASSERT_EQUAL(costdb_hosts_domains(&f, 17, 20), 3);
    CU_ASSERT_EQUAL(costdb_hosts_domains(&f, 3, 0), 0);
    f.scaleup_gpus = 0;
    CU_ASSERT_EQUAL(costdb_hosts_domains(&f, 16, 16), 16);
}

/* What the straddle costs: a data-parallel all-reduce of 1 GiB over the 64
 * GPUs of a 16-tray stage. Inside one rack, one NCCL node on NVLink; over
 * two racks, two nodes of 72 GPUs with 72 adapters each, the group's 32 of
 * a rack getting 32 of them, 1600 GB/s, capped by NVLink's 900 x 0.8 = 720
 * GB/s: NCCL's tuning model then prices nNodes = 2 (docs/nccl-tuning.md).
 * The straddle costs more, and each price is the domain pricing's own. */
static void test_straddle_price(void)
{
    CostdbFabric f = nvl72();
    double bytes = 1073741824.0;
    double inside = costdb_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, bytes, 64, 16, 1);
    double one = costdb_domain_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, bytes, 64, 1);
    double two = costdb_domain_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, bytes, 64, 2);
    CU_ASSERT_EQUAL(inside, one);
    CU_ASSERT(two > one);
    CU_ASSERT(isfinite(two));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"kept in stage order", test_kept_in_stage_order},
        {"kept in Alpa's order", test_kept_in_alpa_order},
        {"unavoidable straddle", test_straddle_unavoidable},
        {"larger than a domain", test_larger_than_a_domain},
        {"hosts without a domain", test_hosts},
        {"hosts' domains", test_hosts_domains},
        {"the straddle's price", test_straddle_price},
    };
    return CUNIT_RUN("costdb_stage_layout", tests);
}
