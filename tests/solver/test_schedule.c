/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of solver/schedule.c: names round-trip; Alpa's T for 1F1B and
 * GPipe; the interleaved closed form (B + (n - 1)/v) t for equal costs and
 * (sum c + (v B - 1) max c) / v for unequal ones, equal to 1F1B at v = 1 and
 * decreasing in v; in-flight counts (1F1B min(B, n - k), GPipe B,
 * interleaved n + (n - 1)/v on the first device, capped at B, decreasing
 * along the pipeline; ZB-H1 min(B, n) on every stage); transfer factors;
 * the validity rules; Megatron-Core's warm-up counts and the exchanges
 * its interleaved schedule leaves exposed, by hand; ZB-H1's closed form by hand (equal and unequal
 * stages) and its refusals; the solver's ZB-H1 plan of four equal stages
 * priced as the closed form, and infeasible without the split. Agreement with
 * the pass-by-pass simulation is tested in tests/reports/test_schedule.c.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apsolve.h"
#include "cunit_run.h"
#include "schedule.h"

static void test_names(void)
{
    for (int s = 0; s < APSOLVE_SCHEDULE_COUNT; s++)
        CU_ASSERT_EQUAL(apsolve_schedule_parse(apsolve_schedule_name((ApsolveSchedule)s)), s);
    CU_ASSERT_STRING_EQUAL(apsolve_schedule_name(APSOLVE_SCHEDULE_INTERLEAVED), "interleaved");
    CU_ASSERT_PTR_NULL(apsolve_schedule_name(APSOLVE_SCHEDULE_COUNT));
    CU_ASSERT_EQUAL(apsolve_schedule_parse("1F1B"), -1);
    CU_ASSERT_EQUAL(apsolve_schedule_parse(""), -1);
    CU_ASSERT_EQUAL(apsolve_schedule_parse(NULL), -1);
}

static void test_time(void)
{
    double c[4] = {1.0, 3.0, 2.0, 0.5}, eq[8];
    /* Alpa's T: 6.5 + (B - 1) * 3 */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 5, c, 4), 18.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_GPIPE, 4, 5, c, 4), 18.5, 1e-12);
    /* interleaved, v = 2: 6.5 / 2 + (5 - 0.5) * 3 */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 2, 5, c, 4),
                           3.25 + 13.5, 1e-12);
    for (int n = 1; n <= 8; n++) {
        for (int k = 0; k < n; k++)
            eq[k] = 0.75;
        for (int B = 1; B <= 12; B++) {
            double prev = INFINITY;
            double t1 = apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, B, eq, (size_t)n);
            CU_ASSERT_DOUBLE_EQUAL(t1, (B + n - 1) * 0.75, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 1, B, eq,
                                                         (size_t)n), t1, 1e-12);
            CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 0, B, eq,
                                                         (size_t)n), t1, 1e-12);
            for (int v = 1; v <= 6; v++) {
                double t = apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, v, B, eq, (size_t)n);
                CU_ASSERT_DOUBLE_EQUAL(t, (B + (double)(n - 1) / v) * 0.75, 1e-12);
                /* never below the work of one device, never above 1F1B */
                CU_ASSERT(t >= B * 0.75 - 1e-12);
                CU_ASSERT(t <= t1 + 1e-12);
                CU_ASSERT(n == 1 ? prev == INFINITY || fabs(t - prev) < 1e-12 : t < prev);
                prev = t;
            }
        }
    }
    /* unequal costs: v = 1 is T, and more chunks never cost more */
    for (int B = 1; B <= 9; B++) {
        double t1 = apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, B, c, 4), prev = t1;
        CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 1, B, c, 4), t1,
                               1e-12);
        for (int v = 2; v <= 6; v++) {
            double t = apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, v, B, c, 4);
            CU_ASSERT(t < prev);
            CU_ASSERT(t >= B * 3.0 - 1e-12);
            prev = t;
        }
    }
    CU_ASSERT(isnan(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 0, c, 4)));
    CU_ASSERT(isnan(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 2, c, 0)));
    CU_ASSERT(isnan(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 2, NULL, 4)));
}

static void test_in_flight(void)
{
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 8, 4, 0), 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 2, 4, 0), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 8, 4, 3), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_GPIPE, 1, 8, 4, 3), 8, 0);
    /* Megatron-LM: p = 4, v = 2: warm-up 2 * 3 + 4 = 10 chunks on device 0,
     * plus one: 11 chunks of 1/2 = 5.5 = 4 + 3/2 micro-batches */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 2, 8, 4, 0),
                           5.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 2, 8, 4, 3),
                           2.5, 1e-12);
    /* capped at all B v chunks */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 2, 4, 4, 0),
                           4.0, 1e-12);
    for (int n = 1; n <= 8; n++)
        for (int B = 1; B <= 16; B++)
            for (int k = 0; k < n; k++) {
                double f1 = apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, B, n, k);
                CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 1,
                                                                  B, n, k), f1, 0);
                for (int v = 2; v <= 4; v++) {
                    double x = apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, v, B, n, k);
                    CU_ASSERT(x <= B + 1e-12);
                    CU_ASSERT(x >= f1 - 1e-12);    /* interleaving never needs less */
                    if (k == 0 && B * v >= 2 * (n - 1) + (v - 1) * n + 1)
                        CU_ASSERT_DOUBLE_EQUAL(x, n + (double)(n - 1) / v, 1e-12);
                    if (k > 0)
                        CU_ASSERT(x <= apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, v,
                                                                  B, n, k - 1) + 1e-12);
                }
            }
    CU_ASSERT(isnan(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 4, 4, 4)));
    CU_ASSERT(isnan(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 4, 4, -1)));
    CU_ASSERT(isnan(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_GPIPE, 1, 0, 4, 0)));
}

static void test_transfer_and_valid(void)
{
    char why[160];
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_1F1B, 4), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_GPIPE, 4), 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_INTERLEAVED, 3), 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_INTERLEAVED, 0), 1, 0);
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 2, 8, 4, why, sizeof why));
    CU_ASSERT_STRING_EQUAL(why, "");
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 1, 7, 4, why, sizeof why));
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_1F1B, 1, 7, 4, why, sizeof why));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 2, 6, 4, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "multiple"));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 2, 6, 1, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "at least 2"));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, 0, 8, 4, why, sizeof why));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_GPIPE, 1, 0, 4, NULL, 0));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_GPIPE, 1, 4, 0, why, sizeof why));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_COUNT, 1, 4, 4, why, sizeof why));
}

/* ZB-H1 by hand. Equal stages F = 1, backward 2 of which W = 1, n = 4,
 * B = 8: Alpa's T 33 less 3 x (1 + min(1, 1, 1)) = 27 (the paper's bubble
 * (n - 1)(F + B - W) = 3 on top of 24 s of work). Unequal stages: T =
 * sum c + (B - 1) max c less (n - 1) min_k (W_k + min(W_k, F_k, B_k)). */
/* Megatron-Core's warm-up counts (get_pp_rank_microbatches, core_v0.19.0)
 * and the exchanges its interleaved schedule leaves exposed, by hand. */
static void test_p2p(void)
{
    ApsolveSchedule I = APSOLVE_SCHEDULE_INTERLEAVED;
    /* 1F1B: n - k - 1, at most B; GPipe: B; zero-bubble: none */
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(APSOLVE_SCHEDULE_1F1B, 1, 8, 4, 0), 3);
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(APSOLVE_SCHEDULE_1F1B, 1, 8, 4, 3), 0);
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(APSOLVE_SCHEDULE_1F1B, 1, 2, 4, 0), 2);
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(APSOLVE_SCHEDULE_GPIPE, 1, 5, 4, 1), 5);
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(APSOLVE_SCHEDULE_ZB_H1, 1, 8, 4, 0), -1);
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(I, 2, 8, 4, 4), -1);
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(I, 2, 0, 4, 0), -1);
    /* interleaved, v = 2, n = 4: 2 (4 - k - 1) + 1 x 4 */
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(I, 2, 8, 4, 0), 10);
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(I, 2, 8, 4, 3), 4);
    /* B v = 8 chunks only: every pass is warm-up */
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(I, 2, 4, 4, 0), 8);
    /* NeMo's Llama 2 70B: pp 4, vpp 20, 32 micro-batches: 6 + 19 x 4 */
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(I, 20, 32, 4, 0), 82);
    /* v = 1 is 1F1B */
    CU_ASSERT_EQUAL(apsolve_schedule_warmup(I, 1, 8, 4, 0), 3);
    /* the first stage's activations: the warm-up plus one, per chunk, is
     * Megatron-Core's own accounting (theoretical_memory_usage.py at
     * core_v0.19.0: pp micro-batches x (1 + (pp - 1) / (pp vpp))) */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(I, 20, 32, 4, 0), 4 * (1 + 3.0 / 80),
                           1e-12);

    /* exchange 1 s, chunks 2 s forward, 3 s backward: hidden in the steady
     * state; the 2 x 4 - 1 = 7 boundaries between virtual stages crossed
     * forward and back */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_p2p_exposed(I, 2, 8, 4, 1, 2, 3), 14, 1e-12);
    /* exchange 4 s: 2 x 7 x 4, and the 16 - 10 steady steps show 4 - 3
     * under the backward and 4 - 2 under the forward */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_p2p_exposed(I, 2, 8, 4, 4, 2, 3), 56 + 6 * 3,
                           1e-12);
    /* all warm-up: no steady step */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_p2p_exposed(I, 2, 4, 4, 4, 2, 3), 56, 1e-12);
    /* not interleaved, one chunk or one stage: nothing here */
    CU_ASSERT_EQUAL(apsolve_schedule_p2p_exposed(APSOLVE_SCHEDULE_1F1B, 2, 8, 4, 1, 2, 3), 0);
    CU_ASSERT_EQUAL(apsolve_schedule_p2p_exposed(APSOLVE_SCHEDULE_ZBV, 2, 8, 4, 1, 2, 3), 0);
    CU_ASSERT_EQUAL(apsolve_schedule_p2p_exposed(I, 1, 8, 4, 1, 2, 3), 0);
    CU_ASSERT_EQUAL(apsolve_schedule_p2p_exposed(I, 2, 8, 1, 1, 2, 3), 0);
    CU_ASSERT(isnan(apsolve_schedule_p2p_exposed(I, 2, 0, 4, 1, 2, 3)));
    CU_ASSERT(isnan(apsolve_schedule_p2p_exposed(I, 2, 8, 4, -1, 2, 3)));
    CU_ASSERT(isnan(apsolve_schedule_p2p_exposed(I, 2, 8, 4, 1, NAN, 3)));
}

static void test_zb(void)
{
    double f[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2}, w[4] = {1, 1, 1, 1};
    double f2[3] = {1.0, 2.0, 0.5}, b2[3] = {2.0, 3.0, 1.5}, w2[3] = {0.8, 1.5, 0.7};
    char why[160];
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_zb(8, f, b, w, 4), 27, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 8, (double[]){3, 3, 3, 3}, 4) -
                               apsolve_schedule_time_zb(8, f, b, w, 4),
                           6, 1e-12);
    /* W above F and the B pass (0.5) below it: the bubble is (n - 1) F =
     * 3, the last stage's wait for its first input, which no order fills
     * (it starts at 3 s and then works 8 x 3 s), not (n - 1) B = 1.5 */
    w[0] = w[1] = w[2] = w[3] = 1.5;
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_zb(8, f, b, w, 4), 8 * 3 + 3 * 1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_zb_fill(1, 2, 1.5), 1.5 + 0.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_zb_fill(1, 2, 0.5), 0.5 + 0.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_zb_fill(1, 4, 2), 2 + 1, 0);
    CU_ASSERT(isnan(apsolve_schedule_zb_fill(1, 1, 1.5))); /* W above the backward */
    w[0] = w[1] = w[2] = w[3] = 1;
    /* sum (F + bwd) = 10, max 5, B = 5: 10 + 4 x 5 - 2 x min(1.6, 3.0, 1.2) = 27.6 */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_zb(5, f2, b2, w2, 3), 27.6, 1e-12);
    CU_ASSERT(isnan(apsolve_schedule_time_zb(2, f2, b2, w2, 3)));     /* B < n */
    CU_ASSERT(isnan(apsolve_schedule_time_zb(5, f2, b2, NULL, 3)));
    CU_ASSERT(isnan(apsolve_schedule_time_zb(5, f2, b2, w2, 0)));
    w2[1] = 3.5;                                                      /* W > backward */
    CU_ASSERT(isnan(apsolve_schedule_time_zb(5, f2, b2, w2, 3)));
    w2[1] = -0.1;
    CU_ASSERT(isnan(apsolve_schedule_time_zb(5, f2, b2, w2, 3)));
    /* the total-cost closed form cannot price it */
    CU_ASSERT(isnan(apsolve_schedule_time(APSOLVE_SCHEDULE_ZB_H1, 1, 8, b, 4)));
    CU_ASSERT_STRING_EQUAL(apsolve_schedule_name(APSOLVE_SCHEDULE_ZB_H1), "zb-h1");
    for (int k = 0; k < 4; k++) {
        CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_ZB_H1, 1, 8, 4, k), 4, 0);
        CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_ZB_H1, 1, 3, 4, k), 3, 0);
    }
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_ZB_H1, 1, 8, 4, 0),
                           apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 8, 4, 0), 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_ZB_H1, 1), 1, 0);
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_ZB_H1, 1, 4, 4, why, sizeof why));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_ZB_H1, 1, 3, 4, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "at least the pipeline stages"));
}

/* 4 layers, 1x4 GPUs, single-layer stages only (F 1 s, backward 2 s of
 * which W 1 s): apsolve's plan is 4 stages of one layer under either
 * schedule; ZB-H1's price is the closed form's (27 s against 1F1B's 33 s,
 * the same as tests/reports' simulation) with min(B, n) = 4 in flight
 * everywhere; with a stage's W unknown no ZB-H1 plan is feasible. */
static void test_zb_solver(void)
{
    ApsolveProblem *p = NULL;
    ApsolveOptions o;
    ApsolvePlan *pl = NULL;
    double f[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2}, w[4] = {1, 1, 1, 1};
    CU_ASSERT_FATAL(apsolve_problem_new(4, 1, 4, 1, 1, 1, &p) == APSOLVE_OK);
    p->submeshes[0] = (ApsolveSubmesh){1, 1};
    p->configs[0] = (ApsolveConfig){1, 1, 1, 0, {0, 0, 0}};
    for (int i = 0; i < 4; i++) {
        size_t idx = apsolve_index(p, i, i, 0, 0);
        p->cost[idx] = 3;
        apsolve_times_own(p, idx)->fwd = 1;
        apsolve_times_own(p, idx)->bwd = 2;
        apsolve_times_own(p, idx)->wgrad = 1;
    }
    memset(&o, 0, sizeof o);
    o.micro_batches = 8;
    o.objective = APSOLVE_OBJECTIVE_FULL;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT_EQUAL(pl->n_stages, 4);
    CU_ASSERT_DOUBLE_EQUAL(pl->cost, 33, 1e-12);
    apsolve_plan_free(&pl);
    o.schedule = APSOLVE_SCHEDULE_ZB_H1;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(pl->n_stages, 4);
    CU_ASSERT(pl->feasible);
    CU_ASSERT_EQUAL(pl->schedule, APSOLVE_SCHEDULE_ZB_H1);
    CU_ASSERT_DOUBLE_EQUAL(pl->cost, apsolve_schedule_time_zb(8, f, b, w, 4), 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(pl->cost, 27, 1e-12);
    for (int k = 0; k < 4; k++)
        CU_ASSERT_DOUBLE_EQUAL(pl->stages[k].in_flight, 4, 0);
    apsolve_plan_free(&pl);
    CU_ASSERT_TRUE(apsolve_problem_wgrad_known(p));
    apsolve_times_own(p, apsolve_index(p, 2, 2, 0, 0))->wgrad = -1;
    CU_ASSERT_FALSE(apsolve_problem_wgrad_known(p));
    {
        int e = apsolve_solve(p, &o, &pl);
        /* a plan, never feasible (its cost is NaN), or none */
        CU_ASSERT(e == APSOLVE_EINFEASIBLE || (e == APSOLVE_OK && !pl->feasible));
    }
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
}

/* Interleaved ZB by hand: n = 2 devices, v = 2 chunks, B = 2, each chunk's
 * F, B and W 1 s (a device's stage F 2 s, backward 4 s of which W 2 s).
 * Device 0 runs F0.0 F0.1 F2.0 F2.1 B2.0 W2.0 B2.1 W2.1 B0.0 W0.0 B0.1
 * W0.1 (virtual stage.micro-batch), device 1 F1.0 F1.1 F3.0 B3.0 F3.1 B3.1
 * W3.0 B1.0 W3.1 B1.1 W1.0 W1.1; device 1 waits 0 .. 1 s for its first
 * input, device 0 4 .. 5 s for B3.0: 12 s of work each, done at 13 s.
 * The same stages take 18 s under 1F1B, 15 s interleaved (v = 2) and 14 s
 * under ZB-H1. Every device holds 4 chunks (2 micro-batches' worth). At
 * n = 4, B = 8 the bubble is 3 x (1 + 1 - 1) = 3 chunk seconds over 48 s
 * of work, and every device holds (v - 1) m + n = 8 chunks, 4 micro-
 * batches' worth, where interleaved 1F1B's first device holds 5.5. */
static void test_izb(void)
{
    double f[4] = {2, 2, 2, 2}, b[4] = {4, 4, 4, 4}, w[4] = {2, 2, 2, 2}, c[4] = {6, 6, 6, 6};
    ApsolvePass ord[24];
    static const int want0[12][3] = {{0, 0, 0}, {0, 0, 1}, {0, 2, 0}, {0, 2, 1},
                                     {1, 2, 0}, {2, 2, 0}, {1, 2, 1}, {2, 2, 1},
                                     {1, 0, 0}, {2, 0, 0}, {1, 0, 1}, {2, 0, 1}};
    static const int want1[12][3] = {{0, 1, 0}, {0, 1, 1}, {0, 3, 0}, {1, 3, 0},
                                     {0, 3, 1}, {1, 3, 1}, {2, 3, 0}, {1, 1, 0},
                                     {2, 3, 1}, {1, 1, 1}, {2, 1, 0}, {2, 1, 1}};
    char why[160];
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_izb(2, 2, f, b, w, 2), 13, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 2, c, 2), 18, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 2, 2, c, 2), 15,
                           1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_zb(2, f, b, w, 2), 14, 1e-12);
    /* one chunk is ZB-H1 */
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_izb(1, 2, f, b, w, 2),
                           apsolve_schedule_time_zb(2, f, b, w, 2), 1e-12);
    CU_ASSERT_EQUAL_FATAL(apsolve_schedule_zb_order(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 2, 2, 0,
                                                    ord), 12);
    for (int i = 0; i < 12; i++)
        CU_ASSERT(ord[i].op == want0[i][0] && ord[i].stage == want0[i][1] &&
                  ord[i].mb == want0[i][2]);
    CU_ASSERT_EQUAL_FATAL(apsolve_schedule_zb_order(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 2, 2, 1,
                                                    ord), 12);
    for (int i = 0; i < 12; i++)
        CU_ASSERT(ord[i].op == want1[i][0] && ord[i].stage == want1[i][1] &&
                  ord[i].mb == want1[i][2]);
    for (int k = 0; k < 2; k++)
        CU_ASSERT_DOUBLE_EQUAL(
            apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 2, 2, k), 2, 0);
    /* n = 4, B = 8 */
    for (int k = 0; k < 4; k++)
        f[k] = 2, b[k] = 4, w[k] = 2;
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_izb(2, 8, f, b, w, 4), 48 + 3, 1e-12);
    for (int k = 0; k < 4; k++)
        CU_ASSERT_DOUBLE_EQUAL(
            apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 8, 4, k), 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 2, 8, 4, 0),
                           5.5, 0);
    /* PyTorch's rounds: B = 10 on 4 stages is 2 rounds of 5, 11 is refused */
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 10, 4, why,
                                          sizeof why));
    CU_ASSERT_DOUBLE_EQUAL(
        apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 10, 4, 0), 4.5, 0);
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 11, 4, why,
                                           sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "multiple of the rounds"));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 3, 4, why,
                                           sizeof why));
    CU_ASSERT(isnan(apsolve_schedule_time_izb(2, 3, f, b, w, 4)));
    CU_ASSERT(isnan(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 8, c, 4)));
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 3),
                           3, 0);
    CU_ASSERT_EQUAL(apsolve_schedule_stage_device(APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 4, 5), 1);
    CU_ASSERT_STRING_EQUAL(apsolve_schedule_name(APSOLVE_SCHEDULE_INTERLEAVED_ZB),
                           "interleaved-zb");
}

/* ZB-V by hand: n = 2, B = 2, chunks of 1 s each pass. Device 0 holds
 * virtual stages 0 and 3 and runs F0.0 F0.1 F3.0 B3.0 W3.0 F3.1 B3.1 W3.1
 * B0.0 W0.0 B0.1 W0.1; device 1 holds 1 and 2 (the V's bottom) and runs
 * F1.0 F2.0 F1.1 F2.1 B2.0 W2.0 B1.0 W1.0 B2.1 W2.1 B1.1 W1.1. Device 0
 * idles 2 .. 3 s (F3.0 waits for F2.0) and 11 .. 12 s (B0.1 waits for
 * B1.1), device 1 0 .. 1 s: 12 s of work each, done at 14 s. Peaks: 3 chunks on device 0
 * (F0.0 F0.1 F3.0 before W3.0), 4 on device 1: 1.5 and 2 micro-batches'
 * worth. At B = 4 the V takes 25 s, where 1F1B takes 30 s, interleaved
 * (v = 2) 27 s, ZB-H1 26 s, with 2 micro-batches' worth on each device
 * (1F1B's first stage's); on equal chunks F = B = W its bubble is
 * (n - 1) F for B >= 2 n - 1 (n = 4, B = 8: 48 + 3 chunk seconds). */
static void test_zbv(void)
{
    double f[4] = {2, 2, 2, 2}, b[4] = {4, 4, 4, 4}, w[4] = {2, 2, 2, 2}, c[4] = {6, 6, 6, 6};
    ApsolvePass ord[24];
    static const int want0[12][3] = {{0, 0, 0}, {0, 0, 1}, {0, 3, 0}, {1, 3, 0},
                                     {2, 3, 0}, {0, 3, 1}, {1, 3, 1}, {2, 3, 1},
                                     {1, 0, 0}, {2, 0, 0}, {1, 0, 1}, {2, 0, 1}};
    static const int want1[12][3] = {{0, 1, 0}, {0, 2, 0}, {0, 1, 1}, {0, 2, 1},
                                     {1, 2, 0}, {2, 2, 0}, {1, 1, 0}, {2, 1, 0},
                                     {1, 2, 1}, {2, 2, 1}, {1, 1, 1}, {2, 1, 1}};
    char why[160];
    CU_ASSERT_EQUAL_FATAL(apsolve_schedule_zb_order(APSOLVE_SCHEDULE_ZBV, 2, 2, 2, 0, ord), 12);
    for (int i = 0; i < 12; i++)
        CU_ASSERT(ord[i].op == want0[i][0] && ord[i].stage == want0[i][1] &&
                  ord[i].mb == want0[i][2]);
    CU_ASSERT_EQUAL_FATAL(apsolve_schedule_zb_order(APSOLVE_SCHEDULE_ZBV, 2, 2, 2, 1, ord), 12);
    for (int i = 0; i < 12; i++)
        CU_ASSERT(ord[i].op == want1[i][0] && ord[i].stage == want1[i][1] &&
                  ord[i].mb == want1[i][2]);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_zbv(2, f, b, w, 2), 14, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_ZBV, 2, 2, 2, 0), 1.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_ZBV, 2, 2, 2, 1), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_zbv(4, f, b, w, 2), 25, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_1F1B, 1, 4, c, 2), 30, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time(APSOLVE_SCHEDULE_INTERLEAVED, 2, 4, c, 2), 27,
                           1e-12);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_zb(4, f, b, w, 2), 26, 1e-12);
    for (int k = 0; k < 2; k++)
        CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_ZBV, 2, 4, 2, k),
                               apsolve_schedule_in_flight(APSOLVE_SCHEDULE_1F1B, 1, 4, 2, 0), 0);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_time_zbv(8, f, b, w, 4), 48 + 3, 1e-12);
    for (int k = 0; k < 4; k++)
        CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_ZBV, 2, 8, 4, k), 4,
                               0);
    /* the V: device of each virtual stage, two crossings per boundary */
    CU_ASSERT_EQUAL(apsolve_schedule_stage_device(APSOLVE_SCHEDULE_ZBV, 2, 4, 3), 3);
    CU_ASSERT_EQUAL(apsolve_schedule_stage_device(APSOLVE_SCHEDULE_ZBV, 2, 4, 4), 3);
    CU_ASSERT_EQUAL(apsolve_schedule_stage_device(APSOLVE_SCHEDULE_ZBV, 2, 4, 7), 0);
    CU_ASSERT_EQUAL(apsolve_schedule_stage_device(APSOLVE_SCHEDULE_ZBV, 2, 4, 8), -1);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_transfer_factor(APSOLVE_SCHEDULE_ZBV, 0), 2, 0);
    CU_ASSERT_TRUE(apsolve_schedule_valid(APSOLVE_SCHEDULE_ZBV, 2, 1, 4, why, sizeof why));
    CU_ASSERT_FALSE(apsolve_schedule_valid(APSOLVE_SCHEDULE_ZBV, 3, 8, 4, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "exactly 2"));
    w[1] = 5; /* W above the backward */
    CU_ASSERT(isnan(apsolve_schedule_time_zbv(8, f, b, w, 4)));
    CU_ASSERT_EQUAL(apsolve_schedule_zb_order(APSOLVE_SCHEDULE_1F1B, 1, 8, 4, 0, ord), -1);
    CU_ASSERT_TRUE(apsolve_schedule_zero_bubble(APSOLVE_SCHEDULE_ZBV));
    CU_ASSERT_FALSE(apsolve_schedule_zero_bubble(APSOLVE_SCHEDULE_INTERLEAVED));
}

/* The solver prices both on the 4 single-layer stages of test_zb_solver
 * (F 1 s, backward 2 s of which W 1 s; chunks of half that), B = 8:
 * interleaved ZB (v = 2) 8 x 3 + 3 x 1 / 2 = 25.5 s and the V 25.5 s (its
 * (n - 1) F bubble of 1.5 s on equal chunks), 4 micro-batches' worth in
 * flight on every stage under both. */
static void test_zb_multi_solver(void)
{
    ApsolveProblem *p = NULL;
    ApsolveOptions o;
    ApsolvePlan *pl = NULL;
    CU_ASSERT_FATAL(apsolve_problem_new(4, 1, 4, 1, 1, 1, &p) == APSOLVE_OK);
    p->submeshes[0] = (ApsolveSubmesh){1, 1};
    p->configs[0] = (ApsolveConfig){1, 1, 1, 0, {0, 0, 0}};
    for (int i = 0; i < 4; i++) {
        size_t idx = apsolve_index(p, i, i, 0, 0);
        p->cost[idx] = 3;
        apsolve_times_own(p, idx)->fwd = 1;
        apsolve_times_own(p, idx)->bwd = 2;
        apsolve_times_own(p, idx)->wgrad = 1;
    }
    memset(&o, 0, sizeof o);
    o.micro_batches = 8;
    o.objective = APSOLVE_OBJECTIVE_FULL;
    for (int s = APSOLVE_SCHEDULE_INTERLEAVED_ZB; s <= APSOLVE_SCHEDULE_ZBV; s++) {
        o.schedule = s;
        o.virtual_stages = 2;
        CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
        CU_ASSERT_EQUAL_FATAL(pl->n_stages, 4);
        CU_ASSERT(pl->feasible);
        CU_ASSERT_EQUAL(pl->schedule, s);
        CU_ASSERT_EQUAL(pl->virtual_stages, 2);
        CU_ASSERT_DOUBLE_EQUAL(pl->cost, 25.5, 1e-12);
        for (int k = 0; k < 4; k++)
            CU_ASSERT_DOUBLE_EQUAL(pl->stages[k].in_flight, 4, 0);
        apsolve_plan_free(&pl);
    }
    apsolve_problem_free(&p);
}

/* A random number in [lo, hi) from a fixed LCG (the same runs everywhere). */
static double rnd(unsigned *state, double lo, double hi)
{
    *state = *state * 1103515245u + 12345u;
    return lo + (hi - lo) * (double)((*state >> 8) & 0xffffff) / 16777216.0;
}

/* The solver prices each zero-bubble plan with the schedule's own function
 * (apsolve_schedule_time_zb, _izb, _zbv): n = 1 .. 5 single-layer stages
 * on one GPU each, so the plan is the stages as given, with random F, B
 * and W (equal on every stage in half the draws, W anywhere in 0 .. B so
 * every branch of the fill is met), every valid B up to 3 n + 1 and
 * interleaved ZB on 1 .. 3 chunks; the two agree to rounding (the solver
 * sums its stages from the last, the functions from the first). */
static void test_zb_price_agrees(void)
{
    unsigned seed = 20261129u;
    int checked[APSOLVE_SCHEDULE_COUNT] = {0};
    for (int trial = 0; trial < 60; trial++) {
        int n = 1 + trial % 5, equal = (trial / 5) % 2;
        double f[5], b[5], w[5];
        ApsolveProblem *p = NULL;
        ApsolveOptions o;
        CU_ASSERT_FATAL(apsolve_problem_new(n, 1, n, 1, 1, 1, &p) == APSOLVE_OK);
        p->submeshes[0] = (ApsolveSubmesh){1, 1};
        p->configs[0] = (ApsolveConfig){1, 1, 1, 0, {0, 0, 0}};
        for (int k = 0; k < n; k++) {
            size_t idx = apsolve_index(p, k, k, 0, 0);
            if (k == 0 || !equal) {
                f[k] = rnd(&seed, 0.05, 3);
                b[k] = rnd(&seed, 0.05, 6);
                w[k] = rnd(&seed, 0, 1) * b[k];
            } else {
                f[k] = f[0], b[k] = b[0], w[k] = w[0];
            }
            apsolve_times_own(p, idx)->fwd = f[k];
            apsolve_times_own(p, idx)->bwd = b[k];
            apsolve_times_own(p, idx)->wgrad = w[k];
            p->cost[idx] = f[k] + b[k];
        }
        memset(&o, 0, sizeof o);
        o.objective = APSOLVE_OBJECTIVE_FULL;
        for (int s = APSOLVE_SCHEDULE_ZB_H1; s <= APSOLVE_SCHEDULE_ZBV; s++)
            for (int v = 1; v <= (s == APSOLVE_SCHEDULE_INTERLEAVED_ZB ? 3 : 1); v++)
                for (int B = 1; B <= 3 * n + 1; B++) {
                    ApsolvePlan *pl = NULL;
                    int vv = s == APSOLVE_SCHEDULE_ZBV ? 2 : v;
                    double want = s == APSOLVE_SCHEDULE_ZB_H1
                                      ? apsolve_schedule_time_zb(B, f, b, w, (size_t)n)
                                  : s == APSOLVE_SCHEDULE_ZBV
                                      ? apsolve_schedule_time_zbv(B, f, b, w, (size_t)n)
                                      : apsolve_schedule_time_izb(v, B, f, b, w, (size_t)n);
                    if (!apsolve_schedule_valid((ApsolveSchedule)s, vv, B, n, NULL, 0)) {
                        CU_ASSERT(isnan(want));
                        continue;
                    }
                    o.schedule = s;
                    o.virtual_stages = vv;
                    o.micro_batches = B;
                    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
                    CU_ASSERT_EQUAL_FATAL(pl->n_stages, (size_t)n);
                    for (int k = 0; k < n; k++)
                        CU_ASSERT_EQUAL(pl->stages[k].start_layer, k);
                    CU_ASSERT(pl->feasible);
                    CU_ASSERT(isfinite(want));
                    CU_ASSERT_DOUBLE_EQUAL(pl->cost, want, 1e-12 * want);
                    if (fabs(pl->cost - want) > 1e-12 * want)
                        fprintf(stderr, "%s v=%d B=%d n=%d: solver %.17g, function %.17g\n",
                                apsolve_schedule_name((ApsolveSchedule)s), vv, B, n, pl->cost,
                                want);
                    checked[s]++;
                    apsolve_plan_free(&pl);
                }
        apsolve_problem_free(&p);
    }
    CU_ASSERT(checked[APSOLVE_SCHEDULE_ZB_H1] > 100);
    CU_ASSERT(checked[APSOLVE_SCHEDULE_INTERLEAVED_ZB] > 100);
    CU_ASSERT(checked[APSOLVE_SCHEDULE_ZBV] > 100);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"names", test_names},
        {"iteration time", test_time},
        {"in-flight activations", test_in_flight},
        {"transfer factor and validity", test_transfer_and_valid},
        {"megatron-core warm-up and exposed exchanges", test_p2p},
        {"zb-h1", test_zb},
        {"zb-h1: the solver's plan", test_zb_solver},
        {"interleaved-zb by hand", test_izb},
        {"zbv by hand", test_zbv},
        {"interleaved-zb and zbv: the solver's plans", test_zb_multi_solver},
        {"zero bubble: the solver prices with the schedule's function", test_zb_price_agrees},
    };
    return CUNIT_RUN("solver-schedule", tests);
}
