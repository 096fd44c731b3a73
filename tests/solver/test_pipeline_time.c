/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One owner of the pipeline's base time (issue 37): every path that prices
 * a pipeline gives exactly (bit for bit) what apsolve_schedule_base_time
 * gives on the sum and max that path takes, on random stage sets (n = 1..6,
 * equal stages in a third of the draws, a stage cost above fwd + bwd as a
 * communication delta leaves it, an infinite stage now and then, W unknown
 * now and then), every schedule, B = 1..13 and v = 1..4: the schedule's
 * functions (apsolve_schedule_time, _time_zb, _time_izb, ZBV's saving), the
 * solver's plan pricing (apsolve_plan_price, evaluate.c) and --batch's
 * (apsolve_rebatch_plan, rebatch.c). The full estimate's is checked in
 * test_beyond.c (it needs a database). Also the function by hand.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apsolve.h"
#include "cunit_run.h"
#include "schedule.h"
#include "solver_int.h"

/* the same double, or both NaN */
#define SAME(a, b) ((a) == (b) || (isnan(a) && isnan(b)))

static double rnd(unsigned *state, double lo, double hi)
{
    *state = *state * 1103515245u + 12345u;
    return lo + (hi - lo) * (double)((*state >> 8) & 0xffffff) / 16777216.0;
}

static int mismatches;

static void check(const char *what, double got, double want, int s, int v, int B, int n)
{
    CU_ASSERT(SAME(got, want));
    if (!SAME(got, want) && mismatches++ < 10)
        fprintf(stderr, "%s: %s v=%d B=%d n=%d: %a, the base time gives %a\n", what,
                apsolve_schedule_name((ApsolveSchedule)s), v, B, n, got, want);
}

static void test_by_hand(void)
{
    /* Alpa's T: 10 + 4 x 3; B = 1 is the sum, also with an infinite max */
    CU_ASSERT_EQUAL(apsolve_schedule_base_time(1, 5, 10, 3), 22);
    CU_ASSERT_EQUAL(apsolve_schedule_base_time(0, 5, 10, 3), 22);
    CU_ASSERT_EQUAL(apsolve_schedule_base_time(1, 1, 10, INFINITY), 10);
    /* interleaved: (10 + (2 x 5 - 1) x 3) / 2 */
    CU_ASSERT_EQUAL(apsolve_schedule_base_time(2, 5, 10, 3), 18.5);
    CU_ASSERT_EQUAL(apsolve_schedule_base_time(4, 1, 8, 2), 3.5);
}

static void test_paths_agree(void)
{
    unsigned seed = 37u;
    long checked = 0;
    mismatches = 0;
    for (int trial = 0; trial < 400; trial++) {
        int n = 1 + trial % 6, equal = trial % 3 == 0;
        double c[6], f[6], b[6], w[6], fb[6];
        ApsolveStage st[6];
        ApsolveProblem *p = NULL;
        CU_ASSERT_FATAL(apsolve_problem_new(n, 1, n, 1, 1, 1, &p) == APSOLVE_OK);
        memset(st, 0, sizeof st);
        for (int k = 0; k < n; k++) {
            if (k == 0 || !equal) {
                f[k] = rnd(&seed, 0.01, 3);
                b[k] = rnd(&seed, 0.01, 6);
                w[k] = rnd(&seed, 0, 10) < 1 ? -1 : rnd(&seed, 0, 1) * b[k];
                c[k] = f[k] + b[k];
                if (rnd(&seed, 0, 5) < 1)
                    c[k] += rnd(&seed, 0, 1e-3);
                if (rnd(&seed, 0, 40) < 1)
                    c[k] = f[k] = b[k] = INFINITY, w[k] = -1;
            } else {
                f[k] = f[0], b[k] = b[0], w[k] = w[0], c[k] = c[0];
            }
            fb[k] = f[k] + b[k];
            st[k] = (ApsolveStage){.start_layer = k, .end_layer = k, .submesh = -1,
                                   .config = -1, .hosts = 1, .gpus = 1, .force_batch_dim = -1,
                                   .cost = c[k], .fwd_cost = f[k], .bwd_cost = b[k],
                                   .wgrad_cost = w[k], .apply_cost = -1, .memory_ok = 1};
        }
        for (int s = 0; s < APSOLVE_SCHEDULE_COUNT; s++)
            for (int v = 1; v <= 4; v++)
                for (int B = 1; B <= 13; B++) {
                    double sum = 0, mx = 0, fsum = 0, fmx = 0, want;
                    ApsolveOptions o = {.micro_batches = B, .schedule = s, .virtual_stages = v};
                    ApsolvePlan pl = {.n_stages = (size_t)n, .stages = st}, *np = NULL;
                    int vs = apsolve_virtual(&o);
                    /* the functions of schedule.h sum from the first stage */
                    for (int k = 0; k < n; k++) {
                        fsum += s <= APSOLVE_SCHEDULE_INTERLEAVED ? c[k] : fb[k];
                        fmx = fmax(fmx, s <= APSOLVE_SCHEDULE_INTERLEAVED ? c[k] : fb[k]);
                    }
                    if (s <= APSOLVE_SCHEDULE_INTERLEAVED)
                        check("apsolve_schedule_time",
                              apsolve_schedule_time((ApsolveSchedule)s, v, B, c, (size_t)n),
                              apsolve_schedule_base_time(
                                  s == APSOLVE_SCHEDULE_INTERLEAVED ? v : 1, B, fsum, fmx),
                              s, v, B, n);
                    else if (s == APSOLVE_SCHEDULE_ZB_H1 && v == 1 && B >= n)
                        check("apsolve_schedule_time_zb",
                              apsolve_schedule_time_zb(B, f, b, w, (size_t)n),
                              apsolve_schedule_base_time(1, B, fsum, fmx) -
                                  apsolve_schedule_zb_saving((ApsolveSchedule)s, 1, B, f, b, w,
                                                             (size_t)n),
                              s, v, B, n);
                    else if (s == APSOLVE_SCHEDULE_INTERLEAVED_ZB &&
                             apsolve_schedule_valid((ApsolveSchedule)s, v, B, n, NULL, 0))
                        check("apsolve_schedule_time_izb",
                              apsolve_schedule_time_izb(v, B, f, b, w, (size_t)n),
                              apsolve_schedule_base_time(v, B, fsum, fmx) -
                                  apsolve_schedule_zb_saving((ApsolveSchedule)s, v, B, f, b, w,
                                                             (size_t)n),
                              s, v, B, n);
                    else if (s == APSOLVE_SCHEDULE_ZBV && v == 2)
                        check("the ZBV saving",
                              apsolve_schedule_zb_saving((ApsolveSchedule)s, 2, B, f, b, w,
                                                         (size_t)n),
                              apsolve_schedule_base_time(2, B, fsum, fmx) -
                                  apsolve_schedule_time_zbv(B, f, b, w, (size_t)n),
                              s, v, B, n);
                    /* the solver sums its stages from the last, an infinite one the max */
                    for (int k = n; k-- > 0;) {
                        sum += c[k];
                        if (c[k] > mx || isinf(c[k]))
                            mx = c[k];
                    }
                    apsolve_plan_price(p, &o, &pl);
                    want = apsolve_schedule_base_time(vs, B, sum, mx) -
                           apsolve_stages_zb_saving(s, vs, B, st, (size_t)n);
                    check("apsolve_plan_price", pl.cost, want, s, v, B, n);
                    /* --batch at twice the micro-batch size: the scaled stages */
                    CU_ASSERT_FATAL(apsolve_rebatch_plan(p, &pl, 4, 8, &np) == APSOLVE_OK);
                    sum = mx = 0;
                    for (int k = n; k-- > 0;) {
                        sum += np->stages[k].cost;
                        if (np->stages[k].cost > mx || isinf(np->stages[k].cost))
                            mx = np->stages[k].cost;
                    }
                    want = apsolve_schedule_base_time(np->virtual_stages, B, sum, mx) -
                           apsolve_stages_zb_saving(s, np->virtual_stages, B, np->stages,
                                                    (size_t)n);
                    check("apsolve_rebatch_plan", np->cost, want, s, v, B, n);
                    apsolve_plan_free(&np);
                    checked++;
                }
        apsolve_problem_free(&p);
    }
    CU_ASSERT(checked == 400L * APSOLVE_SCHEDULE_COUNT * 4 * 13);
    if (mismatches)
        fprintf(stderr, "%d prices differ from apsolve_schedule_base_time\n", mismatches);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"by hand", test_by_hand},
        {"every pricing path prices with apsolve_schedule_base_time", test_paths_agree},
    };
    return CUNIT_RUN("pipeline base time", tests);
}
