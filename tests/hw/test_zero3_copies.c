/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zero3_gather_copy and zero3_grad_copy (ApprofHardwareSpec): the copies
 * FSDP makes on the compute stream around ZeRO-3's collectives. FSDP2
 * copies each all-gather's output out into the parameters
 * (foreach_all_gather_copy_out in wait_for_unshard) and each unit's
 * gradients into the reduce-scatter's input in the reduce dtype
 * (foreach_reduce_scatter_copy_in); FSDP1 writes one flat gradient (the
 * backward of its flat parameter's split views) and casts it to the
 * reduce dtype on the reduce-scatter's stream (_post_backward_hook).
 * Their spec-file keys and the replay (hw/zero3_overlap.c), counted by
 * hand on two units of 1 s of compute each, under the fsdp2 schedule: a
 * copy of B bytes read and written costs 2B / 1e12 s on the fixture's
 * spec (2000 GB/s at efficiency 0.5, no launch overhead).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "costdb.h"
#include "hardware.h"
#include "stage.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * (fabs(b) + 1.0))
#define GATHER 4e9  /* a unit's gathered parameters, bytes (bf16) */
#define REDUCE 8e9  /* its gradient in the reduce dtype (f32) */
#define BW 1e12     /* the fixture's copy bandwidth, bytes/s */

static int gather_copy_of(const ApprofHardwareSpec *hw)
{
    return hw->zero3_gather_copy;
}

static int grad_copy_of(const ApprofHardwareSpec *hw)
{
    return hw->zero3_grad_copy;
}

/* zero3_gather_copy: a 0/1 key. zero3_grad_copy: 0, 1 and 2 read
 * (2 written back and fingerprinted apart from 1), 3 refused. */
static void test_spec_keys(void)
{
    ApprofHardwareSpec hw, back;
    char err[512] = "", fp1[128], fp2[128];
    const char *p;

    hw_fixture_flag_key("zero3_gather_copy", gather_copy_of);
    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED "zero3_grad_copy = 1\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(grad_copy_of(&hw), 1);
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED "zero3_grad_copy = 2\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(grad_copy_of(&hw), 2);
    approf_hardware_fingerprint(&hw, fp2, sizeof fp2);
    CU_ASSERT(strcmp(fp1, fp2) != 0);
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(grad_copy_of(&back), 2);
    hw_fixture_refused(HW_FIXTURE_REQUIRED "zero3_grad_copy = 3\n", 10, "field 'zero3_grad_copy'");
    hw_fixture_tmp_remove();
}

/* Two units (operators 1 and 2), one kernel of 1 s each, in phase ph. */
typedef struct {
    ApprofStageProgram p;
    ApprofKernel k[2];
    ApprofCollective c[4];
} Phase;

static void spec(ApprofHardwareSpec *hw)
{
    hw_fixture_round_spec(hw);
    hw->kernel_launch_overhead = 0.0;
    hw->host_overhead = 0.0;
    hw->zero3_schedule = APPROF_ZERO3_FSDP2;
}

static void phase_init(const ApprofHardwareSpec *hw, Phase *f, int ph)
{
    memset(f, 0, sizeof *f);
    for (int u = 0; u < 2; u++) {
        f->k[u].kind = APPROF_K_ELEMENTWISE;
        f->k[u].bytes = 1.0;
        f->k[u].op = u + 1;
    }
    double per_byte = approf_kernel_seconds(hw, &f->k[0]);
    for (int u = 0; u < 2; u++)
        f->k[u].bytes = 1.0 / per_byte;
    CU_ASSERT_FATAL(NEAR(approf_kernel_seconds(hw, &f->k[0]), 1.0));
    f->p.op_begin = 0;
    f->p.op_end = 3;
    f->p.kernels[ph] = f->k;
    f->p.n_kernels[ph] = 2;
    f->p.colls[ph] = f->c;
}

static void phase_coll(Phase *f, int ph, ApprofCollKind kind, double bytes, int unit, int issue)
{
    ApprofCollective *c = &f->c[f->p.n_colls[ph]++];
    *c = hw_fixture_coll(kind, bytes, 64, 8);
    c->op = unit;
    c->zero3_unit = unit;
    c->zero3_issue = issue;
}

/* Forward, units 1 then 2: unit 1's gather at the start, unit 2's as unit
 * 1 computes. Exposed: g, the first gather. FSDP2's copy-out adds one
 * copy of each gather's bytes to its unit: g + 2 x 2 GATHER / BW. */
static void test_gather_copy(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    double g, copy = 2.0 * GATHER / BW;
    spec(&hw);
    phase_init(&hw, &f, 0);
    phase_coll(&f, 0, APPROF_COLL_ALL_GATHER, GATHER, 1, 0);
    phase_coll(&f, 0, APPROF_COLL_ALL_GATHER, GATHER, 2, 1);
    g = approf_collective_cost(&hw, &f.c[0]);
    CU_ASSERT_FATAL(g > 0.0 && 2.0 * g < 1.0);

    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 0, NULL), g));
    hw.zero3_gather_copy = 1;
    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 0, NULL), g + 2.0 * copy));
    /* the gradient's copy has nothing to copy in a forward */
    hw.zero3_gather_copy = 0;
    hw.zero3_grad_copy = 1;
    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 0, NULL), g));
    /* the serial schedule prices every collective itself: nothing here */
    hw.zero3_gather_copy = 1;
    hw.zero3_schedule = APPROF_ZERO3_SERIAL;
    CU_ASSERT_EQUAL(approf_zero3_exposed(&hw, &f.p, 0, NULL), 0.0);
}

/* Backward, units 2 then 1: unit 2's gather at the start, unit 1's as
 * unit 2 computes, unit 2's reduce-scatter as its backward ends (hidden
 * under unit 1), unit 1's as the backward ends. Exposed: g + r.
 * FSDP2 (1): each unit also copies its gradient in, reading GATHER and
 * writing REDUCE: g + r + 2 (GATHER + REDUCE) / BW.
 * FSDP1 (2): each unit writes its flat gradient in bf16 (2 GATHER / BW on
 * the compute stream) and casts it to f32 before its reduce-scatter on
 * that stream ((GATHER + REDUCE) / BW more on the last, exposed one):
 * g + r + 2 x 2 GATHER / BW + (GATHER + REDUCE) / BW. */
static void test_grad_copy(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    double g, r;
    spec(&hw);
    phase_init(&hw, &f, 1);
    phase_coll(&f, 1, APPROF_COLL_ALL_GATHER, GATHER, 2, 0);
    phase_coll(&f, 1, APPROF_COLL_ALL_GATHER, GATHER, 1, 2);
    phase_coll(&f, 1, APPROF_COLL_REDUCE_SCATTER, REDUCE, 2, 2);
    phase_coll(&f, 1, APPROF_COLL_REDUCE_SCATTER, REDUCE, 1, 0);
    g = approf_collective_cost(&hw, &f.c[0]);
    r = approf_collective_cost(&hw, &f.c[2]);
    CU_ASSERT_FATAL(g > 0.0 && r > 0.0 && g + r + 0.05 < 1.0);

    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 1, NULL), g + r));
    hw.zero3_grad_copy = 1;
    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 1, NULL),
                   g + r + 2.0 * (GATHER + REDUCE) / BW));
    hw.zero3_grad_copy = 2;
    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 1, NULL),
                   g + r + 2.0 * 2.0 * GATHER / BW + (GATHER + REDUCE) / BW));
    /* the marked collectives' own seconds do not take the copies */
    double marked = 0.0;
    (void)approf_zero3_exposed(&hw, &f.p, 1, &marked);
    CU_ASSERT(NEAR(marked, 2.0 * g + 2.0 * r));
    /* a reduce dtype equal to the parameters': FSDP1 casts nothing */
    f.c[2].bytes = f.c[3].bytes = GATHER;
    r = approf_collective_cost(&hw, &f.c[2]);
    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 1, NULL), g + r + 2.0 * 2.0 * GATHER / BW));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"spec_keys", test_spec_keys},
        {"gather_copy", test_gather_copy},
        {"grad_copy", test_grad_copy},
    };
    return CUNIT_RUN("hw-zero3-copies", tests);
}
