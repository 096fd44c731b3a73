/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hardware of 2025-2026 and the scale-up domain larger than a host
 * (docs/hardware.md): the b200 and gb200-nvl72 specs against their
 * datasheet figures, h200's; collectives inside one NVL72 domain priced on
 * NVLink although they span trays (an all-reduce over 16 GPUs on 4 trays
 * against the same over 2 DGX H100 hosts on InfiniBand), across domains
 * priced as NCCL prices a multi-node NVLink clique (one node of 72 GPUs
 * with all its trays' adapters); the same price from the stored hardware
 * row (the solver's fabric); and the spec file's scaleup_domain_gpus with
 * its bad inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "collective.h"
#include "costdb.h"
#include "hardware.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define GIB 1073741824.0
#define TF 1e12
#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b))

/* The figures of the datasheets and the technical brief (specs.c). */
static void test_specs(void)
{
    ApprofHardwareSpec b, g, h;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("b200", &b), APPROF_OK);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("gb200-nvl72", &g), APPROF_OK);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h200", &h), APPROF_OK);
    /* B200 (HGX, 1000 W): dense BF16 2250, FP8 4500, FP4 9000, TF32 1100 */
    CU_ASSERT(REL(b.peak_flops[APPROF_BF16], 2250 * TF));
    CU_ASSERT(REL(b.peak_flops_fp8, 4500 * TF));
    CU_ASSERT(REL(b.peak_flops_fp4, 9000 * TF));
    CU_ASSERT(REL(b.peak_flops_tf32, 1100 * TF));
    CU_ASSERT_EQUAL(b.device_memory, (int64_t)(180 * GIB));
    CU_ASSERT(REL(b.memory_bandwidth, 8000e9));
    CU_ASSERT(REL(b.intra_host_bandwidth, 900e9));
    CU_ASSERT_EQUAL(b.gpus_per_host, 8);
    CU_ASSERT_EQUAL(b.scaleup_gpus, 0);
    /* GB200 (1200 W): 2500, 5000, 10000; trays of 4 in a 72-GPU domain */
    CU_ASSERT(REL(g.peak_flops[APPROF_BF16], 2500 * TF));
    CU_ASSERT(REL(g.peak_flops_fp8, 5000 * TF));
    CU_ASSERT(REL(g.peak_flops_fp4, 10000 * TF));
    CU_ASSERT_EQUAL(g.device_memory, (int64_t)(186 * GIB));
    CU_ASSERT_EQUAL(g.gpus_per_host, 4);
    CU_ASSERT_EQUAL(g.scaleup_gpus, 72);
    CU_ASSERT_EQUAL(g.nics_per_host, 4);
    CU_ASSERT(REL(g.nic_bandwidth, 50e9));
    /* no Hopper kernel figure carried over to Blackwell: its BF16 GEMMs
     * take the published B200 table's 0.67, not Hopper's 0.77
     * (test_blackwell_gemm.c) */
    CU_ASSERT_EQUAL(g.attention_efficiency, 0.0);
    CU_ASSERT_EQUAL(g.gemm_store_overlap, 0.0);
    CU_ASSERT(REL(g.gemm_eff[APPROF_MATH_F16], 0.67));
    /* H200: GH100 rates, 4.8 TB/s, 141 GB (143771 MiB as the driver says) */
    CU_ASSERT(REL(h.peak_flops[APPROF_BF16], 989.4 * TF));
    CU_ASSERT(REL(h.peak_flops_fp8, 1978.9 * TF));
    CU_ASSERT(REL(h.memory_bandwidth, 4800e9));
    CU_ASSERT_EQUAL(h.device_memory, (int64_t)143771 << 20);
    /* CUDA's names */
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("NVIDIA GB200", (int64_t)(186 * GIB)),
                           "gb200-nvl72");
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("NVIDIA B200", (int64_t)(180 * GIB)),
                           "b200");
}

/* An all-reduce over 16 GPUs on 4 GB200 trays stays on NVLink; over 2 DGX
 * H100 hosts it crosses InfiniBand. */
static void test_inside_domain(void)
{
    ApprofHardwareSpec g, h, flat;
    ApprofCollective c16 = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, GIB, 16, 4);
    ApprofCollective one = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, GIB, 16, 1), c, c1;
    double t_g, t_h, t_flat, bus;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("gb200-nvl72", &g), APPROF_OK);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &h), APPROF_OK);
    t_g = approf_collective_cost(&g, &c16);
    /* exactly the price of 16 GPUs in one NCCL node: NVLink, one node */
    CU_ASSERT(REL(t_g, approf_collective_cost(&g, &one)));
    /* by hand (docs/nccl-tuning.md): NCCL's ring in Simple wins at 1 GiB;
     * bus 900 GB/s x 0.8, 30 steps at NVLink's 3.4 us, base 8.4 us */
    bus = 900e9 * 0.8;
    CU_ASSERT(REL(t_g, (8.4 + 30 * 3.4) * 1e-6 + GIB * 30.0 / (16.0 * bus)));
    CU_ASSERT(REL(approf_link_bandwidth(&g, 16, 4, 1), bus));
    /* 2 DGX H100 hosts: 8 x 400 Gb/s adapters a host, 400 GB/s x 0.8 */
    c = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, GIB, 16, 2);
    t_h = approf_collective_cost(&h, &c);
    CU_ASSERT(REL(approf_link_bandwidth(&h, 16, 2, 1), 400e9 * 0.8));
    CU_ASSERT(t_h > 2.0 * t_g);
    /* the same trays without the domain (the model before it): the 4
     * trays' adapters, 200 GB/s x 0.8, four times slower than NVLink */
    flat = g;
    flat.scaleup_gpus = 0;
    t_flat = approf_collective_cost(&flat, &c16);
    CU_ASSERT(REL(approf_link_bandwidth(&flat, 16, 4, 1), 200e9 * 0.8));
    CU_ASSERT(t_flat > 4.0 * t_g);
    /* a whole domain (18 trays, 72 GPUs) is one node too; so is a group
     * of 18 GPUs one a tray (a data-parallel axis under tp 4) */
    c = hw_fixture_coll(APPROF_COLL_ALL_GATHER, GIB, 72, 18);
    c1 = hw_fixture_coll(APPROF_COLL_ALL_GATHER, GIB, 72, 1);
    CU_ASSERT(REL(approf_collective_cost(&g, &c), approf_collective_cost(&g, &c1)));
    CU_ASSERT(REL(approf_link_bandwidth(&g, 18, 18, 1), bus));
    /* hosts unknown across hosts (one GPU a host): 18 GPUs fit a domain */
    CU_ASSERT(REL(approf_collective_seconds(&g, APPROF_COLL_ALL_REDUCE, GIB, 18, 1),
                  approf_collective_seconds(&g, APPROF_COLL_ALL_REDUCE, GIB, 18, 0)));
}

/* Across domains: a domain is one NCCL node of 72 GPUs holding its 18
 * trays' 72 adapters (NCCL's MNNVL clique, docs/hardware.md). */
static void test_across_domains(void)
{
    ApprofHardwareSpec g;
    CostdbFabric f, node;
    double t, b = GIB;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("gb200-nvl72", &g), APPROF_OK);
    memset(&f, 0, sizeof f);
    f.intra_bandwidth = g.intra_host_bandwidth;
    f.intra_latency = g.intra_host_latency;
    f.inter_bandwidth = g.inter_host_bandwidth;
    f.inter_latency = g.inter_host_latency;
    f.gpus_per_host = 4;
    f.nics_per_host = 4;
    f.nic_bandwidth = 50e9;
    f.bus_efficiency = 0.8;
    f.scaleup_gpus = 72;
    node = f;
    node.gpus_per_host = 72;
    node.nics_per_host = 72;
    node.scaleup_gpus = 0;
    CU_ASSERT_EQUAL(costdb_fabric_node_gpus(&f), 72);
    CU_ASSERT_EQUAL(costdb_fabric_node_gpus(&node), 72);
    /* 144 GPUs on 36 trays: 2 domains, NCCL's 2 nodes */
    t = costdb_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 144, 36, 1);
    CU_ASSERT(REL(t, costdb_collective_seconds(&node, COSTDB_COLL_ALL_REDUCE, b, 144, 2, 1)));
    CU_ASSERT(REL(t, costdb_domain_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 144, 2)));
    CU_ASSERT(t > costdb_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 72, 18, 1));
    /* 19 trays spill into a second domain */
    CU_ASSERT(REL(costdb_collective_seconds(&f, COSTDB_COLL_ALL_GATHER, b, 76, 19, 1),
                  costdb_collective_seconds(&node, COSTDB_COLL_ALL_GATHER, b, 76, 2, 1)));
    /* a data-parallel pair one GPU a domain (ranks 72 apart): one
     * adapter's share, 50 GB/s x 0.8, and the network's latency */
    CU_ASSERT(REL(costdb_fabric_bandwidth(&f, 2, 19, 1), 50e9 * 0.8));
    CU_ASSERT(REL(costdb_collective_seconds(&f, COSTDB_COLL_SEND_RECV, 1e6, 2, 19, 1),
                  1e6 / 40e9 + g.inter_host_latency));
    /* a send between two stages in different domains (the solver knows
     * their places) is priced on the network even though 2 hosts would
     * fit one domain */
    CU_ASSERT(REL(costdb_domain_collective_seconds(&f, COSTDB_COLL_SEND_RECV, 1e6, 2, 2),
                  1e6 / 40e9 + g.inter_host_latency));
    CU_ASSERT(REL(costdb_domain_collective_seconds(&f, COSTDB_COLL_SEND_RECV, 1e6, 2, 1),
                  1e6 / 720e9 + g.intra_host_latency));
    /* a strided group, the axis 0 of a (4, 32) logical mesh on 32 trays:
     * ranks 32 apart on 4 trays (0, 8, 16, 24) but spanning 25 trays, two
     * domains: priced on the network, where its 4 trays alone would fit
     * one domain */
    {
        ApprofCollective s4 = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, b, 4, 4), d1 = s4;
        s4.span_hosts = 25;
        d1.span_hosts = 4;
        CU_ASSERT_EQUAL(costdb_collective_domains(&f, 4, 4, 25, 1), 2);
        CU_ASSERT_EQUAL(costdb_collective_domains(&f, 4, 4, 0, 1), 1);
        CU_ASSERT(REL(approf_collective_cost(&g, &s4),
                      costdb_domain_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 4, 2)));
        CU_ASSERT(REL(approf_collective_cost(&g, &d1),
                      costdb_domain_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, b, 4, 1)));
        CU_ASSERT(approf_collective_cost(&g, &s4) > 4 * approf_collective_cost(&g, &d1));
    }
    /* without a domain, domains are hosts: the old price */
    node.gpus_per_host = 8;
    node.nics_per_host = 8;
    CU_ASSERT(REL(costdb_domain_collective_seconds(&node, COSTDB_COLL_ALL_REDUCE, b, 16, 2),
                  costdb_collective_seconds(&node, COSTDB_COLL_ALL_REDUCE, b, 16, 2, 1)));
}

/* The stored hardware row carries the domain, so the solver's fabric
 * prices as the profiler does. */
static void test_costdb_row(void)
{
    ApprofHardwareSpec g;
    CostdbHardware row;
    CostdbFabric f;
    ApprofCollective c;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("gb200-nvl72", &g), APPROF_OK);
    approf_hardware_to_costdb(&g, &row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row.capabilities, "\"scaleup_domain_gpus\": 72"));
    CU_ASSERT_PTR_NOT_NULL(strstr(row.capabilities, "\"peak_flops_fp4\": 1e+16"));
    costdb_fabric_from_hardware(&row, &f);
    CU_ASSERT_EQUAL(f.scaleup_gpus, 72);
    c = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, GIB, 16, 4);
    CU_ASSERT(REL(costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, GIB, 16, 1, 4),
                  approf_collective_cost(&g, &c)));
    /* a row from before the field, or a hostile one, prices per host */
    snprintf(row.capabilities, sizeof row.capabilities, "{\"scaleup_domain_gpus\": 7.5}");
    costdb_fabric_from_hardware(&row, &f);
    CU_ASSERT_EQUAL(f.scaleup_gpus, 0);
    snprintf(row.capabilities, sizeof row.capabilities, "{\"scaleup_domain_gpus\": 70}");
    costdb_fabric_from_hardware(&row, &f);
    CU_ASSERT_EQUAL(costdb_fabric_node_gpus(&f), 4); /* not whole trays: ignored */
}

#define BASE                                                                                  \
    "name = nvl\npeak_tflops_f32 = 90\npeak_tflops_f16 = 2500\npeak_tflops_bf16 = 2500\n"    \
    "memory_gib = 186\nmemory_bandwidth_gbs = 8000\ngpus_per_host = 4\n"                     \
    "intra_host_bandwidth_gbs = 900\ninter_host_bandwidth_gbs = 50\n"

static void test_spec_file(void)
{
    static const struct {
        const char *text;
        int line;
        const char *expect;
    } bad[] = {
        {BASE "scaleup_domain_gpus = 70\n", 10,
         "field 'scaleup_domain_gpus': 70 is not a whole number of hosts of gpus_per_host = 4"},
        {BASE "scaleup_domain_gpus = 2\n", 10,
         "field 'scaleup_domain_gpus': 2 is not a whole number of hosts"},
        {BASE "scaleup_domain_gpus = -72\n", 10, "field 'scaleup_domain_gpus': must be >= 0"},
        {BASE "scaleup_domain_gpus = 7.5\n", 10,
         "field 'scaleup_domain_gpus': '7.5' is not a whole number"},
        {BASE "scaleup_domain_gpus = 1e9\n", 10, "field 'scaleup_domain_gpus': 1e+09 is absurd"},
        {BASE "scaleup_domain_gpus = many\n", 10,
         "field 'scaleup_domain_gpus': 'many' is not a number"},
        {BASE "peak_tflops_fp4 = -1\n", 10, "field 'peak_tflops_fp4': must be >= 0"},
    };
    ApprofHardwareSpec hw, back;
    char err[512] = "", fp1[128], fp2[128];
    const char *p;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        hw_fixture_refused(bad[i].text, bad[i].line, bad[i].expect);
    /* good: a domain of 72 on hosts of 4, and the default (none) */
    p = hw_fixture_tmp(BASE "scaleup_domain_gpus = 72\npeak_tflops_fp4 = 10000\n");
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(hw.scaleup_gpus, 72);
    CU_ASSERT(REL(hw.peak_flops_fp4, 10000 * TF));
    p = hw_fixture_tmp(BASE);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(back.scaleup_gpus, 0);
    /* the domain is part of the fingerprint */
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    approf_hardware_fingerprint(&back, fp2, sizeof fp2);
    CU_ASSERT_STRING_NOT_EQUAL(fp1, fp2);
    /* the built-in written out and read back: the same spec */
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("gb200-nvl72", &hw), APPROF_OK);
    CU_ASSERT_EQUAL_FATAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(back.scaleup_gpus, 72);
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    approf_hardware_fingerprint(&back, fp2, sizeof fp2);
    CU_ASSERT_STRING_EQUAL(fp1, fp2);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"Blackwell and H200 specs", test_specs},
        {"inside one NVLink domain", test_inside_domain},
        {"across domains", test_across_domains},
        {"the stored row", test_costdb_row},
        {"spec file", test_spec_file},
    };
    int rc = CUNIT_RUN("scaleup", tests);
    hw_fixture_tmp_remove();
    return rc;
}
