/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of reports/schedule.c: iteration time against the closed form
 * (B + S - 1)(t_f + t_b) for uniform stages without transfers (GPipe and
 * 1F1B), bubble (S - 1) / (B + S - 1), peak in-flight micro-batches
 * (1F1B: min(S - s, B); GPipe: B), dependencies respected with transfers,
 * generated send/recv programs free of deadlock, hand-built orders with a
 * wait-for cycle reported as deadlocks, and the micro-batch warnings.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "apreport.h"

static void test_closed_form(void)
{
    double f[8], b[8];
    for (int kind = 0; kind < 2; kind++)
        for (int S = 1; S <= 6; S++)
            for (int B = 1; B <= 9; B++) {
                ApreportSchedule *s = NULL;
                for (int k = 0; k < S; k++)
                    f[k] = 0.25, b[k] = 0.5;
                ApreportPipeline p = {S, B, f, b, NULL};
                CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, (ApreportScheduleKind)kind, &s), 0);
                CU_ASSERT_DOUBLE_EQUAL(s->iteration_time, (B + S - 1) * 0.75, 1e-12);
                CU_ASSERT_DOUBLE_EQUAL(s->bubble_fraction, (double)(S - 1) / (B + S - 1), 1e-12);
                for (int k = 0; k < S; k++) {
                    int want = kind == APREPORT_SCHED_1F1B ? (S - k < B ? S - k : B) : B;
                    CU_ASSERT_EQUAL(s->peak_in_flight[k], want);
                    CU_ASSERT_DOUBLE_EQUAL(s->busy[k], B * 0.75, 1e-12);
                }
                apreport_schedule_free(&s);
                CU_ASSERT_PTR_NULL(s);
            }
}

/* With unequal stages and transfers every pass starts after its input. */
static void test_dependencies(void)
{
    double f[3] = {0.1, 0.3, 0.2}, b[3] = {0.2, 0.5, 0.4}, x[2] = {0.05, 0.125};
    for (int kind = 0; kind < 2; kind++) {
        ApreportSchedule *s = NULL;
        ApreportPipeline p = {3, 5, f, b, x};
        double fe[3][5], be[3][5], fs[3][5], bs[3][5];
        CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, (ApreportScheduleKind)kind, &s), 0);
        for (size_t i = 0; i < s->n_events; i++) {
            const ApreportEvent *e = &s->events[i];
            if (e->kind == APREPORT_EV_FWD)
                fs[e->stage][e->micro_batch] = e->start, fe[e->stage][e->micro_batch] = e->end;
            if (e->kind == APREPORT_EV_BWD)
                bs[e->stage][e->micro_batch] = e->start, be[e->stage][e->micro_batch] = e->end;
        }
        for (int k = 0; k < 3; k++)
            for (int m = 0; m < 5; m++) {
                if (k > 0)
                    CU_ASSERT(fs[k][m] >= fe[k - 1][m] + x[k - 1] - 1e-12);
                if (k < 2)
                    CU_ASSERT(bs[k][m] >= be[k + 1][m] + x[k] - 1e-12);
                CU_ASSERT(bs[k][m] >= fe[k][m] - 1e-12);
            }
        /* The last backward of stage 0 ends the iteration. */
        CU_ASSERT_DOUBLE_EQUAL(s->iteration_time, be[0][4] > fe[2][4] ? be[0][4] : fe[2][4], 1e-12);
        /* Lower bound: the slowest stage is busy B (f + b) = 4 s. */
        CU_ASSERT(s->iteration_time >= 4.0);
        ApreportCommProgram *prog = NULL;
        ApreportDeadlock d;
        CU_ASSERT_EQUAL_FATAL(apreport_comm_program(s, &prog), 0);
        CU_ASSERT_EQUAL(prog->n_ops[0], 10u);  /* 5 sends, 5 receives */
        CU_ASSERT_EQUAL(prog->n_ops[1], 20u);
        CU_ASSERT_EQUAL(apreport_deadlock_check(prog, &d), 0);
        CU_ASSERT_FALSE(d.deadlocked);
        CU_ASSERT_EQUAL(d.pair_src, -1);
        apreport_comm_program_free(&prog);
        apreport_schedule_free(&s);
    }
}

static void test_deadlock_cycle(void)
{
    /* Two stages that both send first: each waits on the other. */
    ApreportCommOp s0[] = {{1, 1, 0}, {0, 1, 1}}, s1[] = {{1, 0, 1}, {0, 0, 0}};
    ApreportCommOp *ops[] = {s0, s1};
    size_t n[] = {2, 2};
    ApreportCommProgram p = {2, ops, n};
    ApreportDeadlock d;
    CU_ASSERT_EQUAL(apreport_deadlock_check(&p, &d), 0);
    CU_ASSERT_TRUE(d.deadlocked);
    CU_ASSERT_EQUAL(d.cycle_len, 2);
    CU_ASSERT(strstr(d.message, "cycle") != NULL);
    /* Swapping stage 1's order resolves it. */
    ApreportCommOp t1[] = {{0, 0, 0}, {1, 0, 1}};
    ops[1] = t1;
    CU_ASSERT_EQUAL(apreport_deadlock_check(&p, &d), 0);
    CU_ASSERT_FALSE(d.deadlocked);

    /* Three stages in a ring where each pair agrees but the ring does not:
     * 0 recv from 2 then send to 1; 1 recv from 0 then send to 2; 2 recv
     * from 1 then send to 0. */
    ApreportCommOp r0[] = {{0, 2, 5}, {1, 1, 3}}, r1[] = {{0, 0, 3}, {1, 2, 4}},
                   r2[] = {{0, 1, 4}, {1, 0, 5}};
    ApreportCommOp *rops[] = {r0, r1, r2};
    size_t rn[] = {2, 2, 2};
    ApreportCommProgram ring = {3, rops, rn};
    CU_ASSERT_EQUAL(apreport_deadlock_check(&ring, &d), 0);
    CU_ASSERT_TRUE(d.deadlocked);
    CU_ASSERT_EQUAL(d.cycle_len, 3);
    CU_ASSERT_EQUAL(d.pair_src, -1);
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < d.cycle_len; i++)
        seen[d.cycle[i]]++;
    CU_ASSERT(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);

    /* A receive nobody sends: stuck without a cycle. */
    ApreportCommOp u0[] = {{0, 1, 7}}, u1[] = {{0, 0, 8}};
    ApreportCommOp *uops[] = {u0, u1};
    size_t un[] = {1, 0};
    ApreportCommProgram unm = {2, uops, un};
    CU_ASSERT_EQUAL(apreport_deadlock_check(&unm, &d), 0);
    CU_ASSERT_TRUE(d.deadlocked);
    CU_ASSERT_EQUAL(d.cycle_len, 0);
    CU_ASSERT_EQUAL(d.pair_src, 0);

    /* A bad peer is an argument error. */
    ApreportCommOp bad[] = {{1, 0, 0}};
    ApreportCommOp *bops[] = {bad, u1};
    size_t bn[] = {1, 0};
    ApreportCommProgram bp = {2, bops, bn};
    CU_ASSERT_EQUAL(apreport_deadlock_check(&bp, &d), APREPORT_EINVAL);
}

static void test_warnings(void)
{
    char buf[256];
    CU_ASSERT_EQUAL(apreport_microbatch_warning(4, 3, buf, sizeof(buf)), 1);
    CU_ASSERT(strstr(buf, "< pipeline stages") != NULL);
    CU_ASSERT_EQUAL(apreport_microbatch_warning(4, 7, buf, sizeof(buf)), 1);
    CU_ASSERT(strstr(buf, "2 x pipeline stages") != NULL);
    CU_ASSERT_EQUAL(apreport_microbatch_warning(4, 8, buf, sizeof(buf)), 0);
    CU_ASSERT_STRING_EQUAL(buf, "");
    CU_ASSERT_EQUAL(apreport_microbatch_warning(1, 1, buf, sizeof(buf)), 0);
}

static void test_bad_input(void)
{
    ApreportSchedule *s = NULL;
    double f[1] = {1}, b[1] = {1};
    ApreportPipeline p = {0, 1, f, b, NULL};
    CU_ASSERT_EQUAL(apreport_simulate(&p, APREPORT_SCHED_1F1B, &s), APREPORT_EINVAL);
    p.n_stages = 1;
    p.micro_batches = 0;
    CU_ASSERT_EQUAL(apreport_simulate(&p, APREPORT_SCHED_1F1B, &s), APREPORT_EINVAL);
    CU_ASSERT_PTR_NULL(s);
}

int main(void)
{
    CU_pSuite s;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    s = CU_add_suite("reports-schedule", NULL, NULL);
    CU_add_test(s, "closed form for uniform stages", test_closed_form);
    CU_add_test(s, "dependencies with transfers", test_dependencies);
    CU_add_test(s, "deadlock cycles", test_deadlock_cycle);
    CU_add_test(s, "micro-batch warnings", test_warnings);
    CU_add_test(s, "bad input", test_bad_input);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
