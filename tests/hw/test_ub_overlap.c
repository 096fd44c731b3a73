/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transformer Engine's userbuffers overlap (Megatron-Core --tp-comm-overlap)
 * as the framework configures it: the SMs a pipelined or bulk collective
 * holds beside its GEMM (spec fields sm_count, tp_comm_overlap_sms), the
 * pipelined reduce-scatter's last chunk after the last GEMM chunk
 * (tp_comm_overlap_splits), the ring-exchange all-gathers on copy engines
 * (no SMs). Counted by hand on round numbers (docs/hardware.md,
 * "Transformer Engine's userbuffers: SMs taken from the GEMM").
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "costdb.h"
#include "cunit_run.h"
#include "hardware.h"
#include "hw_fixture.h"
#include "stage.h"

#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b) + 1e-300)
#define REQ "name = t\npeak_tflops_f32 = 20\npeak_tflops_f16 = 300\npeak_tflops_bf16 = 300\n" \
            "memory_gib = 80\nmemory_bandwidth_gbs = 2000\ngpus_per_host = 8\n"                 \
            "intra_host_bandwidth_gbs = 300\n"                                                 \
            "inter_host_bandwidth_gbs = 25\n"

/* The round-number spec (hw_fixture_round_spec): a GEMM of 0.1 s (15 TFLOP
 * at 300 TFLOP/s x 0.5), no launch overhead; here a device of 100 SMs of
 * which the userbuffers collectives hold 20. */
static void spec(ApprofHardwareSpec *hw)
{
    hw_fixture_round_spec(hw);
    hw->tp_comm_overlap = 1.0;
    hw->sm_count = 100;
    hw->tp_comm_overlap_sms = 20;
}

typedef struct {
    ApprofStageProgram p;
    ApprofKernel gemm;
    ApprofCollective c[2];
    double k, coll; /* the GEMM's and one collective's seconds alone */
} Phase;

/* Phase ph of one 0.1 s GEMM and n collectives of the given kinds (the
 * same bytes: 8 GB all-gathered or reduce-scattered over 8 GPUs of a host,
 * about 0.03 s). async_wgrad marks a backward collective as the gradient's
 * (sharding_mesh.c shard_reshard): 0 on the input's re-gather. */
static void phase(Phase *f, const ApprofHardwareSpec *hw, int ph, int n,
                  const ApprofCollKind *kinds, const int *async_wgrad)
{
    memset(f, 0, sizeof *f);
    f->gemm.kind = APPROF_K_GEMM;
    f->gemm.dtype = APPROF_BF16;
    f->gemm.flops = 15e12;
    for (int i = 0; i < n; i++) {
        f->c[i] = hw_fixture_coll(kinds[i], 8e9, 8, 1);
        f->c[i].op = -1;
        f->c[i].async_wgrad = async_wgrad ? async_wgrad[i] : 0;
    }
    f->p.kernels[ph] = &f->gemm;
    f->p.n_kernels[ph] = 1;
    f->p.colls[ph] = f->c;
    f->p.n_colls[ph] = (size_t)n;
    f->k = approf_kernel_seconds(hw, &f->gemm);
    f->coll = approf_collective_cost(hw, &f->c[0]);
}

/* The forward: the pipelined reduce-scatter (proj_fprop, fc2_fprop) holds
 * 20 of 100 SMs, so the GEMM beside it runs at 0.8 of its rate: c seconds
 * of it hide 0.8 c of the GEMM and the phase takes k + 0.2 c. The
 * ring-exchange all-gather (qkv_fprop, fc1_fprop) runs on copy engines:
 * the phase takes k, as before. */
static void test_forward_margin(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    const ApprofCollKind rs = APPROF_COLL_REDUCE_SCATTER, ag = APPROF_COLL_ALL_GATHER;
    const ApprofCollKind both[2] = {APPROF_COLL_ALL_GATHER, APPROF_COLL_REDUCE_SCATTER};
    spec(&hw);
    hw.kernel_launch_overhead = 0;
    phase(&f, &hw, 0, 1, &rs, NULL);
    CU_ASSERT_FATAL(REL(f.k, 0.1));
    CU_ASSERT_FATAL(f.coll > 0.01 && f.coll < 0.5 * f.k);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + 0.2 * f.coll));
    /* no SMs given: hidden whole, as before */
    hw.tp_comm_overlap_sms = 0;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k));
    hw.tp_comm_overlap_sms = 20;
    phase(&f, &hw, 0, 1, &ag, NULL);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k));
    /* both, of equal seconds: 0.2 c lost beside the reduce-scatter only */
    phase(&f, &hw, 0, 2, both, NULL);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + 0.2 * f.coll));
}

/* The pipelined reduce-scatter's last chunk (of 4) is reduced after the
 * last GEMM chunk: c / 4 is never hidden; the other 3 c / 4 hide
 * 0.8 x 3 c / 4 of the GEMM: k + c - 0.6 c. Splits are forward-only (the
 * backward's collectives are bulk or ring exchange). */
static void test_pipeline_splits(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    const ApprofCollKind rs = APPROF_COLL_REDUCE_SCATTER;
    const int grad = 1;
    spec(&hw);
    hw.kernel_launch_overhead = 0;
    hw.tp_comm_overlap_splits = 4;
    phase(&f, &hw, 0, 1, &rs, NULL);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + 0.4 * f.coll));
    hw.tp_comm_overlap_sms = 0; /* the split alone: c / 4 exposed */
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + 0.25 * f.coll));
    hw.tp_comm_overlap_sms = 20;
    phase(&f, &hw, 1, 1, &rs, &grad);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 1), f.k + 0.2 * f.coll));
}

/* The backward: the input's re-gather (qkv_dgrad, fc1_dgrad) and the
 * input gradient's reduce-scatter (qkv_wgrad, fc1_wgrad) are bulk
 * overlaps holding their SMs; the output gradient's all-gather
 * (proj_dgrad, fc2_dgrad) is a ring exchange on copy engines. */
static void test_backward_methods(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    const ApprofCollKind ag = APPROF_COLL_ALL_GATHER, rs = APPROF_COLL_REDUCE_SCATTER;
    const int regather = 0, grad = 1;
    spec(&hw);
    hw.kernel_launch_overhead = 0;
    phase(&f, &hw, 1, 1, &ag, &regather);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 1), f.k + 0.2 * f.coll));
    phase(&f, &hw, 1, 1, &ag, &grad);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 1), f.k));
    phase(&f, &hw, 1, 1, &rs, &grad);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 1), f.k + 0.2 * f.coll));
}

/* A measured NCCL slowdown keeps pricing what is no userbuffers collective
 * (an all-reduce); the userbuffers ones take their SM share instead. */
static void test_measured_slowdown(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    const ApprofCollKind ar = APPROF_COLL_ALL_REDUCE, rs = APPROF_COLL_REDUCE_SCATTER;
    spec(&hw);
    hw.kernel_launch_overhead = 0;
    hw.overlap_gemm_slowdown = 0.25;
    phase(&f, &hw, 0, 1, &ar, NULL);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + 0.25 * f.coll));
    phase(&f, &hw, 0, 1, &rs, NULL);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + 0.2 * f.coll));
}

/* Transformer Engine's amax all-reduce under delayed scaling is issued
 * synchronously between modules (async_op=False; ApprofCollective.blocking,
 * set by sharding/program_fp8.c): no GEMM runs beside it, so the
 * userbuffers overlap hides none of it. The same all-reduce not marked
 * is hidden under the 0.1 s GEMM (no measured slowdown: k); marked, the
 * phase takes k + c. Beside a pipelined reduce-scatter of r seconds:
 * k + c + 0.2 r (only the reduce-scatter hidden, at 0.8 of its rate). */
static void test_blocking_allreduce(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    const ApprofCollKind ar = APPROF_COLL_ALL_REDUCE;
    const ApprofCollKind both[2] = {APPROF_COLL_ALL_REDUCE, APPROF_COLL_REDUCE_SCATTER};
    spec(&hw);
    hw.kernel_launch_overhead = 0;
    hw.overlap_gemm_slowdown = 0.0;
    phase(&f, &hw, 0, 1, &ar, NULL);
    CU_ASSERT_FATAL(f.coll > 0.01 && f.coll < 0.5 * f.k);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k));
    f.c[0].blocking = 1;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + f.coll));
    phase(&f, &hw, 1, 1, &ar, NULL);
    f.c[0].blocking = 1;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 1), f.k + f.coll));
    phase(&f, &hw, 0, 2, both, NULL);
    f.c[0].blocking = 1;
    double rs = approf_collective_cost(&hw, &f.c[1]);
    CU_ASSERT_FATAL(rs > 0.01 && rs < 0.5 * f.k);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + f.coll + 0.2 * rs));
    /* without tp_comm_overlap every collective is serial: k + c either way */
    hw.tp_comm_overlap = 0.0;
    phase(&f, &hw, 0, 1, &ar, NULL);
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + f.coll));
    f.c[0].blocking = 1;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &f.p, 0), f.k + f.coll));
}

/* The keys: parsed, written back, refused with path:line:field when the
 * SMs are not fewer than the device's; the built-in H100's SM count joins
 * its fingerprint only where a margin is priced. */
static void test_spec_keys(void)
{
    ApprofHardwareSpec hw, back, h100;
    char err[512] = "", fp0[128], fp1[128];
    const char *p;

    p = hw_fixture_tmp(REQ "sm_count = 132\ntp_comm_overlap_sms = 16\n"
                           "tp_comm_overlap_splits = 4\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(hw.sm_count, 132);
    CU_ASSERT_EQUAL(hw.tp_comm_overlap_sms, 16);
    CU_ASSERT_EQUAL(hw.tp_comm_overlap_splits, 4);
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(back.tp_comm_overlap_sms, 16);
    approf_hardware_fingerprint(&hw, fp0, sizeof fp0);
    approf_hardware_fingerprint(&back, fp1, sizeof fp1);
    CU_ASSERT_STRING_EQUAL(fp0, fp1);
    back.tp_comm_overlap_splits = 2;
    approf_hardware_fingerprint(&back, fp1, sizeof fp1);
    CU_ASSERT(strcmp(fp0, fp1) != 0);

    /* as many SMs as the device has, or no device count: refused */
    hw_fixture_refused(REQ "sm_count = 132\ntp_comm_overlap_sms = 132\n", 11,
                       "field 'tp_comm_overlap_sms'");
    hw_fixture_refused(REQ "tp_comm_overlap_sms = 16\n", 10, "field 'tp_comm_overlap_sms'");

    /* H100 SXM5: 132 SMs (the Hopper whitepaper); not in its fingerprint
     * while neither a margin nor NCCL's channels are priced; the built-in
     * prices NCCL's channels (nccl_channels), so there it is */
    CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin("h100-sxm", &h100), APPROF_OK);
    CU_ASSERT_EQUAL(h100.sm_count, 132);
    approf_hardware_fingerprint(&h100, fp0, sizeof fp0);
    h100.sm_count = 0;
    approf_hardware_fingerprint(&h100, fp1, sizeof fp1);
    CU_ASSERT(strcmp(fp0, fp1) != 0);
    h100.nccl_channels = 0;
    approf_hardware_fingerprint(&h100, fp0, sizeof fp0);
    h100.sm_count = 132;
    approf_hardware_fingerprint(&h100, fp1, sizeof fp1);
    CU_ASSERT_STRING_EQUAL(fp0, fp1);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"forward: pipelined reduce-scatter's SMs", test_forward_margin},
        {"pipelined reduce-scatter's last chunk", test_pipeline_splits},
        {"backward: bulk and ring exchange", test_backward_methods},
        {"measured NCCL slowdown beside", test_measured_slowdown},
        {"blocking all-reduce: amax, beside no GEMM", test_blocking_allreduce},
        {"spec keys", test_spec_keys},
    };
    int rc = CUNIT_RUN("userbuffers overlap", tests);
    hw_fixture_tmp_remove();
    return rc;
}
