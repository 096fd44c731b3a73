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
#include "dp_int.h"
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

/* Count n's search under o with want {n} alone on a fresh table and run:
 * the reference a held prep must reproduce. */
static ApsolvePlan *fresh_count(const ApsolveProblem *p, const ApsolveOptions *o, int nmax,
                                int n, long *evals)
{
    ApsolveDpShared *sh = apsolve_dp_shared_new();
    ApsolveCounts cs;
    unsigned char want[64] = {0};
    ApsolvePlan *pl;
    want[n] = 1;
    CU_ASSERT_FATAL(sh && apsolve_counts_init(&cs, nmax) == APSOLVE_OK);
    CU_ASSERT_FATAL(apsolve_solve_counts(p, o, sh, want, INFINITY, &cs) == APSOLVE_OK);
    pl = cs.plan[n];
    cs.plan[n] = NULL;
    *evals = cs.evals[n];
    apsolve_counts_free(&cs);
    apsolve_dp_shared_free(sh);
    return pl;
}

/* Whether cs's count n is the reference (plan and threshold DPs). */
static int count_differs(const ApsolveCounts *cs, int n, const ApsolvePlan *ref, long evals)
{
    return !same_plan(cs->plan[n], ref) || cs->evals[n] != evals;
}

/* Whether the options sh holds (the last search's) are not those a fresh
 * build of o at mem_n gives: options, items, bounds and apply costs. */
static int prep_differs(ApsolveDpShared *sh, const ApsolveProblem *p, const ApsolveOptions *o,
                        int mem_n)
{
    DpPrep pr;
    const DpPrep *h = &sh->prep;
    int e;
    memset(&pr, 0, sizeof pr);
    CU_ASSERT_FATAL(apsolve_dp_prep_build(&pr, sh, NULL, p, o, mem_n) == APSOLVE_OK);
    e = pr.n_opts != h->n_opts || pr.n_items != h->n_items ||
        memcmp(pr.opt_off, h->opt_off, ((size_t)p->num_layers + 1) * sizeof *pr.opt_off);
    for (size_t k = 0; !e && k < pr.n_opts; k++)
        e = pr.opts[k].end != h->opts[k].end || pr.opts[k].submesh != h->opts[k].submesh ||
            pr.opts[k].item_off != h->opts[k].item_off || pr.opts[k].item_n != h->opts[k].item_n;
    for (size_t k = 0; !e && k < pr.n_items; k++)
        e = pr.items[k].cost != h->items[k].cost || pr.items[k].mnss != h->items[k].mnss ||
            pr.items[k].config != h->items[k].config || pr.items[k].opt != h->items[k].opt ||
            memcmp(&pr.apply[k], &h->apply[k], sizeof pr.apply[k]);
    apsolve_dp_prep_free(&pr);
    return e;
}

/* A count's options built by one search of an ApsolveCounts run are read
 * again by its next search of that count (dp.c apsolve_dp_solve_apply,
 * dp_int.h ApsolveDpShared.prep_id), and only then: over random problems
 * with memory, a count searched cut then whole in one run (after another
 * count's build, and before another count's whole search), after a clear under other options (other chunks, micro-
 * batches, headroom) on the same table, and after a search of other options
 * on the same table in the middle of a run each give the plan and threshold
 * DPs of a fresh table, and the options the table holds after each are
 * a fresh build's for the last count searched. Each reuse rule broken on purpose (the id kept
 * across a clear, another search's build left marked, the count not
 * checked) makes some of them differ. */
void test_chunk_counts_prep(void)
{
    uint64_t rng = 0x9E9Bull;
    int wrong = 0, checked = 0, differ_opts = 0;
    for (int t = 0; t < 300; t++) {
        ApsolveProblem *p = random_problem(&rng, 2 * t + 1); /* odd t: with memory */
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o1, o2;
        ApsolveCounts cs;
        ApsolvePlan *r1 = NULL, *r2 = NULL, *r1b = NULL, *x = NULL;
        long e1 = 0, e2 = 0, e1b = 0;
        int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices, n = 0, n2 = 0;
        unsigned char want[64] = {0}, skip[64];
        size_t cells = apsolve_problem_cells(p);
        CU_ASSERT_FATAL(sh != NULL && nmax < 64);
        for (size_t k = 0; k < cells; k++)
            p->apply_cost[k] = (double)(oracle_rand(&rng) % 9) / 8;
        memset(&o1, 0, sizeof o1);
        o1.objective = t % 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        o1.schedule = t % 3 ? APSOLVE_SCHEDULE_INTERLEAVED : APSOLVE_SCHEDULE_INTERLEAVED_ZB;
        o1.virtual_stages = 2;
        o1.whole_chunks = 1;
        o1.micro_batches = 8;
        o2 = o1;
        o2.virtual_stages = 1 + t % 2; /* 1: every range, 2: as o1 */
        o2.micro_batches = 2;
        o2.headroom_percent = 20;
        o2.search_headroom = 1;
        if (o2.virtual_stages == 1)
            o2.schedule = APSOLVE_SCHEDULE_ZB_H1;
        /* n: the largest count both allow, n2 a smaller one o1 allows */
        for (int q = 1; q <= nmax; q++) {
            int v1 = apsolve_schedule_valid((ApsolveSchedule)o1.schedule, 2, 8, q, NULL, 0),
                v2 = apsolve_schedule_valid((ApsolveSchedule)o2.schedule, o2.virtual_stages, 2,
                                            q, NULL, 0);
            if (v1 && v2 && q * 2 <= p->num_layers)
                n = q;
        }
        for (int q = 1; q < n; q++)
            if (apsolve_schedule_valid((ApsolveSchedule)o1.schedule, 2, 8, q, NULL, 0))
                n2 = q;
        if (n < 2 || n2 < 1) {
            apsolve_dp_shared_free(sh);
            apsolve_problem_free(&p);
            continue;
        }
        r1 = fresh_count(p, &o1, nmax, n, &e1);
        r1b = fresh_count(p, &o1, nmax, n2, &e1b);
        r2 = fresh_count(p, &o2, nmax, n, &e2);
        differ_opts += !same_plan(r1, r2) || e1 != e2;
        CU_ASSERT_FATAL(apsolve_counts_init(&cs, nmax) == APSOLVE_OK);
        /* one run: n2 and n cut at 0 (no plan below it: both searched, n
         * last), then both whole: n2 must not read n's options, n reads
         * its own */
        want[n] = want[n2] = 1;
        CU_ASSERT_FATAL(apsolve_solve_counts(p, &o1, sh, want, 0, &cs) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_solve_counts(p, &o1, sh, want, INFINITY, &cs) == APSOLVE_OK);
        wrong += count_differs(&cs, n, r1, e1) + count_differs(&cs, n2, r1b, e1b);
        /* again with n2 alone cut first: n, searched whole after n2, must
         * not read n2's options */
        apsolve_counts_clear(&cs);
        want[n] = 0;
        CU_ASSERT_FATAL(apsolve_solve_counts(p, &o1, sh, want, 0, &cs) == APSOLVE_OK);
        want[n] = 1;
        CU_ASSERT_FATAL(apsolve_solve_counts(p, &o1, sh, want, INFINITY, &cs) == APSOLVE_OK);
        wrong += count_differs(&cs, n, r1, e1) + count_differs(&cs, n2, r1b, e1b) +
                 prep_differs(sh, p, &o1, n);
        /* a clear, then o2 on the same table: n's options made anew */
        apsolve_counts_clear(&cs);
        want[n2] = 0;
        CU_ASSERT_FATAL(apsolve_solve_counts(p, &o1, sh, want, 0, &cs) == APSOLVE_OK);
        apsolve_counts_clear(&cs);
        CU_ASSERT_FATAL(apsolve_solve_counts(p, &o2, sh, want, INFINITY, &cs) == APSOLVE_OK);
        wrong += count_differs(&cs, n, r2, e2) + prep_differs(sh, p, &o2, n);
        /* o2's run cut at n, o1's search of n alone on the same table,
         * then the run's whole search of n: its own options again */
        apsolve_counts_clear(&cs);
        CU_ASSERT_FATAL(apsolve_solve_counts(p, &o2, sh, want, 0, &cs) == APSOLVE_OK);
        for (int q = 0; q < 64; q++)
            skip[q] = q != n;
        CU_ASSERT_FATAL(apsolve_solve_shared_skip(p, &o1, sh, skip, &x) != APSOLVE_EINVAL);
        CU_ASSERT_FATAL(apsolve_solve_counts(p, &o2, sh, want, INFINITY, &cs) == APSOLVE_OK);
        wrong += count_differs(&cs, n, r2, e2) + prep_differs(sh, p, &o2, n);
        checked++;
        apsolve_counts_free(&cs);
        apsolve_plan_free(&r1);
        apsolve_plan_free(&r1b);
        apsolve_plan_free(&r2);
        apsolve_plan_free(&x);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    printf("held preps: %d problems, %d with other plans under the other options\n", checked,
           differ_opts);
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(checked > 80);
    CU_ASSERT(differ_opts > 40);
}
