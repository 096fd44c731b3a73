/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A chunked family's first plan to beat (solver/chunk_first.c; session_
 * search.c, try_chunks; docs/performance.md, "A plan to beat first for the
 * interleaved family"):
 *
 * - the order's rule over random full estimates per v (small integers, so
 *   ties between v are common, and +inf for a v with no plan), every v
 *   tried as the first: the family ends on the v it ends on from no plan
 *   to beat in ascending order (the first v of least full estimate). With
 *   the bar of a v before the first left at the first's estimate (no tie
 *   kept) it fails;
 * - try_chunks's loop on the DP's objective over random problems
 *   (interleaved 1F1B, floors as try_chunks reads them): from no plan to
 *   beat in ascending order, and with the v apsolve_chunk_first_v ranks
 *   best searched first and the floors cutting at each v's bar, the same
 *   plan (stages, costs, counts) and v.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "chunk_first.h"
#include "cunit_run.h"
#include "oracle.h"
#include "schedule.h"
#include "solver_int.h"

/* The v a family ends on over estimates est[v] (v = vmin .. vmax), the
 * order's rule with first (-1: ascending from no plan to beat). */
static int family_winner(const double *est, int vmin, int vmax, int first)
{
    ApsolveChunkOrder o;
    double best = INFINITY;
    int won = -1;
    apsolve_chunk_order_init(&o, vmin, vmax, first);
    for (int v; (v = apsolve_chunk_order_next(&o)) >= 0;)
        if (est[v] < apsolve_chunk_order_bar(&o, v, best)) {
            best = est[v];
            won = v;
            apsolve_chunk_order_kept(&o, v);
        }
    return won;
}

static void test_order_rule(void)
{
    uint64_t rng = 0xF1257ull;
    int differ = 0, cases = 0, tied = 0;
    double est[16];
    for (int t = 0; t < 2000; t++) {
        int vmin = 2, vmax = 2 + (int)(oracle_rand(&rng) % 12), plain;
        for (int v = vmin; v <= vmax; v++)
            est[v] = oracle_rand(&rng) % 7 == 0 ? INFINITY : (double)(oracle_rand(&rng) % 5);
        plain = family_winner(est, vmin, vmax, -1);
        for (int first = vmin; first <= vmax; first++) {
            int w = family_winner(est, vmin, vmax, first);
            differ += w != plain;
            cases++;
            /* a v before the first ties it and wins: the tie rule at work */
            tied += plain >= 0 && plain < first && est[plain] == est[first];
        }
        /* the visiting order: first, then every other v once, ascending */
        {
            ApsolveChunkOrder o;
            int first = vmin + (int)(oracle_rand(&rng) % (unsigned)(vmax - vmin + 1)), seen = 0,
                prev = -1, ok = 1;
            apsolve_chunk_order_init(&o, vmin, vmax, first);
            for (int v; (v = apsolve_chunk_order_next(&o)) >= 0; seen++) {
                ok &= seen == 0 ? v == first : v != first && v > prev;
                if (seen)
                    prev = v;
            }
            CU_ASSERT(ok && seen == vmax - vmin + 1);
        }
    }
    CU_ASSERT(differ == 0);
    CU_ASSERT(tied > 100); /* ties before the first are met */
    printf("\n  order rule: %d cases, %d differ, %d won by a tie before the first\n", cases,
           differ, tied);
}

static ApsolveProblem *random_problem(uint64_t *rng, int t)
{
    ApsolveProblem *p = NULL;
    CU_ASSERT_FATAL(oracle_chunk_problem(rng, t, 4, 0.2, 0, 2, &p) == APSOLVE_OK);
    return p;
}

/* try_chunks's loop on the DP's objective (total_cost for the full
 * estimate) from no plan to beat, first as the order's (-1: ascending):
 * the v it ends on into *won and its plan (the caller frees). */
static ApsolvePlan *family_search(const ApsolveProblem *p, const ApsolveOptions *base,
                                  const ApsolveStageFloor *fl, int first, int *won)
{
    ApsolveChunkOrder ord;
    ApsolvePlan *best = NULL;
    int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices;
    double price = INFINITY;
    *won = -1;
    apsolve_chunk_order_init(&ord, 2, p->num_layers, first);
    for (int v; (v = apsolve_chunk_order_next(&ord)) >= 0;) {
        ApsolveOptions o = *base;
        ApsolvePlan *il = NULL;
        double bar = apsolve_chunk_order_bar(&ord, v, price);
        if (apsolve_chunk_skip(apsolve_chunk_floor(fl, APSOLVE_SCHEDULE_INTERLEAVED, v,
                                                   base->micro_batches, nmax),
                               base->micro_batches, bar))
            continue;
        o.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
        o.virtual_stages = v;
        o.whole_chunks = 1;
        if (apsolve_solve(p, &o, &il) != APSOLVE_OK)
            continue;
        if (il->feasible && il->total_cost < bar) {
            apsolve_plan_free(&best);
            best = il;
            price = il->total_cost;
            *won = v;
            apsolve_chunk_order_kept(&ord, v);
        } else {
            apsolve_plan_free(&il);
        }
    }
    return best;
}

static int same_plan(const ApsolvePlan *a, const ApsolvePlan *b)
{
    int same;
    if (!a || !b)
        return a == b;
    same = a->n_stages == b->n_stages && a->cost == b->cost && a->total_cost == b->total_cost &&
           a->virtual_stages == b->virtual_stages && a->dp_evaluations == b->dp_evaluations &&
           a->candidates == b->candidates;
    for (size_t k = 0; same && k < a->n_stages; k++)
        same = a->stages[k].end_layer == b->stages[k].end_layer &&
               a->stages[k].submesh == b->stages[k].submesh &&
               a->stages[k].config == b->stages[k].config;
    return same;
}

static void test_family_first(void)
{
    uint64_t rng = 0xF1257F1257ull;
    int differ = 0, searched = 0, moved = 0, ranked = 0;
    for (int t = 0; t < 120; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveStageFloor fl;
        ApsolveOptions o;
        int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices, first, wa,
            wb;
        double *each = malloc(((size_t)nmax + 1) * sizeof *each);
        CU_ASSERT_FATAL(each != NULL);
        memset(&o, 0, sizeof o);
        o.micro_batches = (int[]){2, 4, 8, 12}[oracle_rand(&rng) % 4];
        o.objective = t % 3 == 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        CU_ASSERT_FATAL(apsolve_stage_floor_init_plain(&fl, p) == APSOLVE_OK);
        first = apsolve_chunk_first_v(&fl, APSOLVE_SCHEDULE_INTERLEAVED, 2, p->num_layers,
                                      o.micro_batches, nmax, each);
        CU_ASSERT(first == -1 || (first >= 2 && first <= p->num_layers));
        ranked += first > 2;
        {
            ApsolvePlan *a = family_search(p, &o, &fl, -1, &wa);
            ApsolvePlan *b = family_search(p, &o, &fl, first, &wb);
            differ += !same_plan(a, b) || wa != wb;
            searched += a != NULL;
            moved += a && first >= 0 && wa != first;
            apsolve_plan_free(&a);
            apsolve_plan_free(&b);
        }
        /* and every v as the first */
        for (int v = 2; v <= p->num_layers && t % 4 == 0; v++) {
            ApsolvePlan *a = family_search(p, &o, &fl, -1, &wa);
            ApsolvePlan *b = family_search(p, &o, &fl, v, &wb);
            differ += !same_plan(a, b) || wa != wb;
            apsolve_plan_free(&a);
            apsolve_plan_free(&b);
        }
        free(each);
        apsolve_stage_floor_free(&fl);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(differ == 0);
    CU_ASSERT(searched > 60);
    CU_ASSERT(ranked > 10); /* the ranking picks other v than the first */
    printf("\n  family: %d searched, %d differ, first ranked past v = 2 in %d, the winner another "
           "v in %d\n",
           searched, differ, ranked, moved);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the order's rule keeps the ascending search's v", test_order_rule},
        {"the interleaved family from its first v", test_family_first},
    };
    return CUNIT_RUN("solver_chunk_first", tests);
}
