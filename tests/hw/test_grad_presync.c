/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grad_presync_passes (ApprofHardwareSpec): the passes Megatron-Core r0.8
 * makes over each gradient bucket on the compute stream before its
 * reduce-scatter or all-reduce (`Bucket.start_grad_sync`,
 * megatron/core/distributed/param_and_grad_buffer.py at core_r0.8.0: the
 * NaN check's norm reads it, the 1/dp scaling reads and writes it), priced
 * in the apply step (hw/grad_presync.c). Its spec-file key, and its price
 * counted by hand on the round spec (2000 GB/s at efficiency 0.5, 4 us a
 * launch): 3 passes over a bf16 model's gradients reduced in f32 are 3 x
 * (2 x the collective's bf16 bytes / 1000 GB/s + 4 us); nothing for the
 * ZeRO all-gather of parameters, a group of one, or without the field.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "hardware.h"
#include "stage.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * (fabs(b) + 1.0))

/* 0 to 8 read, written back and fingerprinted apart from 0; 9 refused */
static void test_spec_key(void)
{
    ApprofHardwareSpec hw, back, none;
    char err[512] = "", fp0[128], fp3[128];
    const char *p;

    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &none, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(none.grad_presync_passes, 0);
    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED "grad_presync_passes = 3\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(hw.grad_presync_passes, 3);
    approf_hardware_fingerprint(&none, fp0, sizeof fp0);
    approf_hardware_fingerprint(&hw, fp3, sizeof fp3);
    CU_ASSERT(strcmp(fp0, fp3) != 0);
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(back.grad_presync_passes, 3);
    hw_fixture_refused(HW_FIXTURE_REQUIRED "grad_presync_passes = 9\n", 10,
                       "field 'grad_presync_passes'");
    hw_fixture_tmp_remove();
}

static void test_price(void)
{
    const double stream = 2000e9 * 0.5, launch = 4e-6, S = 3e9; /* bf16 gradient bytes */
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    double plain, t;

    hw_fixture_round_spec(&hw);
    hw.kernel_launch_overhead = launch;
    hw.grad_reduce_bytes = 4.0; /* Megatron's f32 main_grad of a bf16 model */
    memset(&p, 0, sizeof p);
    p.dtype = APPROF_BF16;
    p.mesh_hosts = 6;
    p.mesh_gpus = 8;
    /* ZeRO-1 (the distributed optimizer): reduce-scatter, then all-gather */
    p.apply_colls[0] = hw_fixture_coll(APPROF_COLL_REDUCE_SCATTER, S, 48, 6);
    p.apply_colls[1] = hw_fixture_coll(APPROF_COLL_ALL_GATHER, S, 48, 6);
    p.n_apply_colls = 2;
    plain = approf_stage_apply_seconds(&hw, &p);
    CU_ASSERT(plain > 0.0);
    CU_ASSERT(NEAR(approf_grad_presync_seconds(&hw, &p), 0.0)); /* no field, nothing */

    hw.grad_presync_passes = 3;
    t = approf_grad_presync_seconds(&hw, &p);
    /* the reduce-scatter's gradients at f32: 2 S bytes, three passes */
    CU_ASSERT(NEAR(t, 3 * (2.0 * S / stream + launch)));
    CU_ASSERT(NEAR(t, 0.018012));
    /* the step's apply time takes it */
    CU_ASSERT(NEAR(approf_stage_apply_seconds(&hw, &p), plain + t));
    /* gradients reduced in the model's width: S bytes */
    hw.grad_reduce_bytes = 0.0;
    CU_ASSERT(NEAR(approf_grad_presync_seconds(&hw, &p), 3 * (S / stream + launch)));
    hw.grad_reduce_bytes = 4.0;
    /* ZeRO-0: one all-reduce, the same passes */
    p.apply_colls[0].kind = APPROF_COLL_ALL_REDUCE;
    p.n_apply_colls = 1;
    CU_ASSERT(NEAR(approf_grad_presync_seconds(&hw, &p), t));
    /* the all-gather of parameters alone (no gradient reduction): nothing */
    p.apply_colls[0] = hw_fixture_coll(APPROF_COLL_ALL_GATHER, S, 48, 6);
    CU_ASSERT(NEAR(approf_grad_presync_seconds(&hw, &p), 0.0));
    /* one replica: no reduction, nothing */
    p.apply_colls[0] = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, S, 1, 1);
    CU_ASSERT(NEAR(approf_grad_presync_seconds(&hw, &p), 0.0));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"spec_key", test_spec_key},
        {"price", test_price},
    };
    return CUNIT_RUN("hw-grad-presync", tests);
}
