/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of reports/schedule.c: iteration time against the closed form
 * (B + S - 1)(t_f + t_b) for uniform stages without transfers (GPipe and
 * 1F1B), bubble (S - 1) / (B + S - 1), peak in-flight micro-batches
 * (1F1B: min(S - s, B); GPipe: B), dependencies respected with transfers,
 * generated send/recv programs free of deadlock, hand-built orders with a
 * wait-for cycle reported as deadlocks, and the micro-batch warnings.
 * Interleaved 1F1B (Megatron-LM's order over v model chunks): with equal
 * stages the simulated iteration time and peak in-flight activations equal
 * the solver's closed forms (apsolve_schedule_time, _in_flight) for
 * S <= 6, v <= 4, B = S, 2S, 3S; v = 1 is 1F1B event for event; with
 * unequal stages and transfers every pass waits for its inputs (including
 * the wrap from the last stage to the first), the send/recv program is
 * deadlock-free, and messages that differ only in chunk do not match;
 * with equal stages and a transfer on every boundary the simulated time is
 * the closed form plus apsolve_schedule_p2p_exposed, what the full
 * estimate charges an interleaved plan for its exchanges.
 * ZB-H1 (the backward split into B and a deferred W): on equal stages the
 * simulated iteration time equals apsolve_schedule_time_zb for S <= 6,
 * B = S .. 3S + 1 and W below, at and above F; on a 4-stage pipeline it
 * is 1F1B's less the hand-computed bubble difference; every stage keeps
 * min(B, S) micro-batches (1F1B's first stage's, so the same peak); with
 * unequal stages and transfers every pass waits for its inputs and the
 * send/recv program is deadlock-free; without W, or B < S, it refuses.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "apreport.h"
#include "cunit_run.h"
#include "schedule.h"

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

static void test_interleaved_closed_form(void)
{
    double f[8], b[8], c[8];
    for (int S = 2; S <= 6; S++)
        for (int v = 1; v <= 4; v++)
            for (int B = S; B <= 3 * S; B += S) {
                ApreportSchedule *s = NULL;
                for (int k = 0; k < S; k++)
                    f[k] = 0.25, b[k] = 0.5, c[k] = 0.75;
                ApreportPipeline p = {S, B, f, b, NULL, v};
                CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_INTERLEAVED, &s), 0);
                CU_ASSERT_EQUAL(s->kind, APREPORT_SCHED_INTERLEAVED);
                CU_ASSERT_EQUAL(s->virtual_stages, v);
                CU_ASSERT_EQUAL(s->n_events, (size_t)(2 * S * v * B + 2 * (S * v - 1) * B));
                CU_ASSERT_DOUBLE_EQUAL(s->iteration_time,
                                       apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, v, B, c,
                                                             (size_t)S), 1e-9);
                CU_ASSERT_DOUBLE_EQUAL(s->bubble_fraction,
                                       (double)(S - 1) / v / (B + (double)(S - 1) / v), 1e-9);
                for (int k = 0; k < S; k++) {
                    double want = apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, v, B, S, k);
                    CU_ASSERT_DOUBLE_EQUAL(s->in_flight[k], want, 1e-12);
                    CU_ASSERT_DOUBLE_EQUAL(s->peak_in_flight[k], want * v, 1e-9);
                    CU_ASSERT_DOUBLE_EQUAL(s->busy[k], B * 0.75, 1e-9);
                }
                if (v == 1) {
                    /* one chunk is 1F1B, event for event */
                    ApreportSchedule *o = NULL;
                    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_1F1B, &o), 0);
                    CU_ASSERT_EQUAL_FATAL(o->n_events, s->n_events);
                    for (size_t i = 0; i < s->n_events; i++) {
                        CU_ASSERT_EQUAL(o->events[i].kind, s->events[i].kind);
                        CU_ASSERT_EQUAL(o->events[i].micro_batch, s->events[i].micro_batch);
                        CU_ASSERT_DOUBLE_EQUAL(o->events[i].start, s->events[i].start, 0);
                    }
                    apreport_schedule_free(&o);
                }
                apreport_schedule_free(&s);
            }
}

/* Equal stages with a transfer x on every boundary (the wrap too), x
 * below a chunk's passes: the simulated iteration is the closed form plus
 * what the full estimate charges an interleaved plan for its exchanges,
 * apsolve_schedule_p2p_exposed (the first micro-batch's crossing of the
 * v S - 1 virtual boundaries, forward and back). */
static void test_interleaved_exchanges(void)
{
    double f[6], b[6], c[6], x[6];
    for (int S = 2; S <= 6; S++)
        for (int v = 2; v <= 4; v++)
            for (int B = S; B <= 3 * S; B += S) {
                ApreportSchedule *s = NULL;
                for (int k = 0; k < S; k++)
                    f[k] = 0.25, b[k] = 0.5, c[k] = 0.75, x[k] = 0.01;
                ApreportPipeline p = {S, B, f, b, x, v};
                CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_INTERLEAVED, &s), 0);
                CU_ASSERT_DOUBLE_EQUAL(
                    s->iteration_time,
                    apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, v, B, c, (size_t)S) +
                        apsolve_schedule_p2p_exposed(APSOLVE_SCHEDULE_INTERLEAVED, v, B, S, 0.01,
                                                     0.25 / v, 0.5 / v),
                    1e-9);
                apreport_schedule_free(&s);
            }
}

static void test_interleaved_dependencies(void)
{
    double f[4] = {0.1, 0.3, 0.2, 0.15}, b[4] = {0.2, 0.5, 0.4, 0.3}, x[3] = {0.05, 0.125, 0.02};
    double c[4] = {0.3, 0.8, 0.6, 0.45};
    enum { S = 4, V = 3, B = 8, NV = S * V };
    double fs[NV][B], fe[NV][B], bs[NV][B], be[NV][B];
    ApreportSchedule *s = NULL;
    ApreportPipeline p = {S, B, f, b, x, V};
    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_INTERLEAVED, &s), 0);
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        int j = e->chunk * S + e->stage;
        if (e->kind == APREPORT_EV_FWD) {
            fs[j][e->micro_batch] = e->start, fe[j][e->micro_batch] = e->end;
            CU_ASSERT_DOUBLE_EQUAL(e->end - e->start, f[e->stage] / V, 1e-12);
        }
        if (e->kind == APREPORT_EV_BWD)
            bs[j][e->micro_batch] = e->start, be[j][e->micro_batch] = e->end;
    }
    for (int j = 0; j < NV; j++)
        for (int m = 0; m < B; m++) {
            /* the wrap from stage 3 back to stage 0 takes the largest transfer */
            double xin = j % S ? x[j % S - 1] : 0.125, xout = (j + 1) % S ? x[j % S] : 0.125;
            if (j > 0)
                CU_ASSERT(fs[j][m] >= fe[j - 1][m] + xin - 1e-12);
            if (j + 1 < NV)
                CU_ASSERT(bs[j][m] >= be[j + 1][m] + xout - 1e-12);
            CU_ASSERT(bs[j][m] >= fe[j][m] - 1e-12);
        }
    /* the slowest stage's work bounds it from below; without transfers the
     * closed form of these costs bounds it from above */
    CU_ASSERT(s->iteration_time >= B * 0.8 - 1e-12);
    apreport_schedule_free(&s);
    p.xfer = NULL;
    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_INTERLEAVED, &s), 0);
    CU_ASSERT(s->iteration_time >= B * 0.8 - 1e-12);
    CU_ASSERT(s->iteration_time <= apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, V, B, c, S) + 1e-12);
    apreport_schedule_free(&s);

    p.xfer = x;
    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_INTERLEAVED, &s), 0);
    ApreportCommProgram *prog = NULL;
    ApreportDeadlock d;
    CU_ASSERT_EQUAL_FATAL(apreport_comm_program(s, &prog), 0);
    /* stage 0: V chunks send B activations and receive B gradients from
     * stage 1, and (V - 1) chunks' worth each way over the wrap from stage 3 */
    CU_ASSERT_EQUAL(prog->n_ops[0], (size_t)(2 * V * B + 2 * (V - 1) * B));
    CU_ASSERT_EQUAL(apreport_deadlock_check(prog, &d), 0);
    CU_ASSERT_FALSE(d.deadlocked);
    CU_ASSERT_EQUAL(d.pair_src, -1);
    apreport_comm_program_free(&prog);
    apreport_schedule_free(&s);

    /* Megatron-LM's order needs B to be a multiple of S, and two stages */
    p.micro_batches = 6;
    CU_ASSERT_EQUAL(apreport_simulate(&p, APREPORT_SCHED_INTERLEAVED, &s), APREPORT_EINVAL);
    p.micro_batches = 8;
    p.n_stages = 1;
    CU_ASSERT_EQUAL(apreport_simulate(&p, APREPORT_SCHED_INTERLEAVED, &s), APREPORT_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_STRING_EQUAL(apreport_schedule_name(APREPORT_SCHED_INTERLEAVED), "interleaved");
}

/* Ops that agree on peer and tag but not on chunk do not rendezvous. */
static void test_deadlock_chunk(void)
{
    ApreportCommOp s0[] = {{1, 1, 0, 1}}, s1[] = {{0, 0, 0, 0}};
    ApreportCommOp *ops[] = {s0, s1};
    size_t n[] = {1, 1};
    ApreportCommProgram p = {2, ops, n};
    ApreportDeadlock d;
    CU_ASSERT_EQUAL(apreport_deadlock_check(&p, &d), 0);
    CU_ASSERT_TRUE(d.deadlocked);
    s1[0].chunk = 1;
    CU_ASSERT_EQUAL(apreport_deadlock_check(&p, &d), 0);
    CU_ASSERT_FALSE(d.deadlocked);
}

/* ZB-H1 on equal stages against the closed form, and its in-flight count. */
static void test_zb_closed_form(void)
{
    /* the last two: the B pass below W and F, where the bubble is (S - 1) F */
    static const double fbw[][3] = {{1, 1, 1}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0.5}, {1, 1, 2},
                                    {1, 3, 3}, {3, 2, 0}, {1, 0.5, 1}, {2, 1, 3}};
    double f[6], b[6], w[6];
    for (size_t c = 0; c < sizeof fbw / sizeof fbw[0]; c++)
        for (int S = 1; S <= 6; S++)
            for (int B = S; B <= 3 * S + 1; B++) {
                ApreportSchedule *s = NULL;
                for (int k = 0; k < S; k++) {
                    f[k] = fbw[c][0];
                    w[k] = fbw[c][2];
                    b[k] = fbw[c][1] + fbw[c][2]; /* the whole backward, B + W */
                }
                ApreportPipeline p = {S, B, f, b, NULL, 1, w};
                CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_ZB_H1, &s), 0);
                CU_ASSERT_EQUAL(s->kind, APREPORT_SCHED_ZB_H1);
                CU_ASSERT_EQUAL(s->n_events, 3 * (size_t)S * B + 2 * (size_t)(S - 1) * B);
                CU_ASSERT_DOUBLE_EQUAL(s->iteration_time,
                                       apsolve_schedule_time_zb(B, f, b, w, (size_t)S), 1e-9);
                for (int k = 0; k < S; k++) {
                    CU_ASSERT_EQUAL(s->peak_in_flight[k], S < B ? S : B);
                    CU_ASSERT_DOUBLE_EQUAL(s->in_flight[k],
                                           apsolve_schedule_in_flight(APSOLVE_SCHEDULE_ZB_H1, 1,
                                                                      B, S, k), 0);
                    CU_ASSERT_DOUBLE_EQUAL(s->busy[k], B * (f[k] + b[k]), 1e-9);
                }
                apreport_schedule_free(&s);
            }
}

/* 4 stages, 8 micro-batches, F = 1, B = 1, W = 1 s: 1F1B takes
 * (8 + 3) x 3 = 33 s, ZB-H1 8 x 3 + 3 x (1 + 1 - 1) = 27 s: 6 s less,
 * (S - 1)(W + min(W, F)) = 3 x 2. Its first stage keeps as many
 * micro-batches as 1F1B's (4), so the peak is the same. */
static void test_zb_hand(void)
{
    double f[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2}, w[4] = {1, 1, 1, 1};
    ApreportPipeline p = {4, 8, f, b, NULL, 1, w};
    ApreportSchedule *one = NULL, *zb = NULL;
    int peak1 = 0, peakz = 0;
    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_1F1B, &one), 0);
    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_ZB_H1, &zb), 0);
    CU_ASSERT_DOUBLE_EQUAL(one->iteration_time, 33, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(zb->iteration_time, 27, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(one->iteration_time - zb->iteration_time, 6, 1e-12);
    for (int k = 0; k < 4; k++) {
        peak1 = one->peak_in_flight[k] > peak1 ? one->peak_in_flight[k] : peak1;
        peakz = zb->peak_in_flight[k] > peakz ? zb->peak_in_flight[k] : peakz;
    }
    CU_ASSERT_EQUAL(peak1, 4);
    CU_ASSERT_EQUAL(peakz, peak1);
    apreport_schedule_free(&one);
    apreport_schedule_free(&zb);
}

/* Unequal stages with transfers: every pass after its inputs, W after its
 * own B, one pass at a time per stage, and no deadlock. */
static void test_zb_dependencies(void)
{
    double f[5] = {1.0, 1.5, 0.7, 1.2, 0.9}, b[5] = {2.0, 2.4, 1.5, 2.6, 1.9};
    double w[5] = {0.9, 1.1, 0.6, 1.3, 0.8}, x[4] = {0.2, 0.05, 0.3, 0.1};
    ApreportPipeline p = {5, 11, f, b, x, 1, w};
    ApreportSchedule *s = NULL;
    ApreportCommProgram *cp = NULL;
    ApreportDeadlock d;
    double fend[5][11], bend[5][11], wstart[5][11];
    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_ZB_H1, &s), 0);
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        if (e->kind == APREPORT_EV_FWD)
            fend[e->stage][e->micro_batch] = e->end;
        if (e->kind == APREPORT_EV_BWD)
            bend[e->stage][e->micro_batch] = e->end;
        if (e->kind == APREPORT_EV_WGRAD)
            wstart[e->stage][e->micro_batch] = e->start;
    }
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        int k = e->stage, m = e->micro_batch;
        if (e->kind == APREPORT_EV_FWD && k > 0)
            CU_ASSERT(e->start >= fend[k - 1][m] + x[k - 1] - 1e-12);
        if (e->kind == APREPORT_EV_BWD) {
            CU_ASSERT(e->start >= fend[k][m] - 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(e->end - e->start, b[k] - w[k], 1e-12);
            if (k + 1 < 5)
                CU_ASSERT(e->start >= bend[k + 1][m] + x[k] - 1e-12);
        }
        if (e->kind == APREPORT_EV_WGRAD) {
            CU_ASSERT(e->start >= bend[k][m] - 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(e->end - e->start, w[k], 1e-12);
        }
        /* compute events of a stage come in order and do not overlap */
        if (i > 0 && e->kind <= APREPORT_EV_WGRAD && s->events[i - 1].stage == k &&
            s->events[i - 1].kind <= APREPORT_EV_WGRAD)
            CU_ASSERT(e->start >= s->events[i - 1].end - 1e-12);
    }
    for (int k = 0; k < 5; k++)
        for (int m = 0; m < 11; m++)
            CU_ASSERT(wstart[k][m] >= bend[k][m] - 1e-12);
    CU_ASSERT_EQUAL_FATAL(apreport_comm_program(s, &cp), 0);
    CU_ASSERT_EQUAL(apreport_deadlock_check(cp, &d), 0);
    CU_ASSERT_FALSE(d.deadlocked);
    apreport_comm_program_free(&cp);
    apreport_schedule_free(&s);
    /* without the split, or with fewer micro-batches than stages: refused */
    p.wgrad = NULL;
    CU_ASSERT_EQUAL(apreport_simulate(&p, APREPORT_SCHED_ZB_H1, &s), APREPORT_EINVAL);
    p.wgrad = w;
    p.micro_batches = 4;
    CU_ASSERT_EQUAL(apreport_simulate(&p, APREPORT_SCHED_ZB_H1, &s), APREPORT_EINVAL);
    p.micro_batches = 11;
    w[2] = 2.0; /* W longer than the backward */
    CU_ASSERT_EQUAL(apreport_simulate(&p, APREPORT_SCHED_ZB_H1, &s), APREPORT_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_STRING_EQUAL(apreport_schedule_name(APREPORT_SCHED_ZB_H1), "zb-h1");
}

/* The virtual stage of a compute event of a multi-chunk zero-bubble
 * schedule: chunk c of device d is c S + d round robin, d or 2 S - 1 - d
 * in the V. */
static int zb_vstage(ApreportScheduleKind k, int S, const ApreportEvent *e)
{
    if (k == APREPORT_SCHED_ZBV)
        return e->chunk ? 2 * S - 1 - e->stage : e->stage;
    return e->chunk * S + e->stage;
}

/* Interleaved ZB and ZBV on equal stages against the solver's times and
 * in-flight counts, for S <= 5, every B they take up to 3 S + 1, v <= 3,
 * F, B and W below, at and above each other. */
static void test_zb_multi_closed_form(void)
{
    static const double fbw[][3] = {{1, 1, 1}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0.5},
                                    {1, 1, 2}, {3, 2, 0}, {1, 0.5, 1}, {2, 1, 3}};
    double f[6], b[6], w[6];
    for (size_t c = 0; c < sizeof fbw / sizeof fbw[0]; c++)
        for (int S = 1; S <= 5; S++)
            for (int v = 1; v <= 4; v++)
                for (int B = 1; B <= 3 * S + 1; B++) {
                    ApreportScheduleKind k =
                        v == 4 ? APREPORT_SCHED_ZBV : APREPORT_SCHED_INTERLEAVED_ZB;
                    int vv = v == 4 ? 2 : v, V = S * vv;
                    ApreportSchedule *s = NULL;
                    double want;
                    if (!apsolve_schedule_valid((ApsolveSchedule)k, vv, B, S, NULL, 0))
                        continue;
                    for (int j = 0; j < S; j++) {
                        f[j] = fbw[c][0];
                        w[j] = fbw[c][2];
                        b[j] = fbw[c][1] + fbw[c][2];
                    }
                    ApreportPipeline p = {S, B, f, b, NULL, vv, w};
                    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, k, &s), 0);
                    CU_ASSERT_EQUAL(s->kind, k);
                    CU_ASSERT_EQUAL(s->virtual_stages, vv);
                    /* V's bottom sends nothing, nor does a lone device */
                    CU_ASSERT_EQUAL(s->n_events,
                                    3 * (size_t)V * B +
                                        (S > 1 ? 2 * (size_t)(V - 1 - (k == APREPORT_SCHED_ZBV)) *
                                                     B : 0));
                    want = k == APREPORT_SCHED_ZBV
                               ? apsolve_schedule_time_zbv(B, f, b, w, (size_t)S)
                               : apsolve_schedule_time_izb(vv, B, f, b, w, (size_t)S);
                    CU_ASSERT_DOUBLE_EQUAL(s->iteration_time, want, 1e-9);
                    for (int j = 0; j < S; j++) {
                        CU_ASSERT_DOUBLE_EQUAL(
                            s->in_flight[j],
                            apsolve_schedule_in_flight((ApsolveSchedule)k, vv, B, S, j), 1e-12);
                        CU_ASSERT_DOUBLE_EQUAL(s->busy[j], B * (f[j] + b[j]), 1e-9);
                    }
                    apreport_schedule_free(&s);
                }
}

/* ZB-V by hand (tests/solver/test_schedule.c has the order): 2 devices,
 * B = 2, chunks of 1 s a pass: 14 s; device 0 idles 2 .. 3 and
 * 11 .. 12 s; peaks 3 and 4 chunks; F2.0 on device 1 starts when F1.0
 * ends, nothing sent between them. */
static void test_zbv_hand(void)
{
    double f[2] = {2, 2}, b[2] = {4, 4}, w[2] = {2, 2};
    ApreportPipeline p = {2, 2, f, b, NULL, 0, w};
    ApreportSchedule *s = NULL;
    static const double start0[12] = {0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13};
    CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, APREPORT_SCHED_ZBV, &s), 0);
    CU_ASSERT_DOUBLE_EQUAL(s->iteration_time, 14, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s->bubble_fraction, 1 - 24.0 / 28, 1e-12);
    for (int i = 0; i < 12; i++) {
        CU_ASSERT_EQUAL(s->events[i].stage, 0);
        CU_ASSERT_DOUBLE_EQUAL(s->events[i].start, start0[i], 1e-12);
    }
    CU_ASSERT_EQUAL(s->peak_in_flight[0], 3);
    CU_ASSERT_EQUAL(s->peak_in_flight[1], 4);
    CU_ASSERT_DOUBLE_EQUAL(s->events[13].start, 2, 1e-12); /* F2.0 right after F1.0 */
    for (size_t i = 24; i < s->n_events; i++)
        CU_ASSERT_NOT_EQUAL(s->events[i].stage, s->events[i].peer);
    CU_ASSERT_STRING_EQUAL(apreport_schedule_name(APREPORT_SCHED_ZBV), "zbv");
    apreport_schedule_free(&s);
}

/* Unequal stages with transfers under interleaved ZB (v = 2) and ZB-V:
 * every pass after its inputs plus the transfer between their devices
 * (none at the V's bottom, the wrap from the last device to the first for
 * round robin), W after its own B, a device's passes one at a time, and a
 * deadlock-free send/recv program. */
static void test_zb_multi_dependencies(void)
{
    double f[5] = {1.0, 1.5, 0.7, 1.2, 0.9}, b[5] = {2.0, 2.4, 1.5, 2.6, 1.9};
    double w[5] = {0.9, 1.1, 0.6, 1.3, 0.8}, x[4] = {0.2, 0.05, 0.3, 0.1};
    for (int kk = 0; kk < 2; kk++) {
        ApreportScheduleKind k = kk ? APREPORT_SCHED_ZBV : APREPORT_SCHED_INTERLEAVED_ZB;
        ApreportPipeline p = {5, 10, f, b, x, 2, w};
        ApreportSchedule *s = NULL;
        ApreportCommProgram *cp = NULL;
        ApreportDeadlock d;
        double fend[10][10], bend[10][10];
        CU_ASSERT_EQUAL_FATAL(apreport_simulate(&p, k, &s), 0);
        for (size_t i = 0; i < s->n_events; i++) {
            const ApreportEvent *e = &s->events[i];
            if (e->kind == APREPORT_EV_FWD)
                fend[zb_vstage(k, 5, e)][e->micro_batch] = e->end;
            if (e->kind == APREPORT_EV_BWD)
                bend[zb_vstage(k, 5, e)][e->micro_batch] = e->end;
        }
        for (size_t i = 0; i < s->n_events; i++) {
            const ApreportEvent *e = &s->events[i];
            int j, m = e->micro_batch, dev = e->stage;
            if (e->kind > APREPORT_EV_WGRAD)
                continue;
            j = zb_vstage(k, 5, e);
            if (e->kind == APREPORT_EV_FWD && j > 0) {
                int pd = apsolve_schedule_stage_device((ApsolveSchedule)k, 2, 5, j - 1);
                double xx = pd == dev ? 0 : pd - dev == 1 || dev - pd == 1 ? x[pd < dev ? pd : dev]
                                                                           : 0.3;
                CU_ASSERT(e->start >= fend[j - 1][m] + xx - 1e-12);
                CU_ASSERT_DOUBLE_EQUAL(e->end - e->start, f[dev] / 2, 1e-12);
            }
            if (e->kind == APREPORT_EV_BWD) {
                CU_ASSERT(e->start >= fend[j][m] - 1e-12);
                CU_ASSERT_DOUBLE_EQUAL(e->end - e->start, (b[dev] - w[dev]) / 2, 1e-12);
                if (j + 1 < 10) {
                    int nd = apsolve_schedule_stage_device((ApsolveSchedule)k, 2, 5, j + 1);
                    double xx = nd == dev                             ? 0
                                : nd - dev == 1 || dev - nd == 1 ? x[nd < dev ? nd : dev]
                                                                      : 0.3;
                    CU_ASSERT(e->start >= bend[j + 1][m] + xx - 1e-12);
                }
            }
            if (e->kind == APREPORT_EV_WGRAD) {
                CU_ASSERT(e->start >= bend[j][m] - 1e-12);
                CU_ASSERT_DOUBLE_EQUAL(e->end - e->start, w[dev] / 2, 1e-12);
            }
            if (i > 0 && s->events[i - 1].stage == dev &&
                s->events[i - 1].kind <= APREPORT_EV_WGRAD)
                CU_ASSERT(e->start >= s->events[i - 1].end - 1e-12);
        }
        CU_ASSERT_EQUAL_FATAL(apreport_comm_program(s, &cp), 0);
        CU_ASSERT_EQUAL(apreport_deadlock_check(cp, &d), 0);
        CU_ASSERT_FALSE(d.deadlocked);
        apreport_comm_program_free(&cp);
        apreport_schedule_free(&s);
        p.wgrad = NULL;
        CU_ASSERT_EQUAL(apreport_simulate(&p, k, &s), APREPORT_EINVAL);
        CU_ASSERT_PTR_NULL(s);
    }
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
    static const CunitTest tests[] = {
        {"closed form for uniform stages", test_closed_form},
        {"dependencies with transfers", test_dependencies},
        {"deadlock cycles", test_deadlock_cycle},
        {"micro-batch warnings", test_warnings},
        {"bad input", test_bad_input},
        {"interleaved: closed form for equal stages", test_interleaved_closed_form},
        {"interleaved: dependencies, transfers, deadlock", test_interleaved_dependencies},
        {"interleaved: the exchanges the full estimate charges", test_interleaved_exchanges},
        {"chunks in the deadlock check", test_deadlock_chunk},
        {"zb-h1: closed form for equal stages", test_zb_closed_form},
        {"zb-h1: 1F1B less the bubble, same peak", test_zb_hand},
        {"zb-h1: dependencies, transfers, deadlock", test_zb_dependencies},
        {"interleaved-zb, zbv: the solver's times for equal stages", test_zb_multi_closed_form},
        {"zbv by hand", test_zbv_hand},
        {"interleaved-zb, zbv: dependencies, transfers, deadlock", test_zb_multi_dependencies},
    };
    return CUNIT_RUN("reports-schedule", tests);
}
