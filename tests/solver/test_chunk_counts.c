/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A chunked search's stage counts searched one at a time (solver/
 * dp_counts.c; session_search.c, chunk_solve; docs/performance.md,
 * "apsolve's chunked searches: each stage count searched once"), in test
 * program solver-chunk-floor (test_chunk_floor.c, chunk_floor_test.h).
 * Over random problems with passes, memory, apply costs (some unknown)
 * and headroom, under interleaved 1F1B, interleaved ZB, ZB-V and ZB-H1,
 * both objectives, some stage counts left out and bars from 0.3 to 2 x
 * the search's objective, chunk_solve's steps through the API:
 *
 * - the counts cut at the bar, then narrowed (apsolve_counts_narrow): with
 *   none at or below it, the search over the counts asked for
 *   (apsolve_solve_shared_skip) answers above the bar or is infeasible;
 * - else the counts left searched whole: their best (apsolve_counts_best)
 *   is the plan of the search over the counts asked for;
 * - then apsolve_counts_whole: the plan and counts (threshold DPs,
 *   distinct costs) of apsolve_solve_shared, each count searched whole
 *   once; and from no count searched, the same.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "chunk_floor_test.h"
#include "oracle.h"
#include "schedule.h"
#include "session_int.h"
#include "solver_int.h"

typedef struct {
    int wrong, wins, narrowed, whole, dropped, other;
} CountsSeen;

/* One plan to beat, best (chunk_solve's steps at its bar) on a fresh
 * ApsolveCounts: some is the search over the counts skip leaves, whole the
 * whole search. */
static void counts_case(const ApsolveProblem *p, const ApsolveOptions *o, ApsolveDpShared *sh,
                        const unsigned char *skip, const ApsolvePlan *some,
                        const ApsolvePlan *whole, double best, CountsSeen *n)
{
    int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices, top, e;
    int ns[64], count = 0, wins = some && some->feasible && some->cost < best;
    unsigned char want[64];
    ApsolveCounts cs;
    ApsolvePlan *pl = NULL;
    const ApsolvePlan *at;
    double bar;
    for (int q = 0; q <= nmax; q++)
        want[q] = !skip[q];
    for (int q = 1; q <= nmax; q++)
        if (want[q] && apsolve_schedule_valid((ApsolveSchedule)o->schedule, o->virtual_stages,
                                              o->micro_batches, q, NULL, 0))
            ns[count++] = q;
    bar = apsolve_chunk_bar(p, o, best, ns, count, 0);
    n->wins += wins;
    CU_ASSERT_FATAL(apsolve_counts_init(&cs, nmax) == APSOLVE_OK);
    CU_ASSERT_FATAL(apsolve_solve_counts(p, o, sh, want, bar, &cs) == APSOLVE_OK);
    if (!apsolve_counts_narrow(&cs, want, bar)) {
        n->wrong += wins; /* a plan try_chunks keeps is at or below the bar */
        apsolve_counts_free(&cs);
        return;
    }
    for (int q = 1; q <= nmax; q++)
        n->dropped += !skip[q] && !want[q];
    n->narrowed++;
    CU_ASSERT_FATAL(apsolve_solve_counts(p, o, sh, want, INFINITY, &cs) == APSOLVE_OK);
    top = apsolve_counts_best(&cs);
    n->wrong += top < 0 || !some;
    if (top < 0 || !some) {
        apsolve_counts_free(&cs);
        return;
    }
    /* a plan to keep is the one the search over the counts asked for has */
    at = cs.plan[top];
    e = at->n_stages != some->n_stages || at->cost != some->cost ||
        at->total_cost != some->total_cost;
    for (size_t k = 0; !e && k < at->n_stages; k++)
        e = at->stages[k].end_layer != some->stages[k].end_layer ||
            at->stages[k].submesh != some->stages[k].submesh ||
            at->stages[k].config != some->stages[k].config;
    n->wrong += wins && e;
    n->other += e;
    /* every count searched whole once: the whole search's plan and counts */
    e = apsolve_counts_whole(p, o, sh, &cs, &pl);
    n->wrong += e != APSOLVE_OK || !same_plan(pl, whole);
    n->whole++;
    apsolve_plan_free(&pl);
    apsolve_counts_free(&cs);
}

void test_chunk_counts(void)
{
    static const double cs[] = {0.3, 0.7, 0.9, 0.99, 1.0, 1.01, 1.1, 1.5, 2.0};
    static const int kinds[] = {APSOLVE_SCHEDULE_INTERLEAVED, APSOLVE_SCHEDULE_INTERLEAVED_ZB,
                                APSOLVE_SCHEDULE_ZBV};
    uint64_t rng = 0xC0C47ull;
    CountsSeen n = {0, 0, 0, 0, 0, 0};
    int fresh = 0;
    for (int t = 0; t < 240; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o;
        ApsolvePlan *whole = NULL, *some = NULL, *pl = NULL;
        ApsolveCounts c0;
        int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices, rw, rs;
        size_t cells = apsolve_problem_cells(p);
        unsigned char skip[64] = {0};
        CU_ASSERT_FATAL(sh != NULL && nmax < 64);
        for (size_t k = 0; k < cells; k++)
            p->apply_cost[k] = oracle_rand(&rng) % 6 == 0 ? -1
                                                          : (double)(oracle_rand(&rng) % 9) / 8;
        memset(&o, 0, sizeof o);
        o.objective = t % 3 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        o.schedule = kinds[t % 3];
        o.virtual_stages = o.schedule == APSOLVE_SCHEDULE_ZBV ? 2 : 2 + (t / 3) % 2;
        o.whole_chunks = 1;
        o.micro_batches = (int[]){2, 4, 8, 3}[(t / 6) % 4];
        o.headroom_percent = t % 5 < 2 ? 15 : 0;
        o.search_headroom = o.headroom_percent > 0;
        for (int q = 1; q <= nmax; q++)
            skip[q] = t % 2 && oracle_rand(&rng) % 3 == 0;
        rw = apsolve_solve_shared(p, &o, sh, &whole);
        rs = apsolve_solve_shared_skip(p, &o, sh, skip, &some);
        CU_ASSERT_FATAL(rw == APSOLVE_OK || rw == APSOLVE_EINFEASIBLE);
        CU_ASSERT_FATAL(rs == APSOLVE_OK || rs == APSOLVE_EINFEASIBLE);
        /* every count from none searched: the whole search */
        CU_ASSERT_FATAL(apsolve_counts_init(&c0, nmax) == APSOLVE_OK);
        n.wrong += apsolve_counts_whole(p, &o, sh, &c0, &pl) != rw || !same_plan(pl, whole);
        fresh += rw == APSOLVE_OK;
        apsolve_plan_free(&pl);
        apsolve_counts_free(&c0);
        for (size_t k = 0; whole && k < sizeof cs / sizeof *cs; k++)
            counts_case(p, &o, sh, skip, some, whole, cs[k] * (some ? some : whole)->cost, &n);
        apsolve_plan_free(&whole);
        apsolve_plan_free(&some);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    printf("chunk counts: %d whole, %d below the plan to beat, %d narrowed (%d counts dropped "
           "above the bar, %d another plan), %d whole after them\n", fresh, n.wins, n.narrowed,
           n.dropped, n.other, n.whole);
    CU_ASSERT_EQUAL(n.wrong, 0);
    CU_ASSERT(fresh > 100);
    CU_ASSERT(n.wins > 200);
    CU_ASSERT(n.whole > 300);
    CU_ASSERT(n.dropped > 50);
}
