/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --parallel ...,moe_a2a_overlap=1, Megatron-Core's
 * overlap_moe_expert_parallel_comm (docs/expert-parallel.md, "The MoE
 * all-to-all overlap"), counted by hand: its knob and refusals, the
 * micro-batches in flight (one more warm-up forward under the interleaved
 * schedule, two without pipelining) and the all-to-all seconds it hides.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "cunit_run.h"
#include "costdb.h"
#include "expert_parallel.h"
#include "schedule.h"
#include "session.h"

static void test_parse(void)
{
    ApsolveParallel par;
    char err[300];
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=8,tp=1,pp=2,vpp=24,ep=8,moe_a2a_overlap=1", &par,
                                           err, sizeof err), 0);
    CU_ASSERT_EQUAL(par.moe_a2a_overlap, 1);
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=8,tp=1,pp=2,vpp=24,ep=8", &par, err, sizeof err),
                    0);
    CU_ASSERT_EQUAL(par.moe_a2a_overlap, 0);
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=8,tp=1,pp=1,ep=8,moe_a2a_overlap=1", &par, err,
                                           sizeof err), 0);
    /* Megatron-Core's refusals */
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=8,tp=1,pp=2,vpp=24,moe_a2a_overlap=1", &par, err,
                                           sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "ep >= 2"));
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=8,tp=1,pp=2,ep=8,moe_a2a_overlap=1", &par, err,
                                           sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "vpp >= 2"));
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=8,tp=1,pp=2,vpp=2,ep=8,recompute=full,"
                                           "moe_a2a_overlap=1", &par, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "recompute=full"));
    CU_ASSERT_EQUAL(apsolve_parallel_parse("dp=8,tp=1,pp=1,ep=8,moe_a2a_overlap=2", &par, err,
                                           sizeof err), -1);
}

static void test_in_flight(void)
{
    /* issue 33's held-out row mb2511-qwen3-30b-a3b-ep8: pp 2, vpp 24, 32
     * micro-batches. Rank 0: warm-up 2 (2 - 0 - 1) + 23 x 2 = 48 chunks,
     * one more for the overlap, plus the steady forward: 50 of 24 a
     * micro-batch (49 without); rank 1: 46 + 1 + 1 = 48 (47 without) */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight_a2a(APSOLVE_SCHEDULE_INTERLEAVED, 24, 32, 2,
                                                          0, 1), 50.0 / 24, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight_a2a(APSOLVE_SCHEDULE_INTERLEAVED, 24, 32, 2,
                                                          1, 1), 48.0 / 24, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight_a2a(APSOLVE_SCHEDULE_INTERLEAVED, 24, 32, 2,
                                                          0, 0), 49.0 / 24, 1e-12);
    /* the stage rule takes it too, under either memory rule */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_stage_in_flight_a2a(APSOLVE_MEMORY_EXACT,
                                                       APSOLVE_SCHEDULE_INTERLEAVED, 24, 32, 2, 1,
                                                       1), 2.0, 1e-12);
    /* capped at the B vpp chunks there are: pp 4, vpp 2, B 4: 2 x 3 + 4 + 1
     * + 1 = 12 > 8 */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight_a2a(APSOLVE_SCHEDULE_INTERLEAVED, 2, 4, 4,
                                                          0, 1), 4.0, 1e-12);
    /* no pipelining: micro-batch i + 1's forward beside i's backward */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight_a2a(APSOLVE_SCHEDULE_1F1B, 1, 8, 1, 0, 1),
                           2.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight_a2a(APSOLVE_SCHEDULE_1F1B, 1, 1, 1, 0, 1),
                           1.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_stage_in_flight_a2a(APSOLVE_MEMORY_ALPA, APSOLVE_SCHEDULE_1F1B,
                                                       1, 8, 1, 0, 1), 2.0, 0);
    /* Megatron-Core runs it on no other schedule */
    CU_ASSERT(isnan(apsolve_schedule_in_flight_a2a(APSOLVE_SCHEDULE_1F1B, 1, 8, 2, 0, 1)));
    CU_ASSERT(isnan(apsolve_schedule_in_flight_a2a(APSOLVE_SCHEDULE_GPIPE, 1, 8, 1, 0, 1)));
}

static void test_hidden(void)
{
    ApsolveEpStage x;
    double hf = -1, hb = -1;
    memset(&x, 0, sizeof x);
    x.costs[0] = (ApsolveEpCost){"token all-to-all", 0, 8, 4, 4, 0, 0.030, 0.050};
    x.costs[1] = (ApsolveEpCost){"probabilities all-to-all", 0, 8, 2, 2, 0, 0.002, 0.004};
    x.costs[2] = (ApsolveEpCost){"sorts by local expert", 0, 1, 2, 2, 0, 0.100, 0.100};
    x.n_costs = 3;
    /* the forward's 0.032 s under a backward of 1 s: all hidden; the
     * backward's 0.054 s under a forward of 0.04 s: 0.04 hidden, 0.014
     * exposed; the sorts are no all-to-all */
    apsolve_ep_a2a_hidden(&x, 0.04, 1.0, &hf, &hb);
    CU_ASSERT_DOUBLE_EQUAL(hf, 0.032, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(hb, 0.04, 1e-15);
    apsolve_ep_a2a_hidden(&x, 0.5, 0.02, &hf, &hb);
    CU_ASSERT_DOUBLE_EQUAL(hf, 0.02, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(hb, 0.054, 1e-15);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"knob and refusals", test_parse},
        {"in flight by hand", test_in_flight},
        {"all-to-all hidden by hand", test_hidden},
    };
    return CUNIT_RUN("solver-ep-a2a-overlap", tests);
}
