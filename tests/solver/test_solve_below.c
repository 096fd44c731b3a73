/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The search that leaves out what cannot beat a plan to beat
 * (solver/dp.c, apsolve_solve_below; solver/session_autostep.c,
 * apsolve_solve_to_beat; docs/performance.md, "the cp and
 * partial-recomputation steps' searches cut at the plan to beat"), against
 * the whole search on random problems with memory figures and apply costs,
 * under both objectives, 1F1B and interleaved exact counts, with and
 * without the headroom, at bars below, at and above the whole search's
 * objective:
 *
 * - the same feasibility; with no bar (+inf) the same plan and counts;
 * - a plan below the bar whenever the whole search's is, the whole
 *   search's objective whenever that is at or below the bar (stopping at
 *   the first plan below the bar: at the bar), and never below the whole
 *   search's objective (which is the least);
 * - apsolve_solve_to_beat: the same error, headroom kept and verdict
 *   against the bar (apsolve_auto_better) as apsolve_solve_keep_headroom,
 *   and the same plan and counts whenever it says its plan is exact;
 * - the plain search's 1F1B bar (session_search.c, apsolve_plain_bar):
 *   above it, the 1F1B plan's T is above the chunked plan's estimate;
 * - the 1F1B searches of one kept table with the same options, an
 *   interleaved search between them (plain_search's order), build their
 *   prep once (ApsolveDpShared.plain) and give their own tables' plans;
 * - a table lent to another (apsolve_dp_shared_borrow): the borrower's
 *   searches give their own tables' plans, the lender's stay its own.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "dp_int.h"
#include "oracle.h"
#include "session_int.h"
#include "solver_int.h"

static ApsolveProblem *random_problem(uint64_t *rng, int t)
{
    static const int shapes[][2] = {{1, 4}, {2, 4}, {1, 8}, {2, 2}};
    OracleGen g;
    ApsolveProblem *p = NULL;
    size_t n;
    memset(&g, 0, sizeof g);
    g.layers = 3 + (int)(oracle_rand(rng) % 8);
    g.hosts = shapes[t % 4][0];
    g.gpus = shapes[t % 4][1];
    g.inf_prob = 0.05 + 0.25 * oracle_uniform(rng);
    g.mem_prob = 0.5;
    g.max_limit = 5;
    g.integer_costs = t % 3 == 1; /* many exact ties */
    g.noise = 0.3;
    CU_ASSERT_FATAL(oracle_make_problem(&g, rng, &p) == APSOLVE_OK);
    n = apsolve_problem_cells(p);
    CU_ASSERT_FATAL(apsolve_memory_table_add(p) == APSOLVE_OK);
    for (size_t k = 0; k < n; k++) {
        ApsolveMemory *m = apsolve_memory_own(p, k);
        m->avail = 1000;
        m->peak = (int64_t)(oracle_rand(rng) % 800);
        m->initial = (int64_t)(oracle_rand(rng) % 200);
        m->intermediate = (int64_t)(oracle_rand(rng) % 150);
        p->max_n_succ_stages[k] = apsolve_memory_mnss(m);
        p->apply_cost[k] = oracle_rand(rng) % 6 == 0 ? -1 : (double)(oracle_rand(rng) % 9) / 8;
    }
    return p;
}

static void random_options(uint64_t *rng, int t, ApsolveOptions *o)
{
    memset(o, 0, sizeof *o);
    o->micro_batches = 1 + (int)(oracle_rand(rng) % 8);
    o->objective = t % 3 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
    if (t % 4 == 3) { /* exact stage counts per n */
        o->schedule = APSOLVE_SCHEDULE_INTERLEAVED;
        o->virtual_stages = 2;
        o->whole_chunks = t % 8 == 7; /* stages of whole chunks (try_chunks') */
        o->micro_batches = 2 * (1 + (int)(oracle_rand(rng) % 4));
    }
    o->headroom_percent = t % 5 < 2 ? 15 : 0;
}

static int same_plan(const ApsolvePlan *x, const ApsolvePlan *y)
{
    int same = x->n_stages == y->n_stages && x->cost == y->cost &&
               x->total_cost == y->total_cost && x->feasible == y->feasible &&
               x->dp_evaluations == y->dp_evaluations && x->candidates == y->candidates;
    for (size_t k = 0; same && k < x->n_stages; k++)
        same = x->stages[k].end_layer == y->stages[k].end_layer &&
               x->stages[k].submesh == y->stages[k].submesh &&
               x->stages[k].config == y->stages[k].config;
    return same;
}

/* same_plan with NaN costs equal (a zero-bubble search without weight
 * gradient times prices every plan NaN) */
static int same_plan_nan(const ApsolvePlan *x, const ApsolvePlan *y)
{
    ApsolvePlan a = *x, b = *y;
    if (isnan(a.cost) && isnan(b.cost))
        a.cost = b.cost = 0;
    if (isnan(a.total_cost) && isnan(b.total_cost))
        a.total_cost = b.total_cost = 0;
    return same_plan(&a, &b);
}

/* The bars tried against a whole search's objective w. */
static const double scale[] = {0.5, 0.9, 0.999, 1.0, 1.001, 1.1, 2.0};
#define NSCALE (sizeof scale / sizeof *scale)

static void test_below(void)
{
    uint64_t rng = 0xB0770Bull;
    int wrong = 0, feasible = 0, cut = 0;
    for (int t = 0; t < 160; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveOptions o;
        ApsolvePlan *whole = NULL, *pl = NULL;
        int rw, rc;
        random_options(&rng, t, &o);
        o.search_headroom = o.headroom_percent > 0;
        rw = apsolve_solve(p, &o, &whole);
        /* no bar: the whole search */
        rc = apsolve_solve_below(p, &o, INFINITY, 0, &pl);
        CU_ASSERT(rc == rw);
        wrong += rc == APSOLVE_OK && rw == APSOLVE_OK && !same_plan(pl, whole);
        apsolve_plan_free(&pl);
        for (size_t b = 0; b <= NSCALE; b++)
            for (int first = 0; first <= 1; first++) {
                double bar = b == NSCALE ? -INFINITY
                             : rw == APSOLVE_OK ? scale[b] * whole->total_cost : 1.0;
                rc = apsolve_solve_below(p, &o, bar, first, &pl);
                CU_ASSERT(rc == rw);
                if (rc == APSOLVE_OK && rw == APSOLVE_OK) {
                    /* below the bar when the whole search is */
                    if (whole->total_cost < bar && !(pl->total_cost < bar))
                        wrong++;
                    /* the whole search's objective when it is at or below
                     * the bar (with first: at the bar) */
                    if ((first ? whole->total_cost == bar : whole->total_cost <= bar) &&
                        pl->total_cost != whole->total_cost)
                        wrong++;
                    /* the whole search's is the least */
                    if (pl->total_cost < whole->total_cost)
                        wrong++;
                    if (pl->feasible != whole->feasible)
                        wrong++;
                    cut += pl->dp_evaluations < whole->dp_evaluations;
                }
                apsolve_plan_free(&pl);
            }
        feasible += rw == APSOLVE_OK;
        apsolve_plan_free(&whole);
        apsolve_problem_free(&p);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(feasible > 60);
    CU_ASSERT(cut > 100); /* the cut leaves something out */
}

/* apsolve_solve_below_kept: the cut searches of one problem in one kept
 * table (the plain search's, session_search.c) give the plan and counts
 * of apsolve_solve_below's own table, whatever search built it (headroom
 * kept or not, bar -inf first), and the whole search in that table
 * (apsolve_solve_shared, where it holds every range) apsolve_solve's. */
static void test_kept(void)
{
    uint64_t rng = 0x5EA7EDull;
    int wrong = 0, shared = 0;
    for (int t = 0; t < 120; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o;
        ApsolvePlan *whole = NULL, *pl = NULL, *own = NULL;
        int rw;
        CU_ASSERT_FATAL(sh != NULL);
        random_options(&rng, t, &o);
        rw = apsolve_solve(p, &o, &whole);
        for (size_t b = 0; b <= 2 * NSCALE + 1; b++) {
            double bar = b <= 1 ? -INFINITY
                         : rw == APSOLVE_OK ? scale[b % NSCALE] * whole->total_cost : 1.0;
            int first = b > 1 && b % 2, rc, ro;
            o.search_headroom = b == 0 && o.headroom_percent > 0;
            rc = apsolve_solve_below_kept(p, &o, sh, bar, first, &pl);
            ro = apsolve_solve_below(p, &o, bar, first, &own);
            CU_ASSERT(rc == ro);
            wrong += rc == APSOLVE_OK && ro == APSOLVE_OK && !same_plan(pl, own);
            apsolve_plan_free(&pl);
            apsolve_plan_free(&own);
        }
        if (!apsolve_dp_shared_whole_only(sh)) {
            int rc = apsolve_solve_shared(p, &o, sh, &pl);
            shared++;
            CU_ASSERT(rc == rw);
            wrong += rc == APSOLVE_OK && rw == APSOLVE_OK && !same_plan(pl, whole);
            apsolve_plan_free(&pl);
        }
        apsolve_plan_free(&whole);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(shared > 30);
}

/* plain_search's order on one kept table (see the head of the file): the
 * 1F1B first DPs, an interleaved search by counts (the counts' prep
 * slot), then the 1F1B cut and whole searches under the same options. */
static void test_plain_prep_kept(void)
{
    uint64_t rng = 0x9EE9ull;
    int wrong = 0, runs = 0, between = 0;
    for (int t = 0; t < 80; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o, io;
        ApsolvePlan *whole = NULL, *pl = NULL, *own = NULL;
        int rw, rc, ro;
        CU_ASSERT_FATAL(sh != NULL);
        random_options(&rng, t % 4 == 3 ? t - 1 : t, &o); /* 1F1B */
        o.search_headroom = o.headroom_percent > 0;
        rw = apsolve_solve(p, &o, &whole);
        rc = apsolve_solve_below_kept(p, &o, sh, -INFINITY, 0, &pl);
        ro = apsolve_solve_below(p, &o, -INFINITY, 0, &own);
        CU_ASSERT(rc == ro);
        wrong += rc == APSOLVE_OK && ro == APSOLVE_OK && !same_plan(pl, own);
        apsolve_plan_free(&pl);
        apsolve_plan_free(&own);
        io = o;
        io.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
        io.virtual_stages = 2;
        io.micro_batches = 2 * o.micro_batches;
        rc = apsolve_solve_shared(p, &io, sh, &pl);
        between += sh->prep_id != 0 || rc == APSOLVE_OK;
        apsolve_plan_free(&pl);
        if (rw == APSOLVE_OK) {
            double bar = whole->total_cost * 1.1;
            rc = apsolve_solve_below_kept(p, &o, sh, bar, 1, &pl);
            ro = apsolve_solve_below(p, &o, bar, 1, &own);
            CU_ASSERT(rc == ro);
            wrong += rc == APSOLVE_OK && ro == APSOLVE_OK && !same_plan(pl, own);
            apsolve_plan_free(&pl);
            apsolve_plan_free(&own);
        }
        rc = apsolve_solve_shared(p, &o, sh, &pl);
        CU_ASSERT(rc == rw);
        wrong += rc == APSOLVE_OK && rw == APSOLVE_OK && !same_plan(pl, whole);
        /* one build for the three 1F1B searches (none where the table
         * has no item to prep from: then no search gets that far) */
        wrong += sh->plain_builds > 1;
        runs += sh->plain_builds == 1;
        apsolve_plan_free(&pl);
        apsolve_plan_free(&whole);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(runs > 40);
    CU_ASSERT(between > 20);
}

static void test_to_beat(void)
{
    uint64_t rng = 0x70BEA7ull;
    int wrong = 0, inexact = 0, kept = 0;
    for (int t = 0; t < 160; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveOptions o;
        ApsolvePlan *whole = NULL, *bar = NULL;
        int rw, hw;
        random_options(&rng, t, &o);
        rw = apsolve_solve_keep_headroom(p, &o, &whole);
        hw = o.search_headroom;
        /* a bar: the whole plan at another objective, keeping the headroom
         * or not */
        for (size_t b = 0; rw == APSOLVE_OK && b < NSCALE; b++)
            for (int bh = 0; bh <= 1; bh++)
                for (int decide = 0; decide <= 1; decide++) {
                    ApsolveOptions q = o;
                    ApsolvePlan *pl = NULL, bp = *whole;
                    int rc, exact = 1, h;
                    bp.total_cost = scale[b] * whole->total_cost;
                    bp.cost = bp.total_cost - whole->apply_cost;
                    bar = &bp;
                    rc = apsolve_solve_to_beat(p, &q, bar, bh, decide, &pl, &exact);
                    h = q.search_headroom;
                    CU_ASSERT(rc == rw);
                    if (rc != APSOLVE_OK)
                        continue;
                    if (h != hw || pl->feasible != whole->feasible ||
                        apsolve_auto_better(pl, h, bar, bh) !=
                            apsolve_auto_better(whole, hw, bar, bh))
                        wrong++;
                    if (exact && !same_plan(pl, whole))
                        wrong++;
                    inexact += !exact;
                    kept += apsolve_auto_better(whole, hw, bar, bh);
                    apsolve_plan_free(&pl);
                }
        apsolve_plan_free(&whole);
        apsolve_problem_free(&p);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(inexact > 100); /* cut searches answered */
    CU_ASSERT(kept > 100);    /* and plans that beat the bar were tried */
}

/* The plain search's 1F1B bar against the chunked plan's full estimate C
 * (session_search.c, apsolve_plain_bar): a whole 1F1B search whose
 * objective is above the bar has T above C, and so has one whose search
 * cut at the bar answers above it; with the bar at C alone (no apply
 * term) the first fails on these problems. Straddle-free, the bar holds
 * every plan whose least full estimate is at most C. */
static void test_plain_bar(void)
{
    static const double cs[] = {0.3, 0.6, 0.8, 0.95, 1.0, 1.05, 1.3, 2.0};
    uint64_t rng = 0x9A1B0Aull;
    int wrong = 0, cut = 0, bare = 0, near = 0, keeps;
    for (int t = 0; t < 200; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveOptions o;
        ApsolvePlan *whole = NULL;
        random_options(&rng, t, &o);
        o.schedule = APSOLVE_SCHEDULE_1F1B;
        o.virtual_stages = 0;
        o.whole_chunks = 0;
        o.search_headroom = o.headroom_percent > 0;
        if (apsolve_solve(p, &o, &whole) == APSOLVE_OK)
            for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
                double C = cs[k] * whole->cost, bar = apsolve_plain_bar(p, &o, C, 0);
                ApsolvePlan *pl = NULL;
                if (whole->total_cost > bar && !(whole->cost > C))
                    wrong++;
                bare += whole->total_cost > C && !(whole->cost > C);
                CU_ASSERT_FATAL(apsolve_solve_below(p, &o, bar, 1, &pl) == APSOLVE_OK);
                if (pl->total_cost > bar) {
                    cut++;
                    if (!(whole->cost > C))
                        wrong++;
                }
                apsolve_plan_free(&pl);
                /* straddle-free: a 1F1B plan whose least full estimate
                 * (oracle_full_floor) is at or below C (plain_search
                 * keeps it on a tie) is at or below that bar */
                bar = apsolve_plain_bar(p, &o, C, 1);
                keeps = whole->feasible && !(oracle_full_floor(whole) > C);
                near += keeps && whole->total_cost > 0.95 * C;
                if (keeps && !(whole->total_cost <= bar))
                    wrong++;
                CU_ASSERT_FATAL(apsolve_solve_below(p, &o, bar, 1, &pl) == APSOLVE_OK);
                wrong += keeps && pl->total_cost > bar;
                apsolve_plan_free(&pl);
            }
        apsolve_plan_free(&whole);
        apsolve_problem_free(&p);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(cut > 100); /* the bar decides */
    CU_ASSERT(bare > 50); /* a bar of C alone would be wrong */
    CU_ASSERT(near > 10); /* straddle-free, a bar of 0.95 C would be */
}

/* A table lent (apsolve_dp_shared_borrow, the chunked families on two
 * threads): a search on the borrower gives its own table's plan and
 * counts, the lender's arrays are the borrower's and stay the lender's
 * (its searches after the borrower is freed give the same plans); a
 * borrower searched under the other objective class builds its own; no
 * loan from a table not built or of whole chunks only, nor into one
 * built. */
static void test_lent(void)
{
    uint64_t rng = 0x1E47ull;
    int wrong = 0, lent = 0, refused = 0;
    for (int t = 0; t < 80; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new(), *b = apsolve_dp_shared_new(),
                        *c = apsolve_dp_shared_new();
        ApsolveOptions o, zo, ao;
        ApsolvePlan *pl = NULL, *own = NULL;
        int rc, ro;
        CU_ASSERT_FATAL(sh && b && c);
        random_options(&rng, t | 3, &o); /* interleaved */
        o.whole_chunks = 0;
        wrong += apsolve_dp_shared_borrow(b, sh); /* not built: no loan */
        rc = apsolve_solve_shared(p, &o, sh, &pl);
        apsolve_plan_free(&pl);
        if (!sh->built) { /* no table: nothing to lend */
            refused++;
            goto next;
        }
        CU_ASSERT_FATAL(apsolve_dp_shared_borrow(b, sh) == 1);
        lent++;
        wrong += b->items != sh->items || b->opts != sh->opts || b->opt_off != sh->opt_off ||
                 b->n_items != sh->n_items || apsolve_dp_shared_borrow(b, sh) != 0;
        /* the zero-bubble family's search on the loan, against its own */
        zo = o;
        zo.schedule = APSOLVE_SCHEDULE_INTERLEAVED_ZB;
        rc = apsolve_solve_shared(p, &zo, b, &pl);
        ro = apsolve_solve(p, &zo, &own);
        wrong += rc != ro || (rc == APSOLVE_OK && !same_plan_nan(pl, own));
        apsolve_plan_free(&pl);
        apsolve_plan_free(&own);
        /* the other objective class on the loan: a table of its own */
        ao = zo;
        ao.objective = o.objective == APSOLVE_OBJECTIVE_FULL ? APSOLVE_OBJECTIVE_ALPA
                                                             : APSOLVE_OBJECTIVE_FULL;
        rc = apsolve_solve_shared(p, &ao, b, &pl);
        ro = apsolve_solve(p, &ao, &own);
        wrong += rc != ro || (rc == APSOLVE_OK && !same_plan_nan(pl, own)) ||
                 (b->built && (b->borrowed || b->items == sh->items));
        apsolve_plan_free(&pl);
        apsolve_plan_free(&own);
        apsolve_dp_shared_free(b);
        b = NULL;
        /* the lender's table after the borrower is gone */
        rc = apsolve_solve_shared(p, &zo, sh, &pl);
        ro = apsolve_solve(p, &zo, &own);
        wrong += rc != ro || (rc == APSOLVE_OK && !same_plan_nan(pl, own));
        apsolve_plan_free(&pl);
        apsolve_plan_free(&own);
        /* a table of whole chunks only is never lent */
        o.whole_chunks = 1;
        rc = apsolve_solve_below_kept(p, &o, c, 0.5, 1, &pl);
        apsolve_plan_free(&pl);
        if (c->built && c->whole_only) {
            ApsolveDpShared *d = apsolve_dp_shared_new();
            CU_ASSERT_FATAL(d != NULL);
            wrong += apsolve_dp_shared_borrow(d, c) != 0;
            refused++;
            apsolve_dp_shared_free(d);
        }
    next:
        apsolve_dp_shared_free(b);
        apsolve_dp_shared_free(c);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(lent > 40);
    CU_ASSERT(refused > 5);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the search cut at a bar: the whole search's feasibility and verdict", test_below},
        {"the cut searches in one kept table: their own tables' plans", test_kept},
        {"to beat a plan: keep_headroom's error, headroom and verdict", test_to_beat},
        {"the plain search's 1F1B bar: above it, T is above C", test_plain_bar},
        {"the 1F1B searches of one kept table: one prep, their own plans",
         test_plain_prep_kept},
        {"a table lent: its own table's plans, the lender's left as it was", test_lent},
    };
    return CUNIT_RUN("solver_solve_below", tests);
}
