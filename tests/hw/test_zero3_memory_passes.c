/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory passes DeepSpeed's stage 3 of v0.3.13 runs in series with a
 * ZeRO-3 collective (hw/cost.c, docs/validation.md "ZeRO-3 at scale: NCCL
 * of 2021 and the memory passes around each collective"), counted by hand
 * on the round spec (2000 GB/s at efficiency 0.5: 1e12 B/s) with a 4 us
 * launch:
 * - under zero3_rank_copies, a marked all-gather also fills its whole
 *   buffer once (_allgather_param's torch.zeros): 4e-6 + bytes / 1e12,
 *   beside the rank copies (n x (4e-6 + 2 bytes / n / 1e12));
 *   a reduce-scatter gets the copies only;
 * - under zero3_grad_all_reduce, a marked all-reduce also flattens,
 *   divides and copies back its bucket (allreduce_bucket,
 *   allreduce_and_copy): 3 x (4e-6 + 2 bytes / 1e12);
 * - an unmarked collective, or a flag that does not name the kind, adds
 *   nothing.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "costdb.h"
#include "hardware.h"

#include "cunit_run.h"
#include "hw_fixture.h"

#define LAUNCH 4e-6
#define RATE 1e12 /* 2000 GB/s x 0.5 */
#define BYTES 1.6e9
#define N 16

static void spec(ApprofHardwareSpec *hw, int rank_copies, int grad_all_reduce)
{
    hw_fixture_round_spec(hw);
    hw->kernel_launch_overhead = LAUNCH;
    hw->zero3_schedule = APPROF_ZERO3_DEEPSPEED;
    hw->zero3_rank_copies = rank_copies;
    hw->zero3_grad_all_reduce = grad_all_reduce;
}

/* approf_collective_cost of c under the flags, less its cost without them */
static double added(const ApprofCollective *c, int rank_copies, int grad_all_reduce)
{
    ApprofHardwareSpec plain, with;
    spec(&plain, 0, 0);
    spec(&with, rank_copies, grad_all_reduce);
    return approf_collective_cost(&with, c) - approf_collective_cost(&plain, c);
}

static ApprofCollective marked(ApprofCollKind kind)
{
    ApprofCollective c = hw_fixture_coll(kind, BYTES, N, 2);
    c.zero3_unit = 1;
    return c;
}

static void test_gather_fill(void)
{
    ApprofCollective ag = marked(APPROF_COLL_ALL_GATHER);
    double copies = N * (LAUNCH + 2.0 * BYTES / N / RATE);
    double fill = LAUNCH + BYTES / RATE;
    CU_ASSERT_DOUBLE_EQUAL(added(&ag, 1, 0), copies + fill, 1e-12);
    /* the reduce-scatter of the list form has the copies, no fill */
    ApprofCollective rs = marked(APPROF_COLL_REDUCE_SCATTER);
    CU_ASSERT_DOUBLE_EQUAL(added(&rs, 1, 0), copies, 1e-12);
    /* zero3_grad_all_reduce alone does not touch a gather */
    CU_ASSERT_DOUBLE_EQUAL(added(&ag, 0, 1), 0.0, 1e-15);
}

static void test_all_reduce_passes(void)
{
    ApprofCollective ar = marked(APPROF_COLL_ALL_REDUCE);
    CU_ASSERT_DOUBLE_EQUAL(added(&ar, 0, 1), 3.0 * (LAUNCH + 2.0 * BYTES / RATE), 1e-12);
    /* the list form's copies are not the all-reduce's */
    CU_ASSERT_DOUBLE_EQUAL(added(&ar, 1, 0), 0.0, 1e-15);
}

static void test_unmarked(void)
{
    ApprofCollective ag = hw_fixture_coll(APPROF_COLL_ALL_GATHER, BYTES, N, 2);
    ApprofCollective ar = hw_fixture_coll(APPROF_COLL_ALL_REDUCE, BYTES, N, 2);
    CU_ASSERT_DOUBLE_EQUAL(added(&ag, 1, 1), 0.0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(added(&ar, 1, 1), 0.0, 1e-15);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"zero3_rank_copies: a gather also fills its buffer", test_gather_fill},
        {"zero3_grad_all_reduce: flatten, divide, copy back", test_all_reduce_passes},
        {"unmarked collectives: nothing added", test_unmarked},
    };
    return CUNIT_RUN("hw_zero3_memory_passes", tests);
}
