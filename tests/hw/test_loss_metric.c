/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loss_metric_passes (ApprofHardwareSpec): Composer's train metrics, each
 * a cross-entropy over all the logits outside autograd after every
 * micro-batch's backward, in f32 under autocast (hw/loss_metric.c). Its
 * spec-file key, and its price counted by hand on the round spec (2000
 * GB/s at efficiency 0.5): a pass over E 16-bit logits moves 6E (the f32
 * copy) + 8E (log_softmax) bytes, over f32 logits 8E; only a
 * cross-entropy's backward kernel takes it.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "hardware.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * (fabs(b) + 1.0))

static int passes_of(const ApprofHardwareSpec *hw)
{
    return hw->loss_metric_passes;
}

/* 0 to 8 read, written back and fingerprinted apart from 0; 9 refused */
static void test_spec_key(void)
{
    ApprofHardwareSpec hw, back, none;
    char err[512] = "", fp0[128], fp2[128];
    const char *p;

    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &none, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(passes_of(&none), 0);
    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED "loss_metric_passes = 2\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(passes_of(&hw), 2);
    approf_hardware_fingerprint(&none, fp0, sizeof fp0);
    approf_hardware_fingerprint(&hw, fp2, sizeof fp2);
    CU_ASSERT(strcmp(fp0, fp2) != 0);
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(passes_of(&back), 2);
    hw_fixture_refused(HW_FIXTURE_REQUIRED "loss_metric_passes = 9\n", 10,
                       "field 'loss_metric_passes'");
    hw_fixture_tmp_remove();
}

static void test_price(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    const double e = 1 << 24, stream = 2000e9 * 0.5;
    double plain_b, plain_f;

    hw_fixture_round_spec(&hw);
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_REDUCTION;
    k.dtype = APPROF_BF16;
    k.elements = (int64_t)e;
    k.bytes = 4 * e;
    k.loss = 2;
    plain_b = approf_kernel_seconds(&hw, &k);
    CU_ASSERT(NEAR(plain_b, 4 * e / stream));
    k.loss = 1;
    plain_f = approf_kernel_seconds(&hw, &k);

    hw.loss_metric_passes = 2;
    k.loss = 2; /* the backward takes the passes */
    CU_ASSERT(NEAR(approf_kernel_seconds(&hw, &k), plain_b + 2 * (6 + 8) * e / stream));
    CU_ASSERT(NEAR(approf_loss_metric_seconds(&hw, &k), 2 * (6 + 8) * e / stream));
    hw.kernel_launch_overhead = 1e-6; /* two kernels a pass */
    CU_ASSERT(NEAR(approf_loss_metric_seconds(&hw, &k), 2 * ((6 + 8) * e / stream + 2e-6)));
    hw.kernel_launch_overhead = 0;
    k.loss = 1; /* the forward does not */
    CU_ASSERT(NEAR(approf_kernel_seconds(&hw, &k), plain_f));
    k.loss = 0; /* nor a kernel that is no loss */
    CU_ASSERT(NEAR(approf_loss_metric_seconds(&hw, &k), 0.0));
    k.loss = 2;
    k.dtype = APPROF_F32; /* f32 logits: nothing to copy */
    CU_ASSERT(NEAR(approf_loss_metric_seconds(&hw, &k), 2 * 8 * e / stream));
    k.dtype = APPROF_BF16;
    hw.loss_f32 = 1; /* on top of Megatron's f32 loss as well */
    CU_ASSERT(NEAR(approf_loss_metric_seconds(&hw, &k), 2 * (6 + 8) * e / stream));
    hw.loss_f32 = 0;
    hw.loss_metric_passes = 0;
    CU_ASSERT(NEAR(approf_kernel_seconds(&hw, &k), plain_b));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"spec_key", test_spec_key},
        {"price", test_price},
    };
    return CUNIT_RUN("hw-loss-metric", tests);
}
