/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metric_sync_states (ApprofHardwareSpec): torchmetrics' synchronization
 * of each scalar train-metric state across the ranks once a step, as
 * Composer v0.17.2 computes its train metrics (hw/metric_sync.c). Its
 * spec-file key, and its price counted by hand on the round spec (2000
 * GB/s at efficiency 0.5, 4 us a launch): a state over n devices is a
 * barrier (a fill and an all-reduce of 4 bytes), n fills, an all-gather of
 * n 8-byte scalars, n copies, the stack and the sum; the step's apply time
 * takes it, so the launches grow linearly with n.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "hardware.h"
#include "stage.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-9 * (fabs(b) + 1.0))

static int states_of(const ApprofHardwareSpec *hw)
{
    return hw->metric_sync_states;
}

/* 0 to 64 read, written back and fingerprinted apart from 0; 65 refused */
static void test_spec_key(void)
{
    ApprofHardwareSpec hw, back, none;
    char err[512] = "", fp0[128], fp4[128];
    const char *p;

    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &none, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(states_of(&none), 0);
    p = hw_fixture_tmp(HW_FIXTURE_REQUIRED "metric_sync_states = 4\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(approf_hardware_load(p, &hw, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(states_of(&hw), 4);
    approf_hardware_fingerprint(&none, fp0, sizeof fp0);
    approf_hardware_fingerprint(&hw, fp4, sizeof fp4);
    CU_ASSERT(strcmp(fp0, fp4) != 0);
    CU_ASSERT_EQUAL(hw_fixture_reload(&hw, &back, err, sizeof err), APPROF_OK);
    CU_ASSERT_EQUAL(states_of(&back), 4);
    hw_fixture_refused(HW_FIXTURE_REQUIRED "metric_sync_states = 65\n", 10,
                       "field 'metric_sync_states'");
    hw_fixture_tmp_remove();
}

/* one state over hosts x gpus devices, by hand */
static double one_state(const ApprofHardwareSpec *hw, int hosts, int gpus)
{
    const double stream = 2000e9 * 0.5, launch = 4e-6, n = (double)(hosts * gpus);
    ApprofCollective ar = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, 4.0, hosts * gpus, hosts);
    ApprofCollective ag = hw_fixture_coll(APPROF_COLL_ALL_GATHER, 8.0 * n, hosts * gpus, hosts);
    ar.op = ag.op = -1;
    return (4.0 / stream + launch) + approf_collective_cost(hw, &ar) /* barrier */
           + n * (8.0 / stream + launch)                                /* fills */
           + approf_collective_cost(hw, &ag)                            /* all-gather */
           + n * (16.0 / stream + launch)                               /* copies */
           + (16.0 * n / stream + launch) + (8.0 * n / stream + launch); /* stack, sum */
}

static void test_price(void)
{
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    double plain, t8, t64;

    hw_fixture_round_spec(&hw);
    hw.kernel_launch_overhead = 4e-6;
    hw.intra_host_latency = 3e-6;
    hw.inter_host_latency = 10e-6;
    memset(&p, 0, sizeof p);
    p.mesh_hosts = 1;
    p.mesh_gpus = 8;
    plain = approf_stage_apply_seconds(&hw, &p);
    CU_ASSERT(NEAR(plain, 0.0));
    CU_ASSERT(NEAR(approf_metric_sync_seconds(&hw, &p), 0.0)); /* no field, nothing */

    hw.metric_sync_states = 4;
    t8 = approf_metric_sync_seconds(&hw, &p);
    CU_ASSERT(NEAR(t8, 4 * one_state(&hw, 1, 8)));
    /* the step's apply time takes it */
    CU_ASSERT(NEAR(approf_stage_apply_seconds(&hw, &p), plain + t8));
    /* 8 hosts of 8: 64 fills and 64 copies a state, the collectives cross hosts */
    p.mesh_hosts = 8;
    t64 = approf_metric_sync_seconds(&hw, &p);
    CU_ASSERT(NEAR(t64, 4 * one_state(&hw, 8, 8)));
    /* the launches alone grow by 2 x 56 x 4 us a state */
    CU_ASSERT(t64 - t8 > 4 * 2 * 56 * 4e-6);
    /* one device: nothing to synchronize */
    p.mesh_hosts = 1;
    p.mesh_gpus = 1;
    CU_ASSERT(NEAR(approf_metric_sync_seconds(&hw, &p), 0.0));
    CU_ASSERT(NEAR(approf_stage_apply_seconds(&hw, &p), 0.0));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"spec_key", test_spec_key},
        {"price", test_price},
    };
    return CUNIT_RUN("hw-metric-sync", tests);
}
