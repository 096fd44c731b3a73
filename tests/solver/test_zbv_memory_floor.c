/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ZB-V's device paths under the memory rule, one config per stage
 * (solver/chunk_floor_mem.c; docs/performance.md, "ZB-V's device paths
 * under the memory rule, one config per stage (issue 38, zbfloor)"), on
 * random problems with memory limits and passes:
 *
 * - a stage count the floor leaves out (each[n] +inf under tau) has no
 *   plan below B tau: the DP's own plan of that count alone is at or
 *   above it;
 * - the search with the counts left out keeps the whole search's plan
 *   where that plan is below B tau (the stages, configs and costs);
 * - the floor with the search's options leaves out counts that the one
 *   without them (the least figures of any config, chunk_floor.c) keeps.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "oracle.h"
#include "session_int.h"
#include "solver_int.h"

static ApsolveProblem *memory_problem(uint64_t *rng, int t)
{
    ApsolveProblem *p = NULL;
    CU_ASSERT_FATAL(oracle_chunk_problem(rng, t, 6, 0.1, 1, 1, &p) == APSOLVE_OK);
    return p;
}

/* The same stages, configs and costs (the threshold DPs' counts differ
 * with the counts searched). */
static int same_stages(const ApsolvePlan *a, const ApsolvePlan *b)
{
    int same;
    if (!a || !b)
        return a == b;
    same = a->n_stages == b->n_stages && a->cost == b->cost && a->total_cost == b->total_cost;
    for (size_t k = 0; same && k < a->n_stages; k++)
        same = a->stages[k].end_layer == b->stages[k].end_layer &&
               a->stages[k].submesh == b->stages[k].submesh &&
               a->stages[k].config == b->stages[k].config;
    return same;
}

/* The DP's plan of count n alone (NULL: none feasible). */
static ApsolvePlan *count_plan(const ApsolveProblem *p, const ApsolveOptions *o,
                               ApsolveDpShared *sh, unsigned char *skip, int nmax, int n)
{
    ApsolvePlan *one = NULL;
    for (int q = 0; q <= nmax; q++)
        skip[q] = q != n;
    if (apsolve_solve_shared_skip(p, o, sh, skip, &one) != APSOLVE_OK || !one->feasible ||
        (int)one->n_stages != n)
        apsolve_plan_free(&one);
    return one;
}

static void test_zbv_memory_floor(void)
{
    uint64_t rng = 0x2BF1ull;
    int low = 0, closed = 0, by_rule = 0, differ = 0, kept = 0, counts = 0;
    for (int t = 0; t < 120; t++) {
        ApsolveProblem *p = memory_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveStageFloor fl;
        ApsolveOptions o;
        int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices;
        double *each = malloc(((size_t)nmax + 1) * sizeof *each),
               *plain = malloc(((size_t)nmax + 1) * sizeof *plain), least = INFINITY;
        unsigned char *skip = malloc((size_t)nmax + 1);
        CU_ASSERT_FATAL(sh && each && plain && skip);
        memset(&o, 0, sizeof o);
        o.micro_batches = 3 + t % 3;
        o.objective = t % 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        o.schedule = APSOLVE_SCHEDULE_ZBV;
        o.virtual_stages = 2;
        o.whole_chunks = 1;
        CU_ASSERT_FATAL(apsolve_stage_floor_init(&fl, p) == APSOLVE_OK);
        for (int n = 1; n <= nmax; n++) {
            ApsolvePlan *one = count_plan(p, &o, sh, skip, nmax, n);
            if (one && one->total_cost < least)
                least = one->total_cost;
            apsolve_plan_free(&one);
        }
        /* tau at the least count's plan and a little above it */
        for (int k = 0; k < 2 && isfinite(least) && fl.root; k++) {
            double tau = least * (k ? 1.15 : 1.0) / o.micro_batches, U = o.micro_batches * tau;
            ApsolvePlan *whole = NULL, *cut = NULL;
            apsolve_stage_floor_under(&fl, tau);
            fl.opt = NULL;
            apsolve_chunk_floor_each(&fl, o.schedule, 2, o.micro_batches, nmax, plain);
            fl.opt = &o;
            apsolve_chunk_floor_each(&fl, o.schedule, 2, o.micro_batches, nmax, each);
            fl.opt = NULL;
            for (int n = 1; n <= nmax; n++) {
                ApsolvePlan *one;
                if (isfinite(each[n]))
                    continue;
                one = count_plan(p, &o, sh, skip, nmax, n);
                counts += one != NULL;
                closed += one != NULL;
                by_rule += one != NULL && isfinite(plain[n]);
                /* no plan of a count left out is below B tau */
                low += one && one->total_cost < U * (1 - 1e-9);
                apsolve_plan_free(&one);
            }
            /* the search without the counts left out, against the whole */
            for (int n = 0; n <= nmax; n++)
                skip[n] = 0;
            CU_ASSERT(apsolve_solve_shared_skip(p, &o, sh, skip, &whole) == APSOLVE_OK ||
                      whole == NULL);
            for (int n = 0; n <= nmax; n++)
                skip[n] = n == 0 || !isfinite(each[n]);
            if (apsolve_solve_shared_skip(p, &o, sh, skip, &cut) != APSOLVE_OK)
                apsolve_plan_free(&cut);
            if (whole && whole->feasible && whole->total_cost < U * (1 - 1e-9)) {
                kept++;
                differ += !same_stages(whole, cut);
            }
            apsolve_plan_free(&whole);
            apsolve_plan_free(&cut);
        }
        apsolve_stage_floor_free(&fl);
        apsolve_dp_shared_free(sh);
        free(each);
        free(plain);
        free(skip);
        apsolve_problem_free(&p);
    }
    fprintf(stderr,
            "zbv memory floor: %d counts left out with a plan (%d by the memory rule and one "
            "config), %d below B tau; %d searches below it, %d plans differ\n",
            closed, by_rule, low, kept, differ);
    CU_ASSERT(low == 0);
    CU_ASSERT(differ == 0);
    CU_ASSERT(kept > 20);
    CU_ASSERT(by_rule > 10); /* the rule leaves out counts the least figures keep */
    (void)counts;
}

int main(void)
{
    static const CunitTest tests[] = {
        {"ZB-V's device paths under the memory rule close only counts with no plan under best",
         test_zbv_memory_floor},
    };
    return CUNIT_RUN("solver_zbv_memory_floor", tests);
}
