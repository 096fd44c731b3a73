/* SPDX-License-Identifier: Apache-2.0 */
/*
 * param_step_kernels and ddp_grad_copies (ApprofHardwareSpec): the
 * per-parameter kernels of an eager PyTorch step (hw/param_loop.c):
 * torch.optim.SGD's loop and zero_grad, a launch each, and PyTorch DDP's
 * copy of each gradient into its bucket and back on a data-parallel stage.
 * Their spec-file keys, and their price counted by hand on the round spec
 * (2000 GB/s at efficiency 0.5, 4 us a launch); the step's apply time takes
 * it.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "hardware.h"
#include "stage.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * (fabs(b) + 1.0))

static int copies_of(const ApprofHardwareSpec *hw)
{
    return hw->ddp_grad_copies;
}

/* both keys read, written back and fingerprinted apart from 0; out of range refused */
static void test_spec_keys(void)
{
    ApprofHardwareSpec hw, back, none;
    char err[512] = "", fp0[128], fp1[128];
    const char *p;

    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &none, err, sizeof err), APPROF_OK);
    CU_ASSERT(NEAR(none.param_step_kernels, 0.0));
    CU_ASSERT_EQUAL(copies_of(&none), 0);
    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED "param_step_kernels = 4.5\nddp_grad_copies = 2\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT(NEAR(hw.param_step_kernels, 4.5));
    CU_ASSERT_EQUAL(copies_of(&hw), 2);
    approf_hardware_fingerprint(&none, fp0, sizeof fp0);
    approf_hardware_fingerprint(&hw, fp1, sizeof fp1);
    CU_ASSERT(strcmp(fp0, fp1) != 0);
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT(NEAR(back.param_step_kernels, 4.5));
    CU_ASSERT_EQUAL(copies_of(&back), 2);
    hw_fixture_refused(HW_FIXTURE_REQUIRED "ddp_grad_copies = 3\n", 10,
                       "field 'ddp_grad_copies'");
    hw_fixture_refused(HW_FIXTURE_REQUIRED "param_step_kernels = 65\n", 10,
                       "field 'param_step_kernels'");
    hw_fixture_tmp_remove();
}

static void test_price(void)
{
    const double stream = 2000e9 * 0.5, launch = 4e-6;
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    ApprofPlacement pl[4];
    double plain, t1, t8;

    hw_fixture_round_spec(&hw);
    hw.kernel_launch_overhead = launch;
    memset(&p, 0, sizeof p);
    memset(pl, 0, sizeof pl);
    /* three parameter tensors of 1, 2 and 3 MB (f16) and a stage input */
    for (int i = 0; i < 3; i++) {
        pl[i].role = APPROF_ROLE_PARAM;
        pl[i].local_bytes = (int64_t)(i + 1) * 1000000;
    }
    pl[3].role = APPROF_ROLE_INPUT;
    pl[3].local_bytes = 99000000;
    p.placements = pl;
    p.n_placements = 4;
    p.dtype = APPROF_F16;
    p.mesh_hosts = 1;
    p.mesh_gpus = 1;
    plain = approf_stage_apply_seconds(&hw, &p);
    CU_ASSERT(NEAR(approf_param_loop_seconds(&hw, &p), 0.0)); /* no field, nothing */

    /* one device: 3 tensors x 4.5 launches, no DDP copies */
    hw.param_step_kernels = 4.5;
    hw.ddp_grad_copies = 2;
    t1 = approf_param_loop_seconds(&hw, &p);
    CU_ASSERT(NEAR(t1, 3 * 4.5 * launch));
    CU_ASSERT(NEAR(approf_stage_apply_seconds(&hw, &p), plain + t1));

    /* eight devices all-reducing the gradients: two copies a tensor, each
     * reading and writing it, in f32 with grad_reduce_bytes 4 */
    p.mesh_gpus = 8;
    p.n_apply_colls = 1;
    p.apply_colls[0] = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, 6e6, 8, 1);
    hw.grad_reduce_bytes = 4.0;
    t8 = approf_param_loop_seconds(&hw, &p);
    CU_ASSERT(NEAR(t8, 3 * 4.5 * launch + 2 * (3 * launch + 2.0 * 2.0 * 6e6 / stream)));
    {
        ApprofHardwareSpec off = hw;
        off.param_step_kernels = 0.0;
        off.ddp_grad_copies = 0;
        CU_ASSERT(NEAR(approf_stage_apply_seconds(&hw, &p),
                       approf_stage_apply_seconds(&off, &p) + t8));
    }
    /* without the step's kernels, the copies alone */
    hw.param_step_kernels = 0.0;
    CU_ASSERT(NEAR(approf_param_loop_seconds(&hw, &p), 2 * (3 * launch + 4.0 * 6e6 / stream)));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"spec_keys", test_spec_keys},
        {"price", test_price},
    };
    return CUNIT_RUN("hw-param-loop", tests);
}
