/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A switchless full mesh inside the host (docs/hardware.md, "AMD Instinct
 * MI300X"): the mi300x spec against ROCm's figures; a pair of GPUs on a
 * mesh host reaches the other over one of its 7 Infinity Fabric links,
 * where an NVSwitch host of the same per-GPU bandwidth gives the pair all
 * of it, so a pair-wise collective (a tensor-parallel pair's all-reduce, a
 * pipeline send) costs more on the mesh and the 8-GPU one the same; the
 * mesh caps a strided group's ring across hosts; the same price from the
 * stored hardware row (the solver's fabric); the spec-file key.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "collective.h"
#include "costdb.h"
#include "cunit_run.h"
#include "hardware.h"
#include "hw_fixture.h"

#define GIB 1073741824.0
#define TF 1e12
#define GB 1e9
#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b))

/* The MI300X host of the spec: 8 GPUs, 448 GB/s of xGMI each way a GPU
 * (7 links of 64), 8 x 50 GB/s adapters, NCCL's bus efficiency 0.8. */
static CostdbFabric mi300x_fabric(int mesh)
{
    CostdbFabric f;
    memset(&f, 0, sizeof f);
    f.intra_bandwidth = 448 * GB;
    f.intra_latency = 3.4e-6;
    f.inter_bandwidth = 50 * GB;
    f.inter_latency = 9.6e-6;
    f.gpus_per_host = 8;
    f.nics_per_host = 8;
    f.nic_bandwidth = 50 * GB;
    f.bus_efficiency = 0.8;
    f.intra_full_mesh = mesh;
    return f;
}

/* ROCm docs (MI300 microarchitecture, GPU specs) and the link figures. */
static void test_spec(void)
{
    ApprofHardwareSpec m;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("mi300x", &m), APPROF_OK);
    CU_ASSERT(REL(m.peak_flops[APPROF_BF16], 1307.4 * TF));
    CU_ASSERT(REL(m.peak_flops[APPROF_F16], 1307.4 * TF));
    CU_ASSERT(REL(m.peak_flops[APPROF_F32], 163.4 * TF));
    CU_ASSERT(REL(m.peak_flops_tf32, 653.7 * TF));
    CU_ASSERT(REL(m.peak_flops_fp8, 2614.9 * TF));
    CU_ASSERT_EQUAL(m.peak_flops_fp4, 0.0);
    CU_ASSERT_EQUAL(m.device_memory, (int64_t)192 << 30);
    CU_ASSERT(REL(m.memory_bandwidth, 5300 * GB));
    CU_ASSERT_EQUAL(m.gpus_per_host, 8);
    CU_ASSERT(REL(m.intra_host_bandwidth, 7 * 64 * GB));
    CU_ASSERT_EQUAL(m.intra_host_full_mesh, 1);
    CU_ASSERT_EQUAL(m.scaleup_gpus, 0);
    CU_ASSERT_EQUAL(m.nics_per_host, 8);
    CU_ASSERT(REL(m.nic_bandwidth, 50 * GB));
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("AMD Instinct MI300X", 0), "mi300x");
    /* the efficiencies are the published figures over the peaks, to two
     * places (docs/hardware.md, "MI300X efficiencies"): AMD's
     * Max-Achievable FLOPs, BF16 708 and FP8 1273 TFLOP/s; Azure's ND
     * MI300X v5 HBM kernels, median 4.13 TB/s; its RCCL all-reduce on 8
     * GPUs, 316.82 GB/s bus bandwidth over the 448 of 7 links */
    CU_ASSERT_DOUBLE_EQUAL(m.gemm_eff[APPROF_MATH_F16], round(708.0 / 1307.4 * 100) / 100, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(m.gemm_eff[APPROF_MATH_FP8], round(1273.0 / 2614.9 * 100) / 100, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(m.memory_efficiency, round(4.13 / 5.3 * 100) / 100, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(m.bus_efficiency, round(316.82 / 448 * 100) / 100, 1e-12);
    /* no spec before it is a mesh */
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &m), APPROF_OK);
    CU_ASSERT_EQUAL(m.intra_host_full_mesh, 0);
}

/* One host: a group of g reaches the others over g - 1 links. */
static void test_inside_host(void)
{
    CostdbFabric mesh = mi300x_fabric(1), sw = mi300x_fabric(0);
    double bytes = GIB, t_mesh, t_sw;
    /* the bandwidth a group gets: a pair one link, 4 GPUs three, 8 all */
    CU_ASSERT(REL(costdb_fabric_bandwidth(&mesh, 2, 1, 0), 64 * GB * 0.8));
    CU_ASSERT(REL(costdb_fabric_bandwidth(&mesh, 4, 1, 0), 3 * 64 * GB * 0.8));
    CU_ASSERT(REL(costdb_fabric_bandwidth(&mesh, 8, 1, 0), 448 * GB * 0.8));
    CU_ASSERT(REL(costdb_fabric_bandwidth(&sw, 2, 1, 0), 448 * GB * 0.8));
    CU_ASSERT(REL(costdb_intra_bandwidth(&mesh, 1), 64 * GB)); /* clamped to a pair */
    CU_ASSERT(REL(costdb_intra_bandwidth(&mesh, 99), 448 * GB));
    /* a pipeline send between two GPUs of the host: one link */
    t_mesh = costdb_collective_seconds(&mesh, COSTDB_COLL_SEND_RECV, bytes, 2, 1, 0);
    t_sw = costdb_collective_seconds(&sw, COSTDB_COLL_SEND_RECV, bytes, 2, 1, 0);
    CU_ASSERT(REL(t_mesh, bytes / (64 * GB * 0.8) + 3.4e-6));
    CU_ASSERT(REL(t_sw, bytes / (448 * GB * 0.8) + 3.4e-6));
    /* the stage-to-stage send of the solver's full estimate, inside the host */
    CU_ASSERT(REL(costdb_domain_collective_seconds(&mesh, COSTDB_COLL_SEND_RECV, bytes, 2, 1),
                  t_mesh));
    /* a tensor-parallel pair's all-reduce (NCCL's tuning model): the
     * bandwidth term is 7x, so the whole well above 5x */
    t_mesh = costdb_collective_seconds(&mesh, COSTDB_COLL_ALL_REDUCE, bytes, 2, 1, 0);
    t_sw = costdb_collective_seconds(&sw, COSTDB_COLL_ALL_REDUCE, bytes, 2, 1, 0);
    CU_ASSERT(t_sw > 0 && t_mesh > 5 * t_sw);
    /* all 8 GPUs use all 7 links: the mesh prices like the switch */
    t_mesh = costdb_collective_seconds(&mesh, COSTDB_COLL_ALL_REDUCE, bytes, 8, 1, 0);
    t_sw = costdb_collective_seconds(&sw, COSTDB_COLL_ALL_REDUCE, bytes, 8, 1, 0);
    CU_ASSERT(REL(t_mesh, t_sw));
}

/* Across hosts the ring of a group with g GPUs a host also crosses the
 * mesh: 2 a host share 2 of the 8 adapters (100 GB/s) but their xGMI hop
 * is one link (64 GB/s). */
static void test_across_hosts(void)
{
    CostdbFabric mesh = mi300x_fabric(1), sw = mi300x_fabric(0);
    CU_ASSERT(REL(costdb_fabric_bandwidth(&mesh, 4, 2, 1), 64 * GB * 0.8));
    CU_ASSERT(REL(costdb_fabric_bandwidth(&sw, 4, 2, 1), 100 * GB * 0.8));
    /* one GPU a host: no intra-host hop, one adapter each */
    CU_ASSERT(REL(costdb_fabric_bandwidth(&mesh, 2, 2, 1), 50 * GB * 0.8));
    /* 8 a host: all adapters, the mesh has all its links */
    CU_ASSERT(REL(costdb_fabric_bandwidth(&mesh, 16, 2, 1), 400 * GB * 0.8));
}

/* The profiler's price (the spec) and the solver's (the stored row) agree. */
static void test_costdb_row(void)
{
    ApprofHardwareSpec m, s;
    CostdbHardware row;
    CostdbFabric f;
    char fp1[128], fp2[128];
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("mi300x", &m), APPROF_OK);
    CU_ASSERT(REL(approf_link_bandwidth(&m, 2, 1, 0), 64 * GB * m.bus_efficiency));
    s = m;
    s.intra_host_full_mesh = 0;
    CU_ASSERT(REL(approf_link_bandwidth(&s, 2, 1, 0), 448 * GB * m.bus_efficiency));
    CU_ASSERT(approf_collective_seconds(&m, APPROF_COLL_ALL_REDUCE, GIB, 2, 0) >
              5 * approf_collective_seconds(&s, APPROF_COLL_ALL_REDUCE, GIB, 2, 0));
    /* part of the fingerprint */
    approf_hardware_fingerprint(&m, fp1, sizeof fp1);
    approf_hardware_fingerprint(&s, fp2, sizeof fp2);
    CU_ASSERT_STRING_NOT_EQUAL(fp1, fp2);
    /* the stored row carries it; the solver's fabric reads it */
    approf_hardware_to_costdb(&m, &row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row.capabilities, "\"intra_host_full_mesh\": 1"));
    costdb_fabric_from_hardware(&row, &f);
    CU_ASSERT_EQUAL(f.intra_full_mesh, 1);
    CU_ASSERT(REL(costdb_fabric_bandwidth(&f, 2, 1, 0), approf_link_bandwidth(&m, 2, 1, 0)));
    CU_ASSERT(REL(costdb_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, GIB, 2, 1, 0),
                  approf_collective_seconds(&m, APPROF_COLL_ALL_REDUCE, GIB, 2, 0)));
    /* a value that is not 1 reads as a switch */
    snprintf(row.capabilities, sizeof row.capabilities, "{\"intra_host_full_mesh\": 0.5}");
    costdb_fabric_from_hardware(&row, &f);
    CU_ASSERT_EQUAL(f.intra_full_mesh, 0);
}

#define BASE                                                                                  \
    "name = mesh\npeak_tflops_f32 = 163.4\npeak_tflops_f16 = 1307.4\n"                       \
    "peak_tflops_bf16 = 1307.4\nmemory_gib = 192\nmemory_bandwidth_gbs = 5300\n"            \
    "gpus_per_host = 8\nintra_host_bandwidth_gbs = 448\ninter_host_bandwidth_gbs = 50\n"

static void test_spec_file(void)
{
    ApprofHardwareSpec hw, back;
    char err[512] = "", fp1[128], fp2[128];
    const char *p;
    hw_fixture_refused(BASE "intra_host_full_mesh = 2\n", 10, "field 'intra_host_full_mesh': ");
    hw_fixture_refused(BASE "intra_host_full_mesh = yes\n", 10,
                       "field 'intra_host_full_mesh': 'yes' is not a number");
    hw_fixture_refused(BASE "intra_host_full_mesh = 1\nscaleup_domain_gpus = 16\n", 10,
                       "field 'intra_host_full_mesh': a full mesh of the host's GPUs cannot "
                       "span a scale-up domain of 16 GPUs");
    p = hw_fixture_tmp(BASE "intra_host_full_mesh = 1\n");
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(hw.intra_host_full_mesh, 1);
    p = hw_fixture_tmp(BASE);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(back.intra_host_full_mesh, 0);
    /* the built-in written out and read back: the same spec */
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("mi300x", &hw), APPROF_OK);
    CU_ASSERT_EQUAL_FATAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(back.intra_host_full_mesh, 1);
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    approf_hardware_fingerprint(&back, fp2, sizeof fp2);
    CU_ASSERT_STRING_EQUAL(fp1, fp2);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"MI300X spec", test_spec},
        {"inside one mesh host", test_inside_host},
        {"across hosts", test_across_hosts},
        {"the stored row", test_costdb_row},
        {"spec file", test_spec_file},
    };
    int rc = CUNIT_RUN("mesh", tests);
    hw_fixture_tmp_remove();
    return rc;
}
