/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GEMM slowdown beside a collective (ApprofHardwareSpec
 * overlap_gemm_slowdown, measured by approf probe on >= 2 GPUs): its
 * spec-file key (parse, range, round trip, fingerprint unchanged when
 * unset) and its pricing (approf_overlap_hidden, the one rule of every
 * overlapped window): counted by hand on round numbers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "collective.h"
#include "costdb.h"
#include "hardware.h"
#include "stage.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b) + 1e-300)
#define REQ "name = t\npeak_tflops_f32 = 20\npeak_tflops_f16 = 300\npeak_tflops_bf16 = 300\n" \
            "memory_gib = 80\nmemory_bandwidth_gbs = 2000\ngpus_per_host = 8\n"                 \
            "intra_host_bandwidth_gbs = 300\n"                                                 \
            "inter_host_bandwidth_gbs = 25\n"

/* The key: parsed, written back, refused out of range with path:line:field,
 * and absent from the fingerprint and the stored row while 0. */
/* The spec REQ + tail is refused, the message naming the file, line `line`
 * and field `field` (case i of its test). */
static void refused_at(size_t i, const char *tail, int line, const char *field)
{
    ApprofHardwareSpec hw;
    char text[1024], err[512] = "", want[1200];
    const char *p;
    snprintf(text, sizeof text, "%s%s", REQ, tail);
    p = hw_fixture_tmp(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_EPARSE);
    snprintf(want, sizeof want, "%s:%d: field '%s'", p, line, field);
    if (strncmp(err, want, strlen(want)) != 0) {
        fprintf(stderr, "\ncase %zu: got '%s', want '%s...'\n", i, err, want);
        CU_FAIL("wrong error message");
    }
    unlink(p);
}

static void test_spec_key(void)
{
    static const char *bad[] = {"overlap_gemm_slowdown = 1.5\n", "overlap_gemm_slowdown = -0.1\n",
                                "overlap_gemm_slowdown = nan\n"};
    ApprofHardwareSpec hw, back;
    CostdbHardware row;
    char err[512] = "", fp0[128], fp1[128];
    const char *p = hw_fixture_tmp(REQ);

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    unlink(p);
    CU_ASSERT_EQUAL(hw.overlap_gemm_slowdown, 0.0); /* default: no slowdown */
    approf_hardware_fingerprint(&hw, fp0, sizeof fp0);
    approf_hardware_to_costdb(&hw, &row);
    CU_ASSERT_PTR_NULL(strstr(row.capabilities, "overlap_gemm_slowdown"));

    p = hw_fixture_tmp(REQ "overlap_gemm_slowdown = 0.125\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    unlink(p);
    CU_ASSERT(REL(hw.overlap_gemm_slowdown, 0.125));
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    CU_ASSERT(strcmp(fp0, fp1) != 0);
    approf_hardware_to_costdb(&hw, &row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row.capabilities, "\"overlap_gemm_slowdown\": 0.125"));
    /* round trip through the writer */
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT(REL(back.overlap_gemm_slowdown, 0.125));
    approf_hardware_fingerprint(&back, fp0, sizeof fp0);
    CU_ASSERT_STRING_EQUAL(fp0, fp1);
    /* out of range: refused, naming the file, the line and the field */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused_at(i, bad[i], 10, "overlap_gemm_slowdown");
}

/* The rule: min((1 - s) comm, window). */
static void test_hidden_rule(void)
{
    ApprofHardwareSpec hw;
    hw_fixture_round_spec(&hw);
    CU_ASSERT(REL(approf_overlap_hidden(&hw, 0.05, 0.1), 0.05));
    CU_ASSERT(REL(approf_overlap_hidden(&hw, 0.2, 0.1), 0.1));
    hw.overlap_gemm_slowdown = 0.2;
    /* 0.05 s of collective beside 0.1 s of GEMM: the GEMM advances 0.8 of
     * its rate for 0.05 s, so the window ends 0.01 s late: 0.04 hidden */
    CU_ASSERT(REL(approf_overlap_hidden(&hw, 0.05, 0.1), 0.04));
    /* a collective longer than the stretched window hides the window whole */
    CU_ASSERT(REL(approf_overlap_hidden(&hw, 0.2, 0.1), 0.1));
    hw.overlap_gemm_slowdown = 1.0; /* nothing advances: serial */
    CU_ASSERT_EQUAL(approf_overlap_hidden(&hw, 0.05, 0.1), 0.0);
    CU_ASSERT_EQUAL(approf_overlap_hidden(&hw, -1.0, 0.1), 0.0);
    CU_ASSERT_EQUAL(approf_overlap_hidden(&hw, 0.05, NAN), 0.0);
    hw.overlap_gemm_slowdown = 0.0; /* an unbounded collective hides the window */
    CU_ASSERT_EQUAL(approf_overlap_hidden(&hw, INFINITY, 0.1), 0.1);
}

/* A phase under tp_comm_overlap: the overlapped window's compute grows by
 * s x the collective's seconds (phase = gemm + ew + s coll). */
static void test_phase(void)
{
    ApprofHardwareSpec hw;
    HwFixturePhase ph;
    double gemm, ew, coll, base;
    hw_fixture_round_spec(&hw);
    hw.kernel_launch_overhead = 0;
    /* GEMM 0.1 s at 300e12 * 0.5, elementwise 0.05 s at 2000e9 * 0.5 */
    hw_fixture_phase(&ph, APPROF_BF16, 15e12);
    gemm = approf_kernel_seconds(&hw, &ph.ks[0]);
    ew = approf_kernel_seconds(&hw, &ph.ks[1]);
    coll = approf_collective_cost(&hw, &ph.c);
    CU_ASSERT_FATAL(REL(gemm, 0.1) && REL(ew, 0.05));
    CU_ASSERT_FATAL(coll > 0.01 && coll < 0.5 * gemm);
    hw.tp_comm_overlap = 1.0;
    base = approf_phase_seconds(&hw, &ph.p, 1);
    CU_ASSERT(REL(base, gemm + ew));
    hw.overlap_gemm_slowdown = 0.25;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &ph.p, 1), gemm + ew + 0.25 * coll));
    /* the spec's fingerprint-free default keeps the old figure */
    hw.overlap_gemm_slowdown = 0.0;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &ph.p, 1), base));
}

/* Gradient sync under the backward (grad_overlap): the hidden part shrinks
 * to (1 - s) of the collective while the window lasts. */
static void test_grad_sync(void)
{
    ApprofHardwareSpec hw;
    HwFixtureGradSync g;
    double sync;
    hw_fixture_round_spec(&hw);
    hw_fixture_grad_sync(&g, 0.2e12, 0.2e12); /* 0.2 s each at 1e12 */
    sync = approf_stage_apply_seconds(&hw, &g.p);
    CU_ASSERT_FATAL(sync > 0.05 && sync < 0.2);
    hw.grad_overlap = 1.0;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p), 0.0));
    hw.overlap_gemm_slowdown = 0.1;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p), 0.1 * sync));
}

/* ZeRO-3's replay (hw/zero3_overlap.c): the forward's first unit computes
 * while its successor's all-gather (issued at the phase's start) runs
 * beside it, so it ends s x the gather's seconds late; nothing else
 * overlaps. And the two views of the model agree: compute + stretch vs
 * comm, and the window's hidden part. */
static void test_zero3_replay(void)
{
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    ApprofKernel ks[2];
    ApprofCollective c;
    double g;
    hw_fixture_round_spec(&hw);
    hw.kernel_launch_overhead = 0;
    hw.zero3_schedule = APPROF_ZERO3_FSDP2;
    memset(&p, 0, sizeof p);
    memset(ks, 0, sizeof ks);
    ks[0].kind = ks[1].kind = APPROF_K_ELEMENTWISE;
    ks[0].bytes = ks[1].bytes = 0.1e12; /* 0.1 s each at 1e12 */
    ks[0].op = 0;
    ks[1].op = 10;
    memset(&c, 0, sizeof c);
    c.kind = APPROF_COLL_ALL_GATHER;
    c.group_size = 8;
    c.hosts = 1;
    c.bytes = 8e9;
    c.op = 10;
    c.zero3_unit = 1;
    c.zero3_issue = 0;
    p.op_begin = 0;
    p.op_end = 11;
    p.kernels[0] = ks;
    p.n_kernels[0] = 2;
    p.colls[0] = &c;
    p.n_colls[0] = 1;
    g = approf_collective_cost(&hw, &c);
    CU_ASSERT_FATAL(g > 0.01 && g < 0.08);
    CU_ASSERT(REL(approf_zero3_exposed(&hw, &p, 0, NULL), 0.0));
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 0), 0.2));
    hw.overlap_gemm_slowdown = 0.2;
    CU_ASSERT(REL(approf_zero3_exposed(&hw, &p, 0, NULL), 0.2 * g));
    CU_ASSERT(REL(approf_phase_seconds(&hw, &p, 0), 0.2 + 0.2 * g));
    /* the two views: end of both = compute + comm - hidden */
    for (double comm = 0.01; comm < 0.5; comm *= 2) {
        double w = 0.1, st = approf_overlap_stretch(&hw, w, comm);
        double end = w + st > comm ? w + st : comm;
        CU_ASSERT(fabs(end - (w + comm - approf_overlap_hidden(&hw, comm, w))) < 1e-15);
    }
    hw.overlap_gemm_slowdown = 0.0;
    CU_ASSERT_EQUAL(approf_overlap_stretch(&hw, 0.1, 0.05), 0.0);
}

/* NCCL's channels (nccl_channels): without a measured figure the GEMM
 * beside a collective loses the SMs of NCCL's CTAs, s = channels /
 * sm_count (hw/cost.c approf_overlap_slowdown); a measured figure wins.
 * The key joins the fingerprint and the stored row (with sm_count) only
 * when given, is refused at or above sm_count, and every overlapped window
 * takes the derived s. The built-ins carry NCCL's ring channels and the
 * whitepapers' SM counts. */
static void test_nccl_channels(void)
{
    static const struct {
        const char *name;
        int channels, sms;
    } cards[] = {{"v100-32g", 12, 80},  {"a100-40g", 24, 108}, {"a100-80g", 24, 108},
                 {"h100-sxm", 24, 132}, {"b200", 32, 148},     {"gb200-nvl72", 32, 148}};
    static const char *bad[] = {"sm_count = 100\nnccl_channels = 100\n", "nccl_channels = 20\n"};
    ApprofHardwareSpec hw, back;
    CostdbHardware row;
    HwFixturePhase ph;
    HwFixtureGradSync g;
    char err[512] = "", fp0[128], fp1[128];
    const char *p = hw_fixture_tmp(REQ "sm_count = 100\n");
    double gemm, ew, coll, sync;

    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    unlink(p);
    CU_ASSERT_EQUAL(hw.nccl_channels, 0); /* default: not given, no slowdown */
    CU_ASSERT_EQUAL(approf_overlap_slowdown(&hw), 0.0);
    approf_hardware_fingerprint(&hw, fp0, sizeof fp0);
    p = hw_fixture_tmp(REQ "sm_count = 100\nnccl_channels = 20\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    unlink(p);
    CU_ASSERT_EQUAL(hw.nccl_channels, 20);
    CU_ASSERT(REL(approf_overlap_slowdown(&hw), 0.2));
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    CU_ASSERT(strcmp(fp0, fp1) != 0);
    approf_hardware_to_costdb(&hw, &row);
    CU_ASSERT_PTR_NOT_NULL(strstr(row.capabilities, "\"nccl_channels\": 20"));
    CU_ASSERT_PTR_NOT_NULL(strstr(row.capabilities, "\"sm_count\": 100"));
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(back.nccl_channels, 20);
    approf_hardware_fingerprint(&back, fp0, sizeof fp0);
    CU_ASSERT_STRING_EQUAL(fp0, fp1);
    /* not fewer than the SMs, or no SM count: refused at the field's line */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        refused_at(i, bad[i], i == 0 ? 11 : 10, "nccl_channels");

    /* every overlapped window takes s = 20 / 100 */
    hw_fixture_round_spec(&hw);
    hw.kernel_launch_overhead = 0;
    hw.sm_count = 100;
    hw.nccl_channels = 20;
    CU_ASSERT(REL(approf_overlap_slowdown(&hw), 0.2));
    hw.overlap_gemm_slowdown = 0.125; /* a measured figure wins */
    CU_ASSERT(REL(approf_overlap_slowdown(&hw), 0.125));
    hw.overlap_gemm_slowdown = 0.0;
    hw_fixture_phase(&ph, APPROF_BF16, 15e12);
    gemm = approf_kernel_seconds(&hw, &ph.ks[0]);
    ew = approf_kernel_seconds(&hw, &ph.ks[1]);
    coll = approf_collective_cost(&hw, &ph.c);
    CU_ASSERT_FATAL(coll > 0.01 && coll < 0.5 * gemm);
    hw.tp_comm_overlap = 1.0;
    CU_ASSERT(REL(approf_phase_seconds(&hw, &ph.p, 1), gemm + ew + 0.2 * coll));
    hw.nccl_channels = 0; /* without it: the whole collective hides, as before */
    CU_ASSERT(REL(approf_phase_seconds(&hw, &ph.p, 1), gemm + ew));
    hw_fixture_round_spec(&hw);
    hw_fixture_grad_sync(&g, 0.2e12, 0.2e12);
    sync = approf_stage_apply_seconds(&hw, &g.p);
    hw.grad_overlap = 1.0;
    hw.sm_count = 100;
    hw.nccl_channels = 20;
    CU_ASSERT(REL(approf_stage_apply_seconds(&hw, &g.p), 0.2 * sync));

    for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(approf_hardware_builtin(cards[i].name, &hw), APPROF_OK);
        CU_ASSERT_EQUAL(hw.nccl_channels, cards[i].channels);
        CU_ASSERT_EQUAL(hw.sm_count, cards[i].sms);
        CU_ASSERT_EQUAL(hw.overlap_gemm_slowdown, 0.0); /* none measured */
        CU_ASSERT(REL(approf_overlap_slowdown(&hw), (double)cards[i].channels / cards[i].sms));
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"spec_key", test_spec_key},
        {"hidden_rule", test_hidden_rule},
        {"phase", test_phase},
        {"grad_sync", test_grad_sync},
        {"zero3_replay", test_zero3_replay},
        {"nccl_channels", test_nccl_channels},
    };
    return CUNIT_RUN("hw-overlap-slowdown", tests);
}
