/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of profiler/hw: the built-in specs, spec files (good and every
 * kind of bad input with its line and field), the ring collective formulas
 * against hand-computed values, the roofline, the measured-curve
 * interpolation, fingerprints, the analytic backend (costs, OOM,
 * determinism) and the stage-program utilities.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "backend.h"
#include "costdb.h"
#include "hardware.h"
#include "stage.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define GIB 1073741824.0

/* A spec with round numbers for hand computation. */
static ApprofHardwareSpec plain_spec(void)
{
    ApprofHardwareSpec hw;
    memset(&hw, 0, sizeof hw);
    snprintf(hw.name, sizeof hw.name, "plain");
    hw.peak_flops[APPROF_F32] = 10e12;
    hw.peak_flops[APPROF_F16] = 100e12;
    hw.peak_flops[APPROF_BF16] = 50e12;
    hw.memory_bandwidth = 1000e9;
    hw.device_memory = (int64_t)(16 * GIB);
    hw.memory_reserve = (int64_t)GIB;
    hw.gpus_per_host = 8;
    hw.intra_host_bandwidth = 300e9;
    hw.intra_host_latency = 0;
    hw.inter_host_bandwidth = 25e9;
    hw.inter_host_latency = 0;
    hw.gemm_efficiency = 0.5;
    hw.conv_efficiency = 0.25;
    hw.memory_efficiency = 0.8;
    hw.kernel_launch_overhead = 0;
    return hw;
}

/* ---- built-ins ------------------------------------------------------------ */

static void test_builtins(void)
{
    static const char *want[] = {"gtx-1080ti", "v100-16g", "v100-32g", "a100-40g",
                                 "a100-80g", "h100-sxm", "h200", "b200", "gb200-nvl72",
                                 "mi300x"};
    size_t n = 0;
    const ApprofHardwareSpec *tab = approf_hardware_builtins(&n);
    CU_ASSERT_EQUAL_FATAL(n, 10);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ApprofHardwareSpec hw, back;
        char err[512], fp1[128], fp2[128];
        CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin(want[i], &hw), APPROF_OK);
        CU_ASSERT_STRING_EQUAL(hw.name, want[i]);
        CU_ASSERT_STRING_EQUAL(tab[i].name, want[i]);
        for (int d = 0; d < 3; d++)
            CU_ASSERT(hw.peak_flops[d] >= 1e12);
        CU_ASSERT(hw.memory_bandwidth > 1e11);
        CU_ASSERT(hw.device_memory >= (int64_t)(11 * GIB));
        CU_ASSERT_EQUAL(hw.memory_reserve, (int64_t)GIB);
        CU_ASSERT_EQUAL(approf_hardware_available_memory(&hw), hw.device_memory - (int64_t)GIB);
        CU_ASSERT(hw.intra_host_bandwidth > hw.inter_host_bandwidth);
        CU_ASSERT(hw.gemm_efficiency > 0 && hw.gemm_efficiency <= 1);
        CU_ASSERT(hw.conv_efficiency > 0 && hw.conv_efficiency <= 1);
        CU_ASSERT(hw.memory_efficiency > 0 && hw.memory_efficiency <= 1);
        CU_ASSERT(strlen(hw.source) > 100 && strlen(hw.source) < sizeof hw.source);
        CU_ASSERT(strlen(hw.gpu_model) > 0);
        /* written out and read back: same spec, same fingerprint */
        CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
        approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
        approf_hardware_fingerprint(&back, fp2, sizeof fp2);
        CU_ASSERT_STRING_EQUAL(fp1, fp2);
        CU_ASSERT_EQUAL(back.device_memory, hw.device_memory);
        CU_ASSERT_EQUAL(back.gpus_per_host, hw.gpus_per_host);
        CU_ASSERT_STRING_EQUAL(back.source, hw.source);
        CU_ASSERT_STRING_EQUAL(back.gpu_model, hw.gpu_model);
    }
    /* figures from the datasheets */
    {
        ApprofHardwareSpec a;
        CU_ASSERT_EQUAL(approf_hardware_builtin("a100-40g", &a), APPROF_OK);
        CU_ASSERT_DOUBLE_EQUAL(a.peak_flops[APPROF_F16], 312e12, 1);
        CU_ASSERT_DOUBLE_EQUAL(a.memory_bandwidth, 1555e9, 1);
        CU_ASSERT_EQUAL(a.device_memory, (int64_t)40 << 30);
        CU_ASSERT_DOUBLE_EQUAL(a.intra_host_bandwidth, 300e9, 1);
        CU_ASSERT_EQUAL(approf_hardware_builtin("gtx-1080ti", &a), APPROF_OK);
        CU_ASSERT_EQUAL(a.gpus_per_host, 2);
        CU_ASSERT_DOUBLE_EQUAL(a.peak_flops[APPROF_BF16], a.peak_flops[APPROF_F32], 0);
        CU_ASSERT_EQUAL(approf_hardware_builtin("v100-16g", &a), APPROF_OK);
        CU_ASSERT_DOUBLE_EQUAL(a.peak_flops[APPROF_BF16], a.peak_flops[APPROF_F32], 0);
        CU_ASSERT_DOUBLE_EQUAL(a.peak_flops[APPROF_F16], 125e12, 1);
    }
    {
        ApprofHardwareSpec x;
        CU_ASSERT_EQUAL(approf_hardware_builtin("a100", &x), APPROF_EINVAL);
        CU_ASSERT_EQUAL(approf_hardware_builtin(NULL, &x), APPROF_EINVAL);
    }
}

/* ---- collectives ------------------------------------------------------------ */

static void test_collectives(void)
{
    ApprofHardwareSpec hw = plain_spec(), a100;
    double b = GIB;
    /* all-reduce of 1 GiB on 8 GPUs at 300 GB/s: 2*7/8 * 2^30 / 3e11, plus
     * the base latency of NCCL's Simple ring, 8.4 us (docs/nccl-tuning.md;
     * this spec's links have no per-step latency) */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&hw, APPROF_COLL_ALL_REDUCE, b, 8, 0),
                           1879048192.0 / 300e9 + 8.4e-6, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(1879048192.0 / 300e9, 0.00626349397333333, 1e-15);
    /* all-gather / reduce-scatter of 1 GiB over 4 GPUs across hosts at 25 GB/s */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&hw, APPROF_COLL_ALL_GATHER, b, 4, 1),
                           805306368.0 / 25e9 + 8.4e-6, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&hw, APPROF_COLL_REDUCE_SCATTER, b, 4, 1),
                           805306368.0 / 25e9 + 8.4e-6, 1e-15);
    /* all-to-all: (n-1)/n^2 = 7/64 of 1 GiB */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&hw, APPROF_COLL_ALL_TO_ALL, b, 8, 0),
                           117440512.0 / 300e9, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&hw, APPROF_COLL_SEND_RECV, 1e9, 2, 1),
                           0.04, 1e-15);
    /* n == 1, bytes == 0 and nonsense group sizes cost nothing */
    for (int k = 0; k < APPROF_COLL_KIND_COUNT; k++) {
        CU_ASSERT_EQUAL(approf_collective_seconds(&hw, (ApprofCollKind)k, b, 1, 0), 0.0);
        CU_ASSERT_EQUAL(approf_collective_seconds(&hw, (ApprofCollKind)k, b, 1, 1), 0.0);
        CU_ASSERT_EQUAL(approf_collective_seconds(&hw, (ApprofCollKind)k, 0, 8, 0), 0.0);
        CU_ASSERT_EQUAL(approf_collective_seconds(&hw, (ApprofCollKind)k, b, 0, 0), 0.0);
    }
    /* latency terms on a built-in, as NCCL's tuning model prices them
     * (docs/nccl-tuning.md): the ring in Simple, NCCL's base latency 8.4 us
     * plus NVLink's 3.4 us per step, 2(n-1) steps */
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("a100-40g", &a100), APPROF_OK);
    /* the plain ring on nominal links (achievable bandwidth and multi-rail
     * hosts: test_calibration.c) */
    a100.bus_efficiency = 0;
    a100.nics_per_host = 0;
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&a100, APPROF_COLL_ALL_REDUCE, b, 8, 0),
                           1879048192.0 / 300e9 + (8.4 + 14 * 3.4) * 1e-6, 1e-12);
    /* inter-host, one GPU a host (hosts unknown): 25 GB/s, 9.6 us per
     * step, n-1 steps, all of them between hosts */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&a100, APPROF_COLL_ALL_GATHER, b, 16, 1),
                           15.0 / 16.0 * GIB / 25e9 + (8.4 + 15 * 9.6) * 1e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&a100, APPROF_COLL_SEND_RECV, 1e6, 2, 0),
                           1e6 / 300e9 + 3.4e-6, 1e-12);
    /* the small-message regime is latency bound: NCCL's tree in LL, 6.8 us
     * + 2 x log2(8 hosts) x 5 us, 0.92 / 3.8 of the bus bandwidth, halved */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds(&a100, APPROF_COLL_ALL_REDUCE, 8, 8, 1),
                           (6.8 + 2 * 3 * 5.0) * 1e-6 + 8 / (25e9 * 0.92 / 3.8 * 0.5), 1e-15);
}

/* ---- roofline ---------------------------------------------------------------- */

static void test_roofline(void)
{
    ApprofHardwareSpec hw = plain_spec();
    ApprofKernel k;
    memset(&k, 0, sizeof k);
    /* big GEMM, f16: 2*4096^3 FLOP at 100 TFLOP/s * 0.5; 96 MiB at 800 GB/s */
    k.kind = APPROF_K_GEMM;
    k.dtype = APPROF_F16;
    k.flops = 2.0 * 4096 * 4096 * 4096;
    k.bytes = 3.0 * 4096 * 4096 * 2;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), k.flops / 50e12, 1e-15);
    CU_ASSERT(k.flops / 50e12 > k.bytes / 800e9); /* compute bound indeed */
    /* the same on f32 and bf16 peaks */
    k.dtype = APPROF_F32;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), k.flops / 5e12, 1e-15);
    k.dtype = APPROF_BF16;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), k.flops / 25e12, 1e-15);
    /* GEMV: 2*4096^2 FLOP, 32 MiB: memory bound */
    k.dtype = APPROF_F16;
    k.flops = 2.0 * 4096 * 4096;
    k.bytes = 4096.0 * 4096 * 2;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), k.bytes / 800e9, 1e-15);
    CU_ASSERT(k.bytes / 800e9 > k.flops / 50e12);
    /* convolution uses conv_efficiency (0.25) */
    k.kind = APPROF_K_CONV_BWD_FILTER;
    k.flops = 1e12;
    k.bytes = 1e6;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), 1e12 / 25e12, 1e-15);
    /* memory-bound kinds ignore their flops entirely */
    k.kind = APPROF_K_ELEMENTWISE;
    k.flops = 1e15;
    k.bytes = 8e9;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), 0.01, 1e-15);
    k.kind = APPROF_K_REDUCTION;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), 0.01, 1e-15);
    /* launch overhead is added to every kernel, even an empty one */
    hw.kernel_launch_overhead = 4e-6;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), 0.01 + 4e-6, 1e-15);
    k.kind = APPROF_K_GEMM;
    k.flops = 0;
    k.bytes = 0;
    CU_ASSERT_DOUBLE_EQUAL(approf_kernel_seconds(&hw, &k), 4e-6, 1e-18);
}

/* ---- spec files ----------------------------------------------------------------- */

static const char *good_spec =
    "# my cluster\n"
    "name = lab-a100\n"
    "gpu_model = \"NVIDIA A100 #7\"   # quoted keeps the '#'\n"
    "peak_tflops_f32 = 19.5\n"
    "peak_tflops_f16 = 312\n"
    "peak_tflops_bf16 = 312\n"
    "\n"
    "memory_gib = 40\n"
    "memory_bandwidth_gbs = 1555   # HBM2\n"
    "gpus_per_host = 4\n"
    "intra_host_bandwidth_gbs = 300\n"
    "inter_host_bandwidth_gbs = 12.5\n"
    "inter_host_latency_us = 8\n"
    "gemm_efficiency = 0.8\n";

static void test_spec_file_ok(void)
{
    ApprofHardwareSpec hw;
    char err[512] = "";
    const char *p = hw_fixture_tmp(good_spec);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_STRING_EQUAL(err, "");
    CU_ASSERT_STRING_EQUAL(hw.name, "lab-a100");
    CU_ASSERT_STRING_EQUAL(hw.gpu_model, "NVIDIA A100 #7");
    CU_ASSERT_DOUBLE_EQUAL(hw.peak_flops[APPROF_F16], 312e12, 1e-3);
    CU_ASSERT_DOUBLE_EQUAL(hw.peak_flops[APPROF_F32], 19.5e12, 1e-3);
    CU_ASSERT_EQUAL(hw.device_memory, (int64_t)40 << 30);
    CU_ASSERT_DOUBLE_EQUAL(hw.memory_bandwidth, 1555e9, 1e-3);
    CU_ASSERT_EQUAL(hw.gpus_per_host, 4);
    CU_ASSERT_DOUBLE_EQUAL(hw.inter_host_bandwidth, 12.5e9, 1e-3);
    CU_ASSERT_DOUBLE_EQUAL(hw.inter_host_latency, 8e-6, 1e-18);
    CU_ASSERT_DOUBLE_EQUAL(hw.gemm_efficiency, 0.8, 0);
    /* defaults of the optional fields (schemas/hardware-spec.md) */
    CU_ASSERT_EQUAL(hw.memory_reserve, (int64_t)1 << 30);
    CU_ASSERT_DOUBLE_EQUAL(hw.intra_host_latency, 5e-6, 1e-18);
    CU_ASSERT_DOUBLE_EQUAL(hw.conv_efficiency, 0.6, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw.memory_efficiency, 0.8, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw.kernel_launch_overhead, 4e-6, 1e-18);
    CU_ASSERT_STRING_EQUAL(hw.interconnect, "");
    CU_ASSERT(strstr(hw.source, "user spec file") != NULL);
    /* resolve: a path that is not a built-in name loads the file */
    memset(&hw, 0, sizeof hw);
    CU_ASSERT_EQUAL(approf_hardware_resolve(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_STRING_EQUAL(hw.name, "lab-a100");
    CU_ASSERT_EQUAL(approf_hardware_resolve("h100-sxm", &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_STRING_EQUAL(hw.name, "h100-sxm");
    CU_ASSERT_EQUAL(approf_hardware_resolve("/nonexistent/x.spec", &hw, err, sizeof err),
                    APPROF_EINVAL);
    CU_ASSERT(strstr(err, "'/nonexistent/x.spec'") != NULL);
    CU_ASSERT(strstr(err, "gtx-1080ti, v100-16g, v100-32g, a100-40g, a100-80g, h100-sxm, h200, b200, "
                     "gb200-nvl72") != NULL);
    hw_fixture_tmp_remove();
}

typedef struct BadCase {
    const char *text;
    int line;
    const char *expect; /* after "FILE:LINE: " */
} BadCase;

#define REQ "name = x\npeak_tflops_f32 = 1\npeak_tflops_f16 = 2\npeak_tflops_bf16 = 2\n" \
            "memory_gib = 16\nmemory_bandwidth_gbs = 900\ngpus_per_host = 8\n"         \
            "intra_host_bandwidth_gbs = 150\ninter_host_bandwidth_gbs = 12\n"

static void test_spec_file_bad(void)
{
    static const BadCase cases[] = {
        {REQ "peak_tflop = 3\n", 10, "field 'peak_tflop': unknown field"},
        {REQ "memory_gib = 32\n", 10, "field 'memory_gib': given twice (first on line 5)"},
        {"name = x\npeak_tflops_f32 = 1\n", 2, "field 'peak_tflops_f16': missing (required)"},
        {REQ "gemm_efficiency = fast\n", 10, "field 'gemm_efficiency': 'fast' is not a number"},
        {"name = x\nmemory_gib = 40GB\n", 2, "field 'memory_gib': '40GB' is not a number of GiB"},
        {"name = x\nmemory_gib = -4\n", 2, "field 'memory_gib': must be > 0 (got -4)"},
        {"name = x\nmemory_bandwidth_gbs = 0\n", 2, "field 'memory_bandwidth_gbs': must be > 0"},
        {"name = x\npeak_tflops_f16 = 1e9\n", 2, "field 'peak_tflops_f16': 1e+09 is absurd"},
        /* positive but absurdly small: accepted, then every entry failed */
        {"name = x\npeak_tflops_f32 = 1e-300\n", 2,
         "field 'peak_tflops_f32': 1e-300 is absurd (at least 0.1 TFLOP/s)"},
        {"name = x\ninter_host_bandwidth_gbs = 1e-200\n", 2,
         "field 'inter_host_bandwidth_gbs': 1e-200 is absurd (at least 0.1 GB/s)"},
        {REQ "gemm_efficiency_fp32 = 1e-9\n", 10,
         "field 'gemm_efficiency_fp32': 1e-09 is absurd (at least 1e-06)"},
        {REQ "peak_tflops_fp8 = 1e-300\n", 10, "field 'peak_tflops_fp8': 1e-300 is absurd"},
        {"name = x\npeak_tflops_f16 = inf\n", 2, "field 'peak_tflops_f16': 'inf' is not a finite number"},
        {"name = x\ngpus_per_host = 2.5\n", 2, "field 'gpus_per_host': '2.5' is not a whole number"},
        {"name = x\ngpus_per_host = 0\n", 2, "field 'gpus_per_host': must be >= 1"},
        {REQ "conv_efficiency = 1.5\n", 10, "field 'conv_efficiency': 1.5 is absurd"},
        {REQ "intra_host_latency_us = -1\n", 10, "field 'intra_host_latency_us': must be >= 0"},
        {REQ "memory_reserve_gib = 16\n", 10, "field 'memory_reserve_gib': must be smaller than memory_gib"},
        {"name = \n", 1, "field 'name': empty value"},
        {"name = my gpu\n", 1, "field 'name': 'my gpu' is not a valid name"},
        {"# c\n\nthis line is wrong\n", 3, "expected 'key = value'"},
        {"", 1, "field 'name': missing (required)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ApprofHardwareSpec hw;
        char err[512] = "", want[512];
        const char *p = hw_fixture_tmp(cases[i].text);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_EPARSE);
        snprintf(want, sizeof want, "%s:%d: %s", p, cases[i].line, cases[i].expect);
        if (strncmp(err, want, strlen(want)) != 0) {
            fprintf(stderr, "\ncase %zu: got  '%s'\n         want '%s...'\n", i, err, want);
            CU_FAIL("wrong error message");
        }
        /* the same through resolve */
        CU_ASSERT_EQUAL(approf_hardware_resolve(p, &hw, err, sizeof err), APPROF_EPARSE);
        CU_ASSERT(strncmp(err, want, strlen(want)) == 0);
    }
    {
        char err[512] = "";
        ApprofHardwareSpec hw;
        CU_ASSERT_EQUAL(approf_hardware_load("/nonexistent/x.spec", &hw, err, sizeof err),
                        APPROF_EIO);
        CU_ASSERT(strncmp(err, "/nonexistent/x.spec: cannot open", 32) == 0);
    }
    hw_fixture_tmp_remove();
}

/* ---- fingerprint and costdb row -------------------------------------------------- */

static void test_costdb_row(void)
{
    ApprofHardwareSpec hw, other;
    CostdbHardware row, row2;
    char fp[128];
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("a100-40g", &hw), APPROF_OK);
    approf_hardware_to_costdb(&hw, &row);
    CU_ASSERT_STRING_EQUAL(row.kind, "analytic");
    CU_ASSERT_STRING_EQUAL(row.spec_name, "a100-40g");
    CU_ASSERT(strncmp(row.fingerprint, "analytic:a100-40g:", 18) == 0);
    CU_ASSERT_EQUAL(strlen(row.fingerprint), 18 + 12);
    approf_hardware_fingerprint(&hw, fp, sizeof fp);
    CU_ASSERT_STRING_EQUAL(fp, row.fingerprint);
    CU_ASSERT_EQUAL(row.gpus_per_host, 8);
    CU_ASSERT_EQUAL(row.device_memory, hw.device_memory);
    CU_ASSERT_DOUBLE_EQUAL(row.peak_flops_bf16, 312e12, 1);
    CU_ASSERT_DOUBLE_EQUAL(row.inter_host_latency, hw.inter_host_latency, 0);
    CU_ASSERT(strstr(row.capabilities, "\"gemm_efficiency\": 0.75") != NULL);
    CU_ASSERT(strstr(row.capabilities, "\"memory_reserve\": 1073741824") != NULL);
    CU_ASSERT(strstr(row.capabilities, "A100 Tensor Core GPU datasheet") != NULL);
    CU_ASSERT_EQUAL(row.capabilities[strlen(row.capabilities) - 1], '}');
    /* equal spec, equal fingerprint; any changed number changes it */
    approf_hardware_to_costdb(&hw, &row2);
    CU_ASSERT_STRING_EQUAL(row.fingerprint, row2.fingerprint);
    other = hw;
    other.inter_host_latency *= 2;
    approf_hardware_to_costdb(&other, &row2);
    CU_ASSERT_STRING_NOT_EQUAL(row.fingerprint, row2.fingerprint);
    other = hw;
    other.memory_efficiency = 0.9;
    approf_hardware_to_costdb(&other, &row2);
    CU_ASSERT_STRING_NOT_EQUAL(row.fingerprint, row2.fingerprint);
    other = hw;
    other.gpus_per_host = 4;
    approf_hardware_to_costdb(&other, &row2);
    CU_ASSERT_STRING_NOT_EQUAL(row.fingerprint, row2.fingerprint);
    /* the source text is not a number: editing it keeps the fingerprint */
    other = hw;
    snprintf(other.source, sizeof other.source, "elsewhere \"quoted\"");
    approf_hardware_to_costdb(&other, &row2);
    CU_ASSERT_STRING_EQUAL(row.fingerprint, row2.fingerprint);
    CU_ASSERT(strstr(row2.capabilities, "\"source\": \"elsewhere \\\"quoted\\\"\"}") != NULL);
}

/* ---- curves ---------------------------------------------------------------------- */

static CostdbCommPoint pt(int64_t bytes, double s)
{
    CostdbCommPoint p;
    memset(&p, 0, sizeof p);
    snprintf(p.collective, sizeof p.collective, "all-reduce");
    p.bytes = bytes;
    p.seconds = s;
    return p;
}

static void test_curve(void)
{
    CostdbCommPoint c[3] = {pt(1024, 1e-5), pt(1 << 20, 1e-4), pt(16 << 20, 1e-3)};
    CostdbCommPoint one[1] = {pt(1 << 20, 2e-4)};
    CostdbCommPoint falling[2] = {pt(1 << 20, 2e-4), pt(2 << 20, 1e-4)};
    CU_ASSERT_EQUAL(approf_collective_seconds_curve(NULL, 0, 1e6), 0.0);
    CU_ASSERT_EQUAL(approf_collective_seconds_curve(c, 0, 1e6), 0.0);
    CU_ASSERT_EQUAL(approf_collective_seconds_curve(c, 3, 0), 0.0);
    /* below the first point: its time */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(c, 3, 10), 1e-5, 0);
    /* at the points */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(c, 3, 1024), 1e-5, 0);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(c, 3, 1 << 20), 1e-4, 1e-18);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(c, 3, 16 << 20), 1e-3, 1e-18);
    /* halfway between 1 MiB and 16 MiB (8.5 MiB): halfway in time */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(c, 3, 8.5 * (1 << 20)), 5.5e-4, 1e-15);
    /* a quarter of the way between 1 KiB and 1 MiB */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(c, 3, 1024 + 0.25 * (1048576 - 1024)),
                           1e-5 + 0.25 * 9e-5, 1e-15);
    /* beyond: slope of the last two, 9e-4 s per 15 MiB; 31 MiB -> +16 MiB */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(c, 3, 31.0 * (1 << 20)),
                           1e-3 + 9e-4, 1e-15);
    /* one point: proportional */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(one, 1, 4 << 20), 8e-4, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(one, 1, 1024), 2e-4, 0);
    /* a falling tail never extrapolates below its last time */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_seconds_curve(falling, 2, 8 << 20), 1e-4, 0);
}

static CostdbCommPoint gpt_(const char *coll, const char *group, const char *dtype, int64_t bytes,
                            double s)
{
    CostdbCommPoint p = pt(bytes, s);
    snprintf(p.collective, sizeof p.collective, "%s", coll);
    snprintf(p.group_desc, sizeof p.group_desc, "%s", group);
    snprintf(p.dtype, sizeof p.dtype, "%s", dtype);
    return p;
}

/* Curves hung on a spec replace the alpha-beta model exactly where they
 * cover a (collective, group), and nowhere else. */
static ApprofCollective mkcoll(ApprofCollKind kind, int group, int hosts, double bytes)
{
    ApprofCollective c = hw_fixture_coll(kind, bytes, group, hosts);
    c.axes = APPROF_AXIS0;
    return c;
}

/* Curves hung on a spec replace the alpha-beta model exactly where they
 * cover a (collective, group shape), and nowhere else. */
static void test_curves_on_spec(void)
{
    ApprofHardwareSpec hw = plain_spec();
    CostdbCommPoint pts[] = {
        /* given out of order, with a second dtype and two points to ignore */
        gpt_("all-reduce", "1x4", "f32", 1 << 20, 2e-3),
        gpt_("all-reduce", "1x4", "f32", 1024, 1e-3),
        gpt_("all-reduce", "1x4", "f16", 1024, 7.0),
        gpt_("all-reduce", "1x4", "f16", 1 << 20, 7.0),
        gpt_("all-gather", "2x4", "f32", 1 << 20, 5e-3),
        gpt_("broadcast", "1x4", "f32", 1 << 20, 9.0),
        gpt_("all-reduce", "[[0,1],[2,3]]", "f32", 1 << 20, 9.0),
    };
    ApprofCommCurves *c = NULL, *c16 = NULL;
    ApprofCollective x;
    size_t np = 0;
    char h1[32], h2[32];

    CU_ASSERT_EQUAL(approf_comm_curves_new(pts, 7, "f32", &c), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(approf_comm_curves_count(c, &np), 2);
    CU_ASSERT_EQUAL(np, 3);
    /* without curves: exactly the alpha-beta model */
    x = mkcoll(APPROF_COLL_ALL_REDUCE, 4, 1, 1024);
    CU_ASSERT_EQUAL(approf_collective_cost(&hw, &x),
                    approf_collective_seconds(&hw, x.kind, x.bytes, 4, 0));
    hw.curves = c;
    /* covered: interpolated in the f32 curve */
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_cost(&hw, &x), 1e-3, 0);
    x.bytes = 1024 + 0.5 * (1048576 - 1024);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_cost(&hw, &x), 1.5e-3, 1e-15);
    /* another group size: the alpha-beta model */
    x = mkcoll(APPROF_COLL_ALL_REDUCE, 2, 1, 1 << 20);
    CU_ASSERT_EQUAL(approf_collective_cost(&hw, &x),
                    approf_collective_seconds(&hw, x.kind, x.bytes, 2, 0));
    /* across hosts: 2 hosts x 4 */
    x = mkcoll(APPROF_COLL_ALL_GATHER, 8, 2, 1 << 20);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_cost(&hw, &x), 5e-3, 0);
    /* the same 8 devices as 4 hosts x 2, or on one host, or of unknown shape:
     * not that curve */
    x.hosts = 4;
    {
        /* the model, which reads the 4 hosts (NCCL's ring latency) */
        ApprofHardwareSpec bare = hw;
        bare.curves = NULL;
        CU_ASSERT_EQUAL(approf_collective_cost(&hw, &x), approf_collective_cost(&bare, &x));
        CU_ASSERT(approf_collective_cost(&hw, &x) != 5e-3);
    }
    x.hosts = 0;
    CU_ASSERT_EQUAL(approf_collective_cost(&hw, &x),
                    approf_collective_seconds(&hw, x.kind, x.bytes, 8, 1));
    x = mkcoll(APPROF_COLL_ALL_GATHER, 8, 1, 1 << 20);
    CU_ASSERT_EQUAL(approf_collective_cost(&hw, &x),
                    approf_collective_seconds(&hw, x.kind, x.bytes, 8, 0));
    /* trivial collectives cost nothing, curves or not */
    x = mkcoll(APPROF_COLL_ALL_REDUCE, 1, 1, 1024);
    CU_ASSERT_EQUAL(approf_collective_cost(&hw, &x), 0.0);
    x = mkcoll(APPROF_COLL_ALL_REDUCE, 4, 1, 0);
    CU_ASSERT_EQUAL(approf_collective_cost(&hw, &x), 0.0);
    /* preferring f16 picks the other curve; the hash tells them apart */
    CU_ASSERT_EQUAL(approf_comm_curves_new(pts, 7, "f16", &c16), 0);
    hw.curves = c16;
    x = mkcoll(APPROF_COLL_ALL_REDUCE, 4, 1, 4096);
    CU_ASSERT_DOUBLE_EQUAL(approf_collective_cost(&hw, &x), 7.0, 0);
    approf_comm_curves_hash(c, h1, sizeof h1);
    approf_comm_curves_hash(c16, h2, sizeof h2);
    CU_ASSERT_EQUAL(strlen(h1), 16);
    CU_ASSERT_STRING_NOT_EQUAL(h1, h2);
    /* nothing usable: no curves at all */
    approf_comm_curves_free(&c16);
    CU_ASSERT_EQUAL(approf_comm_curves_new(pts + 5, 2, NULL, &c16), 0);
    CU_ASSERT_PTR_NULL(c16);
    CU_ASSERT_EQUAL(approf_comm_curves_new(NULL, 0, NULL, &c16), 0);
    CU_ASSERT_PTR_NULL(c16);
    CU_ASSERT(approf_comm_curves_seconds(NULL, APPROF_COLL_ALL_REDUCE, 1, 4, 1024) < 0);
    approf_comm_curves_free(&c);
    CU_ASSERT_PTR_NULL(c);
}

static int parse_text(const char *text, const char *coll, const char *group,
                      CostdbCommPoint **pts, size_t *n, char *err, size_t errlen)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    int rc;
    if (!f)
        return -100;
    rc = approf_nccl_tests_parse(f, "t.log", coll, group, pts, n, err, errlen);
    fclose(f);
    return rc;
}

#define NT_HEAD                                                                             \
    "# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5\n"    \
    "#\n# Using devices\n"                                                                  \
    "#  Rank  0 Group  0 Pid  100 on      hostA device  0 [0x07] NVIDIA H100 80GB HBM3\n"  \
    "#  Rank  1 Group  0 Pid  101 on      hostA device  1 [0x08] NVIDIA H100 80GB HBM3\n"  \
    "#  Rank  2 Group  0 Pid  200 on      hostB device  0 [0x07] NVIDIA H100 80GB HBM3\n"  \
    "#  Rank  3 Group  0 Pid  201 on      hostB device  1 [0x08] NVIDIA H100 80GB HBM3\n"  \
    "#\n"
#define NT_COLS                                                                                 \
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     " \
    "time   algbw   busbw #wrong\n"                                                             \
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            " \
    "(us)  (GB/s)  (GB/s)\n"

static void test_nccl_tests(void)
{
    const char *ok = NT_HEAD "# Collective test starting: all_gather_perf\n" NT_COLS
        "        1024           64     float    none      -1    20.50    0.05    0.04      0    20.10    0.05    0.04      0\n"
        "        2048          128     float    none      -1    21.00    0.10    0.07    N/A    20.90    0.10    0.07    N/A\n"
        "        4096          256     float    none      -1    22.00    0.19    0.14      0    21.90    0.19    0.14      0\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.08\n";
    /* older layout without the root column, collective and group given */
    const char *old =
        "#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "        8192         2048      half     sum    40.00    0.20    0.35  0e+00    39.00    0.21    0.36  0e+00\n";
    CostdbCommPoint *pts = NULL;
    size_t n = 0;
    char err[512] = "";

    CU_ASSERT_EQUAL_FATAL(parse_text(ok, NULL, NULL, &pts, &n, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_STRING_EQUAL(pts[0].collective, "all-gather");
    CU_ASSERT_STRING_EQUAL(pts[0].group_desc, "2x2");
    CU_ASSERT_STRING_EQUAL(pts[0].dtype, "f32");
    CU_ASSERT_EQUAL(pts[0].bytes, 1024);
    CU_ASSERT_DOUBLE_EQUAL(pts[0].seconds, 20.5e-6, 1e-18);
    CU_ASSERT_DOUBLE_EQUAL(pts[2].seconds, 22e-6, 1e-18);
    free(pts);
    pts = NULL;
    /* overrides */
    CU_ASSERT_EQUAL(parse_text(ok, "all-reduce", "1x4", &pts, &n, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(pts[0].collective, "all-reduce");
    CU_ASSERT_STRING_EQUAL(pts[0].group_desc, "1x4");
    free(pts);
    pts = NULL;
    /* the #wrong column of the old layout is "error" (not checked); time column 4 */
    CU_ASSERT_EQUAL(parse_text(old, "all-reduce", "1x8", &pts, &n, err, sizeof err), 0);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_DOUBLE_EQUAL(pts[0].seconds, 40e-6, 1e-18);
    CU_ASSERT_STRING_EQUAL(pts[0].dtype, "f16");
    free(pts);
    pts = NULL;

    /* errors: the file, the line and the field */
    {
        static const struct { const char *text, *coll, *group, *want; } bad[] = {
            {NT_HEAD NT_COLS "        1024  64  float none -1  20.5 0.05 0.04 0 20 0.05 0.04 0\n",
             NULL, NULL, "give --collective"},
            {NT_COLS "        1024  64  float none -1  20.5 0.05 0.04 0 20 0.05 0.04 0\n",
             "all-reduce", NULL, "give --group"},
            {NT_HEAD NT_COLS "        1024  64  float none -1  fast 0.05 0.04 0 20 0.05 0.04 0\n",
             "all-reduce", NULL, "t.log:11: field time: 'fast'"},
            {NT_HEAD NT_COLS "        -5  64  float none -1  20 0.05 0.04 0 20 0.05 0.04 0\n",
             "all-reduce", NULL, "t.log:11: field size"},
            {NT_HEAD NT_COLS "        1024  64  float none -1  20 0.05 0.04 3 20 0.05 0.04 0\n",
             "all-reduce", NULL, "t.log:11: field #wrong: '3'"},
            {NT_HEAD NT_COLS "        1024  64  float\n", "all-reduce", NULL,
             "t.log:11: field time: the line has 3 fields"},
            {NT_HEAD NT_COLS, "all-reduce", NULL, "no nccl-tests result lines"},
            {NT_HEAD NT_COLS "        1024  64  float none -1  20 0.05 0.04 0 20 0.05 0.04 0\n",
             "broadcast", NULL, "--collective: unknown collective 'broadcast'"},
            {NT_HEAD NT_COLS "        1024  64  float none -1  20 0.05 0.04 0 20 0.05 0.04 0\n",
             "all-reduce", "8", "--group: '8' is not HOSTSxGPUS"},
            /* issue 14: two logs in one file, unknown collective, repeated rank,
             * duplicate size, zero time */
            {NT_HEAD "# Collective test starting: all_reduce_perf\n" NT_COLS
             "        1024  64  float none -1  20 0.05 0.04 0 20 0.05 0.04 0\n"
             "# Collective test starting: all_gather_perf\n" NT_COLS
             "        1024  64  float none -1  20 0.05 0.04 0 20 0.05 0.04 0\n",
             NULL, NULL, "t.log:13: a second nccl-tests run starts here (all_gather_perf)"},
            {NT_HEAD "# Collective test starting: broadcast_perf\n" NT_COLS
             "        1024  64  float none -1  20 0.05 0.04 0 20 0.05 0.04 0\n",
             NULL, NULL, "t.log:9: unknown collective 'broadcast_perf'"},
            {NT_HEAD "#  Rank  1 Group  0 Pid  101 on      hostA device  1 [0x08] NVIDIA H100\n"
             NT_COLS "        1024  64  float none -1  20 0.05 0.04 0 20 0.05 0.04 0\n",
             "all-reduce", NULL, "t.log:9: field Rank: rank 1 appears twice"},
            {NT_HEAD NT_COLS "        1024  64  float none -1  20 0.05 0.04 0 20 0.05 0.04 0\n"
             "        1024  64  float none -1  21 0.05 0.04 0 20 0.05 0.04 0\n",
             "all-reduce", NULL, "t.log:12: field size: 1024 bytes measured twice"},
            {NT_HEAD NT_COLS "        1024  64  float none -1  0 0.05 0.04 0 20 0.05 0.04 0\n",
             "all-reduce", NULL, "t.log:11: field time: '0'"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            err[0] = '\0';
            pts = NULL;
            CU_ASSERT_EQUAL(parse_text(bad[i].text, bad[i].coll, bad[i].group, &pts, &n, err,
                                       sizeof err),
                            APPROF_EINVAL);
            CU_ASSERT_PTR_NULL(pts);
            if (!strstr(err, bad[i].want))
                fprintf(stderr, "case %zu: '%s'\n", i, err);
            CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].want));
        }
    }
}

static void test_match_gpu(void)
{
    const int64_t G = (int64_t)1 << 30;
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("NVIDIA H100 80GB HBM3", 80 * G), "h100-sxm");
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("NVIDIA H200", 141 * G), "h200");
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("NVIDIA A100-SXM4-40GB", 40 * G), "a100-40g");
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("NVIDIA A100-SXM4-80GB", 80 * G), "a100-80g");
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("NVIDIA A100 PCIe", 80 * G), "a100-80g");
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("Tesla V100-SXM2-16GB", 16 * G), "v100-16g");
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("Tesla V100-PCIE-32GB", 32 * G), "v100-32g");
    CU_ASSERT_STRING_EQUAL(approf_hardware_match_gpu("NVIDIA GeForce GTX 1080 Ti", 11 * G),
                           "gtx-1080ti");
    CU_ASSERT_PTR_NULL(approf_hardware_match_gpu("NVIDIA GeForce RTX 4090", 24 * G));
    CU_ASSERT_PTR_NULL(approf_hardware_match_gpu(NULL, 0));
    /* every name it returns is a built-in */
    {
        ApprofHardwareSpec hw;
        CU_ASSERT_EQUAL(approf_hardware_builtin(approf_hardware_match_gpu("H100", 0), &hw), 0);
    }
}

/* ---- analytic backend ---------------------------------------------------------------- */

static void test_analytic(void)
{
    ApprofHardwareSpec hw = plain_spec(), small;
    ApprofBackend be;
    ApprofMeasurement m, m2;
    ApprofStageProgram p;
    ApprofKernel k[2];
    ApprofCollective c[2];
    double want;

    memset(&p, 0, sizeof p);
    memset(k, 0, sizeof k);
    memset(c, 0, sizeof c);
    k[0].kind = APPROF_K_GEMM;
    k[0].dtype = APPROF_F16;
    k[0].flops = 1e12;             /* 1e12 / 50e12 = 0.02 s */
    k[0].bytes = 1e6;
    k[1].kind = APPROF_K_ELEMENTWISE;
    k[1].bytes = 8e8;              /* 8e8 / 800e9 = 1 ms */
    c[0].kind = APPROF_COLL_ALL_REDUCE;
    c[0].group_size = 4;
    c[0].bytes = 1.2e9;            /* 2*3/4*1.2e9 / 300e9 = 6 ms */
    c[1].kind = APPROF_COLL_ALL_GATHER;
    c[1].group_size = 2;
    c[1].crosses_hosts = 1;
    c[1].bytes = 1e9;              /* 1/2 * 1e9 / 25e9 = 20 ms */
    p.kernels[1] = k;
    p.n_kernels[1] = 2;
    p.colls[1] = c;
    p.n_colls[1] = 2;
    p.peak_memory[1] = (int64_t)(3 * GIB);
    p.peak_memory[0] = (int64_t)(15 * GIB) + 1;
    p.grad_sync.kind = APPROF_COLL_ALL_REDUCE; /* must not be counted */
    p.grad_sync.group_size = 8;
    p.grad_sync.bytes = 1e12;

    CU_ASSERT_EQUAL_FATAL(approf_backend_analytic(&be), APPROF_OK);
    CU_ASSERT_STRING_EQUAL(be.name, "model");
    CU_ASSERT_PTR_NOT_NULL_FATAL(be.measure);
    CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 1, &hw, &m), APPROF_OK);
    want = 0.02 + 0.001 + 0.006 + 0.02 + 2 * 8.4e-6; /* + NCCL's Simple ring base latency */
    CU_ASSERT_DOUBLE_EQUAL(m.compute_cost, want, 1e-15);
    CU_ASSERT_EQUAL(m.status, COSTDB_STATUS_OK);
    CU_ASSERT_EQUAL(m.peak_memory, (int64_t)(3 * GIB));
    CU_ASSERT_EQUAL(m.available_memory, (int64_t)(15 * GIB));
    CU_ASSERT_EQUAL(m.repeats, 1);
    CU_ASSERT_EQUAL(m.spread, 0.0);
    CU_ASSERT_STRING_EQUAL(m.error, "");
    /* deterministic to the bit */
    CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 1, &hw, &m2), APPROF_OK);
    CU_ASSERT_EQUAL(memcmp(&m.compute_cost, &m2.compute_cost, sizeof(double)), 0);
    /* phase 0 is empty but one byte over the available memory: OOM */
    CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 0, &hw, &m), APPROF_OK);
    CU_ASSERT_EQUAL(m.status, COSTDB_STATUS_OOM);
    CU_ASSERT_EQUAL((int)COSTDB_STATUS_OOM, 1);
    CU_ASSERT(isinf(m.compute_cost) && m.compute_cost > 0);
    CU_ASSERT_STRING_EQUAL(m.error, "needs 15.0 GiB, 15.0 GiB available on plain");
    /* the example: 12.3 GiB on a 1080 Ti (11 GiB - 1 GiB reserve) */
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("gtx-1080ti", &small), APPROF_OK);
    p.peak_memory[1] = (int64_t)(12.3 * GIB);
    CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 1, &small, &m), APPROF_OK);
    CU_ASSERT_EQUAL(m.status, COSTDB_STATUS_OOM);
    CU_ASSERT_STRING_EQUAL(m.error, "needs 12.3 GiB, 10.0 GiB available on gtx-1080ti");
    CU_ASSERT_EQUAL(m.available_memory, (int64_t)10 << 30);
    /* bad arguments */
    CU_ASSERT_EQUAL(be.measure(be.ctx, &p, 2, &hw, &m), APPROF_EINVAL);
    CU_ASSERT_EQUAL(be.measure(be.ctx, NULL, 0, &hw, &m), APPROF_EINVAL);
    approf_backend_destroy(&be);
    CU_ASSERT_PTR_NULL(be.measure);
    CU_ASSERT_PTR_NULL(be.name);
}

static int destroyed;
static void fake_destroy(void *ctx)
{
    destroyed = *(int *)ctx;
}

static void test_backend_destroy(void)
{
    ApprofBackend b;
    int token = 42;
    memset(&b, 0, sizeof b);
    b.name = "fake";
    b.ctx = &token;
    b.destroy = fake_destroy;
    approf_backend_destroy(&b);
    CU_ASSERT_EQUAL(destroyed, 42);
    CU_ASSERT_PTR_NULL(b.ctx);
    CU_ASSERT_PTR_NULL(b.destroy);
    approf_backend_destroy(&b); /* zeroed: nothing to call */
    approf_backend_destroy(NULL);
}

/* ---- stage program utilities ------------------------------------------------------- */

static void test_stage_program(void)
{
    ApprofStageProgram src, dst;
    ApprofKernel k[3];
    ApprofCollective c[1];
    ApprofPlacement pl[2];
    memset(&src, 0, sizeof src);
    memset(k, 0, sizeof k);
    memset(c, 0, sizeof c);
    memset(pl, 0, sizeof pl);
    k[2].flops = 7;
    c[0].bytes = 5;
    snprintf(pl[1].spec, sizeof pl[1].spec, "ShardingSpec((NoSharding(),), (Replicated(replicas=8),))");
    src.kernels[0] = k;
    src.n_kernels[0] = 3;
    src.colls[1] = c;
    src.n_colls[1] = 1;
    src.placements = pl;
    src.n_placements = 2;
    src.peak_memory[1] = 99;
    snprintf(src.signature, sizeof src.signature, "abc");
    CU_ASSERT_EQUAL_FATAL(approf_stage_program_copy(&dst, &src), APPROF_OK);
    CU_ASSERT_PTR_NOT_EQUAL(dst.kernels[0], k);
    CU_ASSERT_PTR_NULL(dst.kernels[1]);
    CU_ASSERT_PTR_NULL(dst.colls[0]);
    CU_ASSERT_EQUAL(dst.n_kernels[0], 3);
    CU_ASSERT_EQUAL(dst.kernels[0][2].flops, 7);
    CU_ASSERT_EQUAL(dst.colls[1][0].bytes, 5);
    CU_ASSERT_STRING_EQUAL(dst.placements[1].spec, pl[1].spec);
    CU_ASSERT_EQUAL(dst.peak_memory[1], 99);
    CU_ASSERT_STRING_EQUAL(dst.signature, "abc");
    k[2].flops = 8; /* deep: the copy does not see it */
    CU_ASSERT_EQUAL(dst.kernels[0][2].flops, 7);
    approf_stage_program_clear(&dst);
    CU_ASSERT_PTR_NULL(dst.kernels[0]);
    CU_ASSERT_PTR_NULL(dst.placements);
    CU_ASSERT_EQUAL(dst.n_kernels[0], 0);
    CU_ASSERT_EQUAL(dst.peak_memory[1], 0);
    approf_stage_program_clear(NULL);

    CU_ASSERT_STRING_EQUAL(approf_coll_kind_name(APPROF_COLL_ALL_REDUCE), "all-reduce");
    CU_ASSERT_STRING_EQUAL(approf_coll_kind_name(APPROF_COLL_ALL_GATHER), "all-gather");
    CU_ASSERT_STRING_EQUAL(approf_coll_kind_name(APPROF_COLL_REDUCE_SCATTER), "reduce-scatter");
    CU_ASSERT_STRING_EQUAL(approf_coll_kind_name(APPROF_COLL_ALL_TO_ALL), "all-to-all");
    CU_ASSERT_STRING_EQUAL(approf_coll_kind_name(APPROF_COLL_SEND_RECV), "send-recv");
    CU_ASSERT_STRING_EQUAL(approf_coll_kind_name(APPROF_COLL_KIND_COUNT), "unknown");
}

int main(void)
{
    static const CunitTest tests[] = {
        {"builtins", test_builtins},
        {"collectives", test_collectives},
        {"roofline", test_roofline},
        {"spec_file_ok", test_spec_file_ok},
        {"spec_file_bad", test_spec_file_bad},
        {"costdb_row", test_costdb_row},
        {"curve", test_curve},
        {"curves_on_spec", test_curves_on_spec},
        {"nccl_tests", test_nccl_tests},
        {"match_gpu", test_match_gpu},
        {"analytic", test_analytic},
        {"backend_destroy", test_backend_destroy},
        {"stage_program", test_stage_program},
    };
    return CUNIT_RUN("hw", tests);
}
