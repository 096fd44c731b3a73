/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the calibrated parts of the analytic cost model (hw/cost.c,
 * schemas/hardware-spec.md "Efficiencies by math class"): the math class of
 * each dtype (TF32 switch, cards without tensor cores or bf16), the
 * efficiency chosen per math class and kernel class with its fallback, the
 * host-overhead floor of a kernel, the multi-rail fabric bandwidth, the
 * overlapped and bucketed gradient synchronisation, and the spec-file keys
 * with their fingerprint rule. Specs are written here, not taken from the
 * built-in table, so the expected values are computed by hand.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "collective.h"
#include "costdb.h"
#include "hardware.h"
#include "stage.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b) + 1e-300)
/* NCCL v2.21.5-1's base latency of the Simple ring (baseLat) */
#define NCCL_BASE 8.4e-6

/* The round-number spec of hw_fixture.h with a TF32 rate, TF32 allowed. */
static void spec(ApprofHardwareSpec *hw)
{
    hw_fixture_round_spec(hw);
    hw->peak_flops_tf32 = 150e12;
    hw->allow_tf32 = 1;
}

static void test_math_class(void)
{
    ApprofHardwareSpec hw;
    spec(&hw);
    CU_ASSERT_EQUAL(approf_math_class(&hw, APPROF_F32), APPROF_MATH_TF32);
    CU_ASSERT_EQUAL(approf_math_class(&hw, APPROF_F16), APPROF_MATH_F16);
    CU_ASSERT_EQUAL(approf_math_class(&hw, APPROF_BF16), APPROF_MATH_F16);
    hw.allow_tf32 = 0; /* the switch */
    CU_ASSERT_EQUAL(approf_math_class(&hw, APPROF_F32), APPROF_MATH_FP32);
    hw.allow_tf32 = 1;
    hw.peak_flops_tf32 = 0; /* a card without TF32 (V100) */
    CU_ASSERT_EQUAL(approf_math_class(&hw, APPROF_F32), APPROF_MATH_FP32);
    hw.peak_flops[APPROF_BF16] = hw.peak_flops[APPROF_F32]; /* no bf16 hardware */
    CU_ASSERT_EQUAL(approf_math_class(&hw, APPROF_BF16), APPROF_MATH_FP32);
    hw.peak_flops[APPROF_F16] = hw.peak_flops[APPROF_F32]; /* no tensor cores (GP102) */
    CU_ASSERT_EQUAL(approf_math_class(&hw, APPROF_F16), APPROF_MATH_FP32);
}

static void test_rates(void)
{
    ApprofHardwareSpec hw;
    double peak, eff;
    spec(&hw);
    /* nothing per class given: the generic factors, the class's peak */
    approf_kernel_rate(&hw, APPROF_K_GEMM, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 150e12) && REL(eff, 0.5));
    approf_kernel_rate(&hw, APPROF_K_CONV_BWD_FILTER, APPROF_F16, &peak, &eff);
    CU_ASSERT(REL(peak, 300e12) && REL(eff, 0.25));
    /* per class */
    hw.gemm_eff[APPROF_MATH_TF32] = 0.6;
    hw.gemm_eff[APPROF_MATH_F16] = 0.7;
    hw.gemm_eff[APPROF_MATH_FP32] = 0.9;
    hw.conv_eff[APPROF_MATH_F16] = 0.4;
    hw.conv_bwd_data_factor = 0.5;
    hw.conv_bwd_filter_factor = 3.0; /* capped at 1 */
    approf_kernel_rate(&hw, APPROF_K_GEMM, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 150e12) && REL(eff, 0.6));
    approf_kernel_rate(&hw, APPROF_K_GEMM, APPROF_BF16, &peak, &eff);
    CU_ASSERT(REL(peak, 300e12) && REL(eff, 0.7));
    hw.allow_tf32 = 0;
    approf_kernel_rate(&hw, APPROF_K_GEMM, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 20e12) && REL(eff, 0.9));
    approf_kernel_rate(&hw, APPROF_K_CONV_FWD, APPROF_F16, &peak, &eff);
    CU_ASSERT(REL(eff, 0.4));
    approf_kernel_rate(&hw, APPROF_K_CONV_BWD_DATA, APPROF_F16, &peak, &eff);
    CU_ASSERT(REL(eff, 0.2));
    approf_kernel_rate(&hw, APPROF_K_CONV_BWD_FILTER, APPROF_F16, &peak, &eff);
    CU_ASSERT(REL(eff, 1.0));
    approf_kernel_rate(&hw, APPROF_K_CONV_FWD, APPROF_F32, &peak, &eff); /* FP32 conv: generic */
    CU_ASSERT(REL(peak, 20e12) && REL(eff, 0.25));
    approf_kernel_rate(&hw, APPROF_K_ELEMENTWISE, APPROF_F32, &peak, &eff);
    CU_ASSERT(peak == 0 && eff == 0);
}

static void test_kernel_time(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    spec(&hw);
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_GEMM;
    k.dtype = APPROF_F32;
    k.flops = 75e12; /* 1 s at 150e12 * 0.5 */
    k.bytes = 1e9;   /* 1 ms at 2000e9 * 0.5 */
    hw.kernel_launch_overhead = 2e-6;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 1.0 + 2e-6));
    hw.allow_tf32 = 0; /* strict FP32: 20e12 * 0.5 */
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 7.5 + 2e-6));
    /* a tiny kernel waits for the host */
    k.flops = 1e6;
    k.bytes = 1e3;
    hw.host_overhead = 10e-6;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 10e-6));
    k.kind = APPROF_K_ELEMENTWISE;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 10e-6));
    hw.host_overhead = 0;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 1e3 / 1e12 + 2e-6));
}

/* The GEMM epilogue: C is stored after the main loop, so its store adds to
 * max(math, loads) unless gemm_store_overlap hides it under the math. */
static void test_gemm_store(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    double mem = 2000e9 * 0.5, math, loads, store;
    spec(&hw);
    hw.kernel_launch_overhead = 0;
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_GEMM;
    k.dtype = APPROF_F32;
    /* 2048 x 1024 x 1024 in f32 on TF32 tensor cores (150e12 * 0.5) */
    k.batch = 1, k.m = 2048, k.n = 1024, k.k = 1024;
    k.flops = 2.0 * 2048 * 1024 * 1024;
    k.bytes = 4.0 * (2048.0 * 1024 + 1024.0 * 1024 + 2048.0 * 1024);
    k.store_bytes = 4.0 * 2048 * 1024;
    math = k.flops / 75e12;
    loads = (k.bytes - k.store_bytes) / mem;
    store = k.store_bytes / mem;
    CU_ASSERT_FATAL(math > loads + store); /* compute bound under the plain roofline */
    /* exposed (the default): math, then the store */
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), math + store));
    /* hidden: the plain roofline */
    hw.gemm_store_overlap = 1.0;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), math));
    hw.gemm_store_overlap = 0.5;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), math + 0.5 * store));
    /* a memory-bound GEMM: the store cannot hide under math it does not have */
    hw.gemm_store_overlap = 1.0;
    k.flops = 1e6;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), loads + store));
    hw.gemm_store_overlap = 0;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), loads + store));
    /* no store (a fused kernel's GEMM): the plain roofline */
    k.flops = 2.0 * 2048 * 1024 * 1024;
    k.store_bytes = 0;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), math));
}

/* A compute-bound GEMM kernel batch x (m x k) @ (k x n) on the test spec,
 * without launch overhead. */
static void compute_gemm(ApprofHardwareSpec *hw, ApprofKernel *k, ApprofDtype dt, int64_t batch,
                         int64_t m, int64_t n, int64_t kk)
{
    spec(hw);
    hw->kernel_launch_overhead = 0;
    memset(k, 0, sizeof *k);
    k->kind = APPROF_K_GEMM;
    k->dtype = dt;
    k->batch = batch, k->m = m, k->n = n, k->k = kk;
    k->flops = 2.0 * (double)batch * (double)m * (double)n * (double)kk;
    k->bytes = 1e6;
}

/* A fused attention's GEMMs take the spec's attention_efficiency in place
 * of the math class's GEMM efficiency; 0 leaves them at the GEMM's. */
static void test_attention_efficiency(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    compute_gemm(&hw, &k, APPROF_BF16, 16, 4096, 2048, 128);
    k.attention = 1;
    /* not given: the f16 class's GEMM efficiency (300e12 x 0.5) */
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 150e12));
    hw.attention_efficiency = 0.4;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 120e12));
    /* a plain GEMM keeps its own */
    k.attention = 0;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 150e12));
    /* a fused attention of an f32 model: the TF32 class's peak (150e12) */
    k.attention = 1;
    k.dtype = APPROF_F32;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 60e12));
}

/* A bf16 reduction kernel over e elements moving bytes, on the test spec
 * with the given launch overhead. */
static void reduction_kernel(ApprofHardwareSpec *hw, ApprofKernel *k, double launch, int64_t e,
                             double bytes)
{
    spec(hw);
    hw->kernel_launch_overhead = launch;
    memset(k, 0, sizeof *k);
    k->kind = APPROF_K_REDUCTION;
    k->dtype = APPROF_BF16;
    k->elements = e;
    k->bytes = bytes;
}

/* Reduction kernels take reduction_efficiency of the bandwidth when it is
 * given; streaming kernels keep memory_efficiency. */
static void test_reduction_efficiency(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    reduction_kernel(&hw, &k, 0, 1 << 20, 4e6);
    k.flops = 5.0 * (1 << 20);
    /* not given: memory_efficiency (2000e9 x 0.5) */
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 4e6 / 1000e9));
    hw.reduction_efficiency = 0.25;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 4e6 / 500e9));
    /* an elementwise kernel keeps the streaming figure */
    k.kind = APPROF_K_ELEMENTWISE;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 4e6 / 1000e9));
}

/* A tensor-core GEMM with M, N or K not a multiple of 16 bytes runs at
 * gemm_unaligned_factor of its efficiency; aligned GEMMs, CUDA-core GEMMs
 * and a fused attention's GEMMs keep theirs. */
static void test_gemm_unaligned(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    double t;
    compute_gemm(&hw, &k, APPROF_BF16, 1, 8192, 50257, 1024);
    t = k.flops / 150e12; /* 300e12 x 0.5 */
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), t)); /* not given: no penalty */
    hw.gemm_unaligned_factor = 0.25;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), t / 0.25));
    k.n = 50264; /* a multiple of 8 elements */
    k.flops = 2.0 * 8192 * 50264 * 1024;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 150e12));
    k.k = 1020; /* K counts too */
    k.flops = 2.0 * 8192 * 50264 * 1020;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 150e12 / 0.25));
    /* TF32: 16 bytes are 4 elements, so 1020 is aligned */
    k.dtype = APPROF_F32;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 75e12));
    k.k = 1022;
    k.flops = 2.0 * 8192 * 50264 * 1022;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 75e12 / 0.25));
    /* strict FP32 on CUDA cores: no tensor-core alignment */
    hw.allow_tf32 = 0;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 10e12));
    hw.allow_tf32 = 1;
    /* a fused attention's GEMM is priced by attention_efficiency alone */
    k.attention = 1;
    k.dtype = APPROF_BF16;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), k.flops / 150e12));
}

/* loss_f32: a cross-entropy over 16-bit logits priced as Megatron-LM's
 * kernels over an f32 copy (6 forward, 2 backward); f32 logits and specs
 * without it keep the one kernel. */
static void test_loss_f32(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    double e = 1 << 24, stream = 2000e9 * 0.5, red = 2000e9 * 0.25, one;
    reduction_kernel(&hw, &k, 1e-6, (int64_t)e, 2 * e);
    k.loss = 1;
    one = 2 * e / stream + 1e-6;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), one)); /* not given */
    hw.loss_f32 = 1;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), (6 + 8 + 8 + 8) * e / stream + 8 * e / stream + 6e-6));
    hw.reduction_efficiency = 0.25; /* the maximum and the sum are reductions */
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), (6 + 8 + 8 + 8) * e / stream + 8 * e / red + 6e-6));
    k.loss = 2;
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), (8 + 6) * e / stream + 2e-6));
    k.dtype = APPROF_F32; /* f32 logits: nothing to copy */
    CU_ASSERT(REL(approf_kernel_seconds(&hw, &k), 2 * e / red + 1e-6));
}

/* One price per collective: the profiler's collectives and the fabric the
 * solver rebuilds from the stored hardware row (costdb/collective.c) give
 * the same seconds, multi-rail adapters and bus efficiency included, for
 * every built-in spec, kind, group and host count. */
static void test_one_collective_price(void)
{
    static const char *const names[] = {"a100-40g", "a100-80g", "h100-sxm", "v100-16g"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ApprofHardwareSpec hw;
        CostdbHardware row;
        CostdbFabric f;
        char err[256];
        CU_ASSERT_FATAL(approf_hardware_resolve(names[i], &hw, err, sizeof err) == 0);
        hw.nics_per_host = 8;
        hw.nic_bandwidth = 50e9;
        hw.bus_efficiency = 0.85;
        /* NeMo's Apex optimizer on a bf16 model: Adam's state in bf16 */
        hw.optimizer_main_param_bytes = 2;
        hw.optimizer_exp_avg_bytes = 2;
        hw.optimizer_exp_avg_sq_bytes = 1;
        approf_hardware_to_costdb(&hw, &row);
        costdb_fabric_from_hardware(&row, &f);
        CU_ASSERT(f.nics_per_host == 8 && f.nic_bandwidth == 50e9 && f.bus_efficiency == 0.85);
        /* the optimizer widths reach the solver's fabric: 2 + 1 bytes of
         * moments beyond a bf16 weight that is its own main copy, 4 + 3
         * beyond an f32 one; Adam's step moves 2 (2 + 2 + 1) + 2 */
        CU_ASSERT(f.adam.main_param == 2 && f.adam.exp_avg == 2 && f.adam.exp_avg_sq == 1);
        CU_ASSERT(costdb_adam_state_bytes(&f.adam, 2) == 3.0);
        CU_ASSERT(costdb_adam_bytes(&f.adam, 10, 2, 2) == 120.0);
        CU_ASSERT(costdb_adam_state_bytes(&f.adam, 4) == 3.0);
        CU_ASSERT(costdb_adam_state_bytes(NULL, 2) == 12.0 && costdb_adam_state_bytes(NULL, 4) == 8.0);
        CU_ASSERT(costdb_adam_bytes(NULL, 10, 2, 2) == 260.0);
        CU_ASSERT(f.adam.step_bytes == 0.0);
        CU_ASSERT(f.memory_efficiency == hw.memory_efficiency);
        {
            /* Composer's per-parameter DecoupledAdamW: its own 80 bytes an
             * element reach the solver's fabric and replace fused Adam's
             * count; the state's size does not change */
            ApprofHardwareSpec u = hw;
            CostdbHardware urow;
            CostdbFabric uf;
            CostdbAdamWidths uw;
            char fa[128], fb[128];
            u.optimizer_step_bytes = 80;
            approf_hardware_to_costdb(&u, &urow);
            costdb_fabric_from_hardware(&urow, &uf);
            CU_ASSERT(uf.adam.step_bytes == 80.0);
            CU_ASSERT(costdb_adam_bytes(&uf.adam, 10, 2, 2) == 800.0);
            CU_ASSERT(costdb_adam_state_bytes(&uf.adam, 2) == 3.0);
            approf_hardware_adam_widths(&u, &uw);
            CU_ASSERT(uw.step_bytes == 80.0 && costdb_adam_bytes(&uw, 10, 4, 4) == 800.0);
            approf_hardware_fingerprint(&hw, fa, sizeof fa);
            approf_hardware_fingerprint(&u, fb, sizeof fb);
            CU_ASSERT(strcmp(fa, fb) != 0);
        }
        for (int kind = 0; kind <= (int)APPROF_COLL_SEND_RECV; kind++)
            for (int hosts = 1; hosts <= 4; hosts *= 2)
                for (int g = 2; g <= 16; g *= 2) {
                    ApprofCollective c = {(ApprofCollKind)kind, APPROF_AXIS0, g * hosts,
                                          hosts > 1, 3e8, -1, hosts, 0, 0};
                    double p = approf_collective_cost(&hw, &c);
                    double q = costdb_collective_seconds(&f, (CostdbCollKind)kind, 3e8,
                                                         g * hosts, hosts, hosts > 1);
                    CU_ASSERT(p == q && p > 0);
                }
    }
    /* a row whose capabilities are not the profiler's object keeps the
     * plain link figures */
    {
        CostdbHardware row;
        CostdbFabric f;
        memset(&row, 0, sizeof row);
        row.inter_host_bandwidth = 12.5e9;
        snprintf(row.capabilities, sizeof row.capabilities, "{\"nics_per_host\": \"x\"}");
        costdb_fabric_from_hardware(&row, &f);
        CU_ASSERT(f.nics_per_host == 0 && f.inter_bandwidth == 12.5e9);
        CU_ASSERT(REL(costdb_collective_seconds(&f, COSTDB_COLL_SEND_RECV, 12.5e9, 2, 2, 1), 1.0));
    }
}

static void test_fabric(void)
{
    ApprofHardwareSpec hw;
    ApprofCollective c;
    spec(&hw);
    /* no adapters given: the per-GPU inter-host figure, nominal */
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 16, 2, 1), 25e9));
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 8, 1, 0), 300e9));
    hw.nics_per_host = 8;
    hw.nic_bandwidth = 25e9;
    /* all 8 GPUs of each host in the group: the host's 8 rails */
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 16, 2, 1), 200e9));
    /* one GPU per host (8 such groups side by side): one rail */
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 2, 2, 1), 25e9));
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 8, 2, 1), 100e9));
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 2, 0, 1), 25e9)); /* hosts unknown */
    hw.nics_per_host = 16; /* more than NVLink: the intra-host link caps it */
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 16, 2, 1), 300e9));
    hw.nics_per_host = 8;
    hw.bus_efficiency = 0.8;
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 16, 2, 1), 160e9));
    CU_ASSERT(REL(approf_link_bandwidth(&hw, 8, 1, 0), 240e9));
    /* the collective uses it, as NCCL's ring, Simple prices it
     * (docs/nccl-tuning.md): 2(n-1)/n * bytes / bw, plus the base latency
     * 8.4 us, 2 x 2 hosts steps at the inter-host latency and the other 26
     * at max(intra-host latency 0, 3 x the 1 us network overhead) */
    memset(&c, 0, sizeof c);
    c.kind = APPROF_COLL_ALL_REDUCE;
    c.group_size = 16;
    c.hosts = 2;
    c.crosses_hosts = 1;
    c.bytes = 1.6e9;
    hw.inter_host_latency = 1e-5;
    CU_ASSERT(REL(approf_collective_cost(&hw, &c),
                  2.0 * 15 / 16 * 1.6e9 / 160e9 + NCCL_BASE + 26 * 3e-6 + 4 * 1e-5));
}

/* A micro-batch's phase: kernels plus collectives, less what
 * tp_comm_overlap hides under the phase's GEMMs (never more than they last). */
static void test_phase_overlap(void)
{
    ApprofHardwareSpec hw;
    HwFixturePhase ph;
    double gemm, ew, coll;
    spec(&hw);
    hw.kernel_launch_overhead = 0;
    /* GEMM 0.1 s at 150e12 * 0.5, elementwise 0.05 s at 2000e9 * 0.5 */
    hw_fixture_phase(&ph, APPROF_F32, 7.5e12);
    gemm = approf_kernel_seconds(&hw, &ph.ks[0]);
    ew = approf_kernel_seconds(&hw, &ph.ks[1]);
    coll = approf_collective_cost(&hw, &ph.c);
    CU_ASSERT_FATAL(coll > 0.01 && coll < gemm);
    /* serial (the default): everything adds up; the empty forward is 0 */
    CU_ASSERT(REL(approf_phase_seconds(&hw, &ph.p, 1), gemm + ew + coll));
    CU_ASSERT_EQUAL(approf_phase_seconds(&hw, &ph.p, 0), 0.0);
    /* overlapped: the collective runs under the GEMM */
    hw.tp_comm_overlap = 1.0;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &ph.p, 1), gemm + ew));
    hw.tp_comm_overlap = 0.5;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &ph.p, 1), gemm + ew + 0.5 * coll));
    /* never more hidden than the GEMMs last (not under the elementwise kernel) */
    hw.tp_comm_overlap = 1.0;
    ph.c.bytes = 8e11;
    coll = approf_collective_cost(&hw, &ph.c);
    CU_ASSERT_FATAL(coll > gemm + ew);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &ph.p, 1), ew + coll));
}

/* Megatron-LM's asynchronous backward collectives (tp_async_grad): a
 * collective of async group g runs under that group's GEMMs, the input
 * gradient's reduction under the weight-gradient ones and the input's
 * re-gather under the input-gradient ones, each window spent once and
 * never more hidden than it lasts; unmarked collectives stay serial even
 * beside unmarked GEMMs. */
static void test_phase_async(void)
{
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    ApprofKernel ks[4];
    ApprofCollective cs[4];
    double k[4], c[4], serial, want;
    spec(&hw);
    hw.kernel_launch_overhead = 0;
    memset(&p, 0, sizeof p);
    memset(ks, 0, sizeof ks);
    memset(cs, 0, sizeof cs);
    for (int i = 0; i < 3; i++) {
        ks[i].kind = APPROF_K_GEMM;
        ks[i].dtype = APPROF_F32;
    }
    ks[0].flops = 7.5e12; /* input gradient: 0.1 s */
    ks[0].async_group = 1;
    ks[1].flops = 3.0e12; /* weight gradient: 0.04 s */
    ks[1].async_group = 1;
    ks[1].async_wgrad = 1;
    ks[2].flops = 15e12;  /* a GEMM of no group: 0.2 s */
    ks[3].kind = APPROF_K_ELEMENTWISE;
    ks[3].bytes = 0.05e12;
    for (int i = 0; i < 4; i++) {
        cs[i].kind = i == 1 ? APPROF_COLL_ALL_GATHER : APPROF_COLL_ALL_REDUCE;
        cs[i].group_size = 8;
        cs[i].hosts = 1;
        cs[i].bytes = 2e9;
    }
    cs[0].async_group = 1; /* the reduction: under the 0.04 s weight gradient */
    cs[0].async_wgrad = 1;
    cs[1].async_group = 1; /* the re-gather: under the 0.1 s input gradient */
    cs[3].async_group = 1; /* a second reduction of the group: what is left */
    cs[3].async_wgrad = 1;
    cs[3].bytes = 6e9;
    p.kernels[1] = ks;
    p.n_kernels[1] = 4;
    p.colls[1] = cs;
    p.n_colls[1] = 4;
    serial = 0.0;
    for (int i = 0; i < 4; i++) {
        k[i] = approf_kernel_seconds(&hw, &ks[i]);
        c[i] = approf_collective_cost(&hw, &cs[i]);
        serial += k[i] + c[i];
    }
    CU_ASSERT_FATAL(c[0] < k[1] && c[0] + c[3] > k[1] && c[1] < k[0]);
    /* serial (the default): the marks change nothing */
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 1), serial));
    hw.tp_async_grad = 1.0;
    want = serial - c[0] - c[1] - (k[1] - c[0]);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 1), want));
    /* half of each hidden: the windows are no longer the limit */
    hw.tp_async_grad = 0.5;
    want = serial - 0.5 * (c[0] + c[1] + c[3]);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 1), want));
    /* a reduction longer than the weight-gradient GEMM hides only that long,
     * never under the input gradient or the unmarked GEMM */
    hw.tp_async_grad = 1.0;
    cs[0].bytes = 2e11;
    cs[3].async_group = 0;
    c[0] = approf_collective_cost(&hw, &cs[0]);
    serial = k[0] + k[1] + k[2] + k[3] + c[0] + c[1] + c[2] + c[3];
    CU_ASSERT_FATAL(c[0] > k[0] + k[1]);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 1), serial - k[1] - c[1]));
    /* with tp_comm_overlap too, the rest hides under what the GEMMs have
     * left */
    hw.tp_comm_overlap = 1.0;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 1), k[0] + k[1] + k[2] + k[3] + c[0] + c[1] +
                                                        c[2] + c[3] - (k[0] + k[1] + k[2])));
    hw.tp_comm_overlap = 0.0;
    /* group numbers past the stack's windows (heap path) price the same */
    ks[0].async_group = ks[1].async_group = cs[0].async_group = cs[1].async_group = 200;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 1), serial - k[1] - c[1]));
    /* the forward has no async collectives: unchanged */
    p.kernels[0] = ks + 2;
    p.n_kernels[0] = 1;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 0), k[2]));
}

static void test_grad_overlap(void)
{
    ApprofHardwareSpec hw;
    HwFixtureGradSync g;
    double sync, t;
    spec(&hw);
    /* backward 0.1 s and forward 0.05 s at 1e12; the all-reduce
     * 2*7/8*15e9/300e9 = 0.0875 s */
    hw_fixture_grad_sync(&g, 0.05e12, 0.1e12);
    /* NCCL's ring, Simple (docs/nccl-tuning.md): its base latency 8.4 us,
     * and no per-step latency on this spec's links */
    sync = 2.0 * 7 / 8 * 15e9 / 300e9 + NCCL_BASE;
    /* no overlap: the whole ring */
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p), sync));
    /* half of the backward (0.05 s) hides it */
    hw.grad_overlap = 0.5;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p), sync - 0.05));
    /* ... but never the last bucket */
    hw.grad_overlap = 1.0;
    hw.grad_bucket_bytes = 3e9;
    t = approf_stage_apply_seconds(&hw, &g.p);
    CU_ASSERT(REL(t, 2.0 * 7 / 8 * 3e9 / 300e9 + NCCL_BASE));
    /* ZeRO: the reduce-scatter hides behind the backward, the all-gather
     * behind the forward */
    hw.grad_bucket_bytes = 0;
    hw.grad_overlap = 1.0;
    g.p.n_apply_colls = 2;
    g.p.apply_colls[0].kind = APPROF_COLL_REDUCE_SCATTER;
    g.p.apply_colls[1] = g.p.apply_colls[0];
    g.p.apply_colls[1].kind = APPROF_COLL_ALL_GATHER;
    g.p.apply_colls[0].bytes = g.p.apply_colls[1].bytes = 60e9; /* 7/8*60e9/300e9 = 0.175 s */
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p),
                  (0.175 + NCCL_BASE - 0.1) + (0.175 + NCCL_BASE - 0.05)));
    /* gradients reduced in f32 for a bf16 model (grad_reduce_bytes 4): the
     * reduce-scatter moves twice the bytes, the all-gather of parameters
     * the same */
    g.p.dtype = APPROF_BF16;
    hw.grad_reduce_bytes = 4;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p),
                  (0.35 + NCCL_BASE - 0.1) + (0.175 + NCCL_BASE - 0.05)));
    /* an f32 model's gradients are f32 already */
    g.p.dtype = APPROF_F32;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p),
                  (0.175 + NCCL_BASE - 0.1) + (0.175 + NCCL_BASE - 0.05)));
    /* and the plain all-reduce of data parallelism doubles too */
    g.p.dtype = APPROF_BF16;
    hw.grad_overlap = 0;
    g.p.n_apply_colls = 1;
    g.p.apply_colls[0].kind = APPROF_COLL_ALL_REDUCE;
    g.p.apply_colls[0].bytes = 15e9;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p), 2.0 * (sync - NCCL_BASE) + NCCL_BASE));
}

static const char *base_spec = "name = cal\n"
                               "peak_tflops_f32 = 19.5\npeak_tflops_f16 = 312\n"
                               "peak_tflops_bf16 = 312\nmemory_gib = 80\n"
                               "memory_bandwidth_gbs = 2039\ngpus_per_host = 8\n"
                               "intra_host_bandwidth_gbs = 300\ninter_host_bandwidth_gbs = 25\n";

static void test_spec_keys(void)
{
    char err[256], fp0[64], fp1[64], fp2[64], text[2048];
    const char *path;
    ApprofHardwareSpec a, b;
    CU_ASSERT_PTR_NOT_NULL_FATAL((path = hw_fixture_tmp(base_spec)));
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(path, &a, err, sizeof err), APPROF_OK);
    hw_fixture_tmp_remove();
    /* defaults: nothing refined, TF32 allowed where a TF32 rate is given */
    CU_ASSERT_EQUAL(a.allow_tf32, 1);
    CU_ASSERT_EQUAL(a.peak_flops_tf32, 0);
    CU_ASSERT_EQUAL(approf_math_class(&a, APPROF_F32), APPROF_MATH_FP32);
    CU_ASSERT_EQUAL(a.nics_per_host, 0);
    approf_hardware_fingerprint(&a, fp0, sizeof fp0);

    snprintf(text, sizeof text,
             "%speak_tflops_tf32 = 156\ngemm_efficiency_tf32 = 0.6\nconv_efficiency_f16 = 0.5\n"
             "conv_bwd_data_factor = 0.9\nhost_overhead_us = 12\nnics_per_host = 8\n"
             "nic_bandwidth_gbs = 25\nbus_efficiency = 0.85\ngrad_overlap = 0.9\n"
             "grad_bucket_mib = 25\npeak_tflops_fp8 = 0\ngemm_store_overlap = 0.5\n"
             "tp_comm_overlap = 0.75\nattention_efficiency = 0.4\nreduction_efficiency = 0.48\n"
             "gemm_unaligned_factor = 0.33\ngrad_reduce_bytes = 4\nloss_f32 = 1\n"
             "grad_accum_fusion = 1\ntp_async_grad = 0.6\noptimizer_main_param_bytes = 2\n"
             "optimizer_exp_avg_bytes = 2\noptimizer_exp_avg_sq_bytes = 1\n"
             "zero3_rank_copies = 1\n",
             base_spec);
    CU_ASSERT_PTR_NOT_NULL_FATAL((path = hw_fixture_tmp(text)));
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(path, &a, err, sizeof err), APPROF_OK);
    hw_fixture_tmp_remove();
    CU_ASSERT(REL(a.peak_flops_tf32, 156e12));
    CU_ASSERT(REL(a.gemm_eff[APPROF_MATH_TF32], 0.6));
    CU_ASSERT(REL(a.conv_eff[APPROF_MATH_F16], 0.5));
    CU_ASSERT(REL(a.host_overhead, 12e-6));
    CU_ASSERT(REL(a.nic_bandwidth, 25e9));
    CU_ASSERT(REL(a.grad_bucket_bytes, 25.0 * 1048576));
    CU_ASSERT(REL(a.gemm_store_overlap, 0.5));
    CU_ASSERT(REL(a.tp_comm_overlap, 0.75));
    CU_ASSERT(REL(a.tp_async_grad, 0.6));
    CU_ASSERT(REL(a.attention_efficiency, 0.4));
    CU_ASSERT(REL(a.reduction_efficiency, 0.48));
    CU_ASSERT(REL(a.gemm_unaligned_factor, 0.33));
    CU_ASSERT(REL(a.grad_reduce_bytes, 4.0));
    CU_ASSERT(REL(a.optimizer_main_param_bytes, 2.0));
    CU_ASSERT(REL(a.optimizer_exp_avg_bytes, 2.0));
    CU_ASSERT(REL(a.optimizer_exp_avg_sq_bytes, 1.0));
    CU_ASSERT_EQUAL(a.loss_f32, 1);
    CU_ASSERT_EQUAL(a.grad_accum_fusion, 1);
    CU_ASSERT_EQUAL(a.zero3_rank_copies, 1);
    CU_ASSERT_EQUAL(approf_math_class(&a, APPROF_F32), APPROF_MATH_TF32);
    approf_hardware_fingerprint(&a, fp1, sizeof fp1);
    CU_ASSERT_STRING_NOT_EQUAL(fp0, fp1);

    /* the switch: allow_tf32 = 0 gives strict FP32 and another fingerprint */
    snprintf(text + strlen(text), sizeof text - strlen(text), "allow_tf32 = 0\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL((path = hw_fixture_tmp(text)));
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(path, &b, err, sizeof err), APPROF_OK);
    hw_fixture_tmp_remove();
    CU_ASSERT_EQUAL(approf_math_class(&b, APPROF_F32), APPROF_MATH_FP32);
    approf_hardware_fingerprint(&b, fp2, sizeof fp2);
    CU_ASSERT_STRING_NOT_EQUAL(fp1, fp2);

    /* written back and read again: the same spec */
    CU_ASSERT_EQUAL_FATAL(hw_fixture_reload(&a, &b, err, sizeof err), APPROF_OK);
    approf_hardware_fingerprint(&b, fp2, sizeof fp2);
    CU_ASSERT_STRING_EQUAL(fp1, fp2);
    CU_ASSERT(REL(b.grad_bucket_bytes, a.grad_bucket_bytes));
    CU_ASSERT(REL(b.gemm_store_overlap, a.gemm_store_overlap));
    CU_ASSERT(REL(b.tp_comm_overlap, a.tp_comm_overlap));
    CU_ASSERT(REL(b.tp_async_grad, a.tp_async_grad));
    CU_ASSERT(REL(b.attention_efficiency, a.attention_efficiency));
    CU_ASSERT(REL(b.reduction_efficiency, a.reduction_efficiency));
    CU_ASSERT(REL(b.gemm_unaligned_factor, a.gemm_unaligned_factor));
    CU_ASSERT(REL(b.grad_reduce_bytes, a.grad_reduce_bytes));
    CU_ASSERT(REL(b.optimizer_exp_avg_sq_bytes, a.optimizer_exp_avg_sq_bytes));
    CU_ASSERT_EQUAL(b.loss_f32, a.loss_f32);
    CU_ASSERT_EQUAL(b.grad_accum_fusion, a.grad_accum_fusion);
    CU_ASSERT_EQUAL(b.zero3_rank_copies, a.zero3_rank_copies);

    /* out of range: refused, the message naming the field */
    static const char *const bad[] = {
        "allow_tf32 = 2",           "bus_efficiency = 1.5",    "gemm_store_overlap = 1.2",
        "attention_efficiency = -0.1", "reduction_efficiency = 2", "gemm_unaligned_factor = 1.5",
        "grad_reduce_bytes = 16",   "loss_f32 = 2",            "grad_accum_fusion = 3",
        "tp_async_grad = 1.5",      "optimizer_exp_avg_bytes = 9", "zero3_rank_copies = 2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char field[64];
        snprintf(field, sizeof field, "%.*s", (int)strcspn(bad[i], " "), bad[i]);
        snprintf(text, sizeof text, "%s%s\n", base_spec, bad[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL((path = hw_fixture_tmp(text)));
        CU_ASSERT_EQUAL(approf_hardware_load(path, &b, err, sizeof err), APPROF_EPARSE);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, field));
        hw_fixture_tmp_remove();
    }
}

/* Every built-in: the math class of each dtype follows its peaks, and a
 * spec written by `approf hardware show` keeps its fingerprint. */
static void test_builtins_classes(void)
{
    size_t n = 0;
    const ApprofHardwareSpec *tab = approf_hardware_builtins(&n);
    CU_ASSERT_FATAL(n > 0);
    for (size_t i = 0; i < n; i++) {
        const ApprofHardwareSpec *hw = &tab[i];
        ApprofMathClass f32 = approf_math_class(hw, APPROF_F32);
        CU_ASSERT(f32 == (hw->allow_tf32 && hw->peak_flops_tf32 > 0 ? APPROF_MATH_TF32
                                                                    : APPROF_MATH_FP32));
        for (int c = 0; c < APPROF_MATH_COUNT; c++) {
            CU_ASSERT(hw->gemm_eff[c] >= 0 && hw->gemm_eff[c] <= 1);
            CU_ASSERT(hw->conv_eff[c] >= 0 && hw->conv_eff[c] <= 1);
        }
        CU_ASSERT(hw->bus_efficiency >= 0 && hw->bus_efficiency <= 1);
        CU_ASSERT(hw->grad_overlap >= 0 && hw->grad_overlap <= 1);
    }
}

/* The built-ins' selection, per dtype and kernel class (the figures of
 * schemas/hardware-spec.md's refinement table). */
static void test_builtin_selection(void)
{
    ApprofHardwareSpec a100, v100, h100;
    double peak, eff;
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("a100-80g", &a100), APPROF_OK);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("v100-32g", &v100), APPROF_OK);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &h100), APPROF_OK);
    /* A100: f32 on TF32, f16/bf16 on tensor cores */
    approf_kernel_rate(&a100, APPROF_K_GEMM, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 156e12) && REL(eff, 0.75));
    approf_kernel_rate(&a100, APPROF_K_CONV_FWD, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 156e12) && REL(eff, 0.22));
    approf_kernel_rate(&a100, APPROF_K_GEMM, APPROF_BF16, &peak, &eff);
    CU_ASSERT(REL(peak, 312e12) && REL(eff, 0.75));
    approf_kernel_rate(&a100, APPROF_K_CONV_BWD_FILTER, APPROF_F16, &peak, &eff);
    CU_ASSERT(REL(peak, 312e12) && REL(eff, 0.45));
    /* the switch: strict FP32 on CUDA cores */
    a100.allow_tf32 = 0;
    approf_kernel_rate(&a100, APPROF_K_GEMM, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 19.5e12) && REL(eff, 0.9));
    approf_kernel_rate(&a100, APPROF_K_CONV_FWD, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 19.5e12) && REL(eff, 0.8));
    /* V100: no TF32, no bf16 hardware (bf16 falls back to FP32 math) */
    approf_kernel_rate(&v100, APPROF_K_GEMM, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 15.7e12) && REL(eff, 0.9));
    approf_kernel_rate(&v100, APPROF_K_GEMM, APPROF_BF16, &peak, &eff);
    CU_ASSERT(REL(peak, 15.7e12) && REL(eff, 0.9));
    approf_kernel_rate(&v100, APPROF_K_GEMM, APPROF_F16, &peak, &eff);
    CU_ASSERT(REL(peak, 125e12) && REL(eff, 0.75));
    /* H100: TF32 494.7, FP8 recorded; DGX H100 rails: 8 x 50 GB/s */
    approf_kernel_rate(&h100, APPROF_K_GEMM, APPROF_F32, &peak, &eff);
    CU_ASSERT(REL(peak, 494.7e12) && REL(eff, 0.7));
    CU_ASSERT(REL(h100.peak_flops_fp8, 1978.9e12));
    CU_ASSERT(REL(approf_link_bandwidth(&h100, 16, 2, 1), 400e9 * 0.8));
    CU_ASSERT(REL(approf_link_bandwidth(&h100, 2, 2, 1), 50e9 * 0.8));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"math_class", test_math_class},
        {"rates", test_rates},
        {"kernel_time", test_kernel_time},
        {"gemm_store", test_gemm_store},
        {"attention_efficiency", test_attention_efficiency},
        {"reduction_efficiency", test_reduction_efficiency},
        {"gemm_unaligned", test_gemm_unaligned},
        {"loss_f32", test_loss_f32},
        {"fabric", test_fabric},
        {"one_collective_price", test_one_collective_price},
        {"phase_overlap", test_phase_overlap},
        {"phase_async", test_phase_async},
        {"grad_overlap", test_grad_overlap},
        {"spec_keys", test_spec_keys},
        {"builtins_classes", test_builtins_classes},
        {"builtin_selection", test_builtin_selection},
    };
    return CUNIT_RUN("hw-calibration", tests);
}
