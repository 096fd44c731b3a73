/* SPDX-License-Identifier: Apache-2.0 */
/*
 * zero3_fetch_sync (ApprofHardwareSpec): DeepSpeed's stage-3 coordinator
 * of v0.3.13 to v0.5.10 drains the device at every fetch
 * (fetch_sub_module -> _synchronize_communication ->
 * torch.cuda.synchronize(), deepspeed/runtime/zero/stage3.py at v0.3.13)
 * and before each parameter's gather (_allgather_param,
 * partition_parameters.py). Its spec-file key (parse, range, round trip,
 * fingerprint unchanged when unset) and the replay (hw/zero3_overlap.c),
 * counted by hand on two small phases whose compute (1 s a unit) is longer
 * than any collective (g, r: the collectives' own prices).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "costdb.h"
#include "hardware.h"
#include "stage.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-12 * (fabs(b) + 1.0))
static int zero3_fetch_sync_of(const ApprofHardwareSpec *hw)
{
    return hw->zero3_fetch_sync;
}

/* The key: 0 by default and then absent from the fingerprint and the
 * stored row; 1 read, written back, fingerprinted; 2 refused with
 * path:line: field. */
static void test_spec_key(void)
{
    hw_fixture_flag_key("zero3_fetch_sync", zero3_fetch_sync_of);
}

/* A program of n units (operators 1..n), each with one kernel of 1 s,
 * under DeepSpeed's schedule. */
typedef struct {
    ApprofStageProgram p;
    ApprofKernel k[4];
    ApprofCollective c[4];
} Phase;

static void phase_init(Phase *f, int ph, int n)
{
    memset(f, 0, sizeof *f);
    for (int u = 0; u < n; u++) {
        f->k[u].kind = APPROF_K_ELEMENTWISE;
        f->k[u].bytes = 1.0; /* replaced below: 1 s at the spec's bandwidth */
        f->k[u].op = u + 1;
    }
    f->p.op_begin = 0;
    f->p.op_end = n + 1;
    f->p.kernels[ph] = f->k;
    f->p.n_kernels[ph] = (size_t)n;
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

static void spec(ApprofHardwareSpec *hw)
{
    hw_fixture_round_spec(hw);
    hw->kernel_launch_overhead = 0.0;
    hw->host_overhead = 0.0;
    hw->overlap_gemm_slowdown = 0.0;
    hw->zero3_schedule = APPROF_ZERO3_DEEPSPEED;
}

/* 1 s of compute per kernel on this spec */
static void one_second_kernels(const ApprofHardwareSpec *hw, Phase *f, int ph)
{
    double per_byte = approf_kernel_seconds(hw, &f->k[0]);
    for (size_t i = 0; i < f->p.n_kernels[ph]; i++)
        f->k[i].bytes = 1.0 / per_byte;
    CU_ASSERT_FATAL(NEAR(approf_kernel_seconds(hw, &f->k[0]), 1.0));
}

/* Backward, units 2 then 1: unit 2's gather on demand, unit 1's prefetched
 * as unit 2 starts, unit 2's reduce-scatter issued as its backward ends,
 * unit 1's as the backward ends. Without the barrier unit 2's
 * reduce-scatter runs under unit 1's backward: exposed g (the first
 * gather) + r (the last reduce-scatter). With it unit 1 waits for that
 * reduce-scatter: g + 2r. */
static void test_backward_barrier(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    double g, r;
    spec(&hw);
    phase_init(&f, 1, 2);
    phase_coll(&f, 1, APPROF_COLL_ALL_GATHER, 4e9, 2, 2);
    phase_coll(&f, 1, APPROF_COLL_ALL_GATHER, 4e9, 1, 2);
    phase_coll(&f, 1, APPROF_COLL_REDUCE_SCATTER, 2e9, 2, 2);
    phase_coll(&f, 1, APPROF_COLL_REDUCE_SCATTER, 2e9, 1, 0);
    one_second_kernels(&hw, &f, 1);
    g = approf_collective_cost(&hw, &f.c[0]);
    r = approf_collective_cost(&hw, &f.c[2]);
    CU_ASSERT_FATAL(g > 0.0 && r > 0.0 && 2.0 * g < 1.0 && 2.0 * r < 1.0);

    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 1, NULL), g + r));
    hw.zero3_fetch_sync = 1;
    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 1, NULL), g + 2.0 * r));
}

/* Forward, units 1..3: unit 1 gathers its own on demand and prefetches
 * units 2 and 3 before its compute is launched. Without the barrier both
 * prefetches run under unit 1's compute: exposed g. With it each
 * parameter's gather waits for the one before, so unit 1's compute starts
 * after unit 2's gather: 2g. */
static void test_forward_prefetch_batch(void)
{
    ApprofHardwareSpec hw;
    Phase f;
    double g;
    spec(&hw);
    phase_init(&f, 0, 3);
    phase_coll(&f, 0, APPROF_COLL_ALL_GATHER, 4e9, 1, 1);
    phase_coll(&f, 0, APPROF_COLL_ALL_GATHER, 4e9, 2, 1);
    phase_coll(&f, 0, APPROF_COLL_ALL_GATHER, 4e9, 3, 1);
    one_second_kernels(&hw, &f, 0);
    g = approf_collective_cost(&hw, &f.c[0]);
    CU_ASSERT_FATAL(g > 0.0 && 3.0 * g < 1.0);

    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 0, NULL), g));
    hw.zero3_fetch_sync = 1;
    CU_ASSERT(NEAR(approf_zero3_exposed(&hw, &f.p, 0, NULL), 2.0 * g));
    /* the serial schedule prices every collective whatever the key says */
    hw.zero3_schedule = APPROF_ZERO3_SERIAL;
    CU_ASSERT_EQUAL(approf_zero3_exposed(&hw, &f.p, 0, NULL), 0.0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"spec_key", test_spec_key},
        {"backward_barrier", test_backward_barrier},
        {"forward_prefetch_batch", test_forward_prefetch_batch},
    };
    return CUNIT_RUN("hw-zero3-fetch-sync", tests);
}
