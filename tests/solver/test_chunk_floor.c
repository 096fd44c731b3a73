/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shortcuts of the chunked schedules' searches (docs/performance.md,
 * "apsolve at scale: options shared across stage and chunk counts"):
 *
 * - the floor of a chunk count v (solver/chunk_floor.c) never exceeds the
 *   largest stage cost of a plan the search under v returns, and a search
 *   over v that skips every v whose B x floor reaches the best so far (as
 *   try_chunks does) keeps the plan the search without skipping keeps, on
 *   random problems with memory limits;
 * - ZB-V's fill and path floors, its device paths and interleaved ZB's sum
 *   floor (chunk_floor.c) at most every stage count's own plan (under the
 *   best so far: each[n] bounds the plans below it), and the same plans
 *   kept when the counts they leave out are left out;
 * - the memory bounds of a DpFamily (solver/dp_prep.c: one bisection per
 *   entry over the in-flight counts, replayed per stage count) are
 *   apsolve_entry_mnss's, option for option, on random memory figures
 *   (negative intermediates, no capacity, headroom);
 * - the items a prep leaves out as dominated change no apply limit's
 *   options (dp_prepare's filter over the table's every usable item);
 * - a table shared across chunk counts gives the plans and counts of a
 *   search with its own table;
 * - the bound of every item a prep keeps is apsolve_entry_mnss's for its
 *   entry, under headroom in percent and in bytes on entries of mixed
 *   avails (a prep works the headroom budget out once per change of avail,
 *   not per entry: a budget kept past its avail fails this);
 * - the chunked searches' bar (solver/search_bar.c): a plan whose T is
 *   below the plan to beat has its objective at or below it, and the
 *   search cut at it answers at or below it then.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "dp_int.h"
#include "oracle.h"
#include "schedule.h"
#include "session_int.h"
#include "solver_int.h"

static const int k_kinds[] = {APSOLVE_SCHEDULE_INTERLEAVED, APSOLVE_SCHEDULE_ZBV};

static ApsolveProblem *random_problem(uint64_t *rng, int t)
{
    static const int shapes[][2] = {{1, 4}, {2, 4}, {1, 8}, {2, 2}};
    OracleGen g;
    ApsolveProblem *p = NULL;
    memset(&g, 0, sizeof g);
    g.layers = 4 + (int)(oracle_rand(rng) % 9);
    g.hosts = shapes[t % 4][0];
    g.gpus = shapes[t % 4][1];
    g.inf_prob = 0.05 + 0.2 * oracle_uniform(rng);
    g.mem_prob = 0.5;
    g.max_limit = 6;
    g.integer_costs = t % 3 == 1;
    g.noise = 0.3;
    g.device_exponent = t % 2 ? 0.7 : 1.0;
    CU_ASSERT_FATAL(oracle_make_problem(&g, rng, &p) == APSOLVE_OK);
    CU_ASSERT_FATAL(oracle_add_passes(p, rng) == APSOLVE_OK);
    if (t % 2)
        CU_ASSERT_FATAL(oracle_add_memory(p, rng) == APSOLVE_OK);
    return p;
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

/* try_chunks's loop on the DP's objective alone: from the 1F1B plan, every
 * v of kind (skip: not those whose B x floor reaches the best so far),
 * the first plan strictly cheaper kept; the plan kept (the caller frees). */
static ApsolvePlan *chunk_search(const ApsolveProblem *p, const ApsolveOptions *base, int kind,
                                 const ApsolveStageFloor *fl, int skip, int *floor_low)
{
    ApsolvePlan *best = NULL;
    ApsolveOptions o = *base;
    int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices;
    if (apsolve_solve(p, &o, &best) != APSOLVE_OK)
        return NULL;
    for (int v = 2; v <= (kind == APSOLVE_SCHEDULE_ZBV ? 2 : p->num_layers); v++) {
        ApsolvePlan *il = NULL;
        double floor = apsolve_chunk_floor(fl, kind, v, base->micro_batches, nmax);
        if (skip && apsolve_chunk_skip(floor, base->micro_batches, best->total_cost))
            continue;
        o = *base;
        o.schedule = kind;
        o.virtual_stages = v;
        o.whole_chunks = 1;
        if (apsolve_solve(p, &o, &il) != APSOLVE_OK)
            continue;
        /* the floor's claim: no plan of v has a cheaper largest stage */
        *floor_low += !((kind == APSOLVE_SCHEDULE_ZBV || floor <= il->max_stage_cost * (1 + 1e-12)) &&
                        !apsolve_chunk_skip(floor, base->micro_batches, il->total_cost));
        if (il->total_cost < best->total_cost) {
            apsolve_plan_free(&best);
            best = il;
        } else {
            apsolve_plan_free(&il);
        }
    }
    return best;
}

static void test_floor_prunes_exactly(void)
{
    uint64_t rng = 0xC0FFEEull;
    int differ = 0, floor_low = 0, skipped = 0, searched = 0;
    for (int t = 0; t < 120; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveStageFloor fl;
        ApsolveOptions o;
        int kind = k_kinds[t % 2];
        memset(&o, 0, sizeof o);
        o.micro_batches = (int[]){2, 4, 8, 12}[oracle_rand(&rng) % 4];
        o.objective = t % 3 == 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        CU_ASSERT_FATAL(apsolve_stage_floor_init(&fl, p) == APSOLVE_OK);
        {
            ApsolvePlan *all = chunk_search(p, &o, kind, &fl, 0, &floor_low);
            ApsolvePlan *some = chunk_search(p, &o, kind, &fl, 1, &floor_low);
            differ += !same_plan(all, some);
            searched += all != NULL;
            for (int v = 2; all && v <= p->num_layers; v++)
                skipped += apsolve_chunk_skip(
                    apsolve_chunk_floor(&fl, kind, v, o.micro_batches, p->num_layers),
                    o.micro_batches, all->total_cost);
            apsolve_plan_free(&all);
            apsolve_plan_free(&some);
        }
        apsolve_stage_floor_free(&fl);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(differ == 0);
    CU_ASSERT(floor_low == 0);
    CU_ASSERT(searched > 60);
    CU_ASSERT(skipped > 20); /* the floor does skip */
}

/* ZB-V's fill floor (chunk_floor.c): B x each[n] at most the plan of each
 * stage count n alone, or cap (best: the floor under best / B,
 * apsolve_stage_floor_under) when less (every other count left out, skip as scratch); *low
 * counts the floors above it, *counts the counts checked, *ratio (when not
 * NULL) the largest B x each[n] / that plan's total where the fill floor
 * is above the largest-stage floor. */
static void check_counts(const ApsolveProblem *p, const ApsolveOptions *o, ApsolveDpShared *sh,
                         const double *each, unsigned char *skip, int nmax, double cap,
                         int *low, int *counts, double *ratio)
{
    for (int n = 1; n <= nmax; n++) {
        ApsolvePlan *one = NULL;
        for (int q = 0; q <= nmax; q++)
            skip[q] = q != n;
        if (apsolve_solve_shared_skip(p, o, sh, skip, &one) == APSOLVE_OK && one->feasible &&
            (int)one->n_stages == n) {
            double x = o->micro_batches * each[n];
            *low += !((x < cap ? x : cap) <= one->total_cost * (1 + 1e-12));
            (*counts)++;
            if (ratio && each[n] > one->max_stage_cost && x / one->total_cost > *ratio)
                *ratio = x / one->total_cost;
        }
        apsolve_plan_free(&one);
    }
}

/* chunk_search with each v's stage counts whose own floor reaches the best
 * so far left out (apsolve_solve_shared_skip), and the v searched again
 * whole when that plan beats the best (session_search.c, chunk_solve);
 * *left counts the stage counts left out, *low the floors above a plan. */
static ApsolvePlan *chunk_search_each(const ApsolveProblem *p, const ApsolveOptions *base,
                                      int kind, ApsolveStageFloor *fl, int *left, int *low,
                                      int *again, int *counts)
{
    ApsolvePlan *best = NULL;
    ApsolveOptions o = *base;
    int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices;
    double *each = malloc(((size_t)nmax + 1) * sizeof *each);
    unsigned char *skip = malloc((size_t)nmax + 1);
    ApsolveDpShared *sh = apsolve_dp_shared_new();
    CU_ASSERT_FATAL(each && skip && sh);
    if (apsolve_solve(p, &o, &best) != APSOLVE_OK)
        best = NULL;
    for (int v = 2; best && v <= (kind == APSOLVE_SCHEDULE_ZBV ? 2 : p->num_layers); v++) {
        ApsolvePlan *il = NULL, *whole = NULL;
        /* floors under the best (chunk_floor.c): each[n] bounds the plans below it */
        int any = 0, rc,
            under = kind == APSOLVE_SCHEDULE_ZBV || kind == APSOLVE_SCHEDULE_INTERLEAVED_ZB;
        o = *base;
        o.schedule = kind;
        o.virtual_stages = v;
        o.whole_chunks = 1;
        /* as try_chunks: ZB-V's and interleaved ZB's floors under the best so far */
        if (kind == APSOLVE_SCHEDULE_ZBV || kind == APSOLVE_SCHEDULE_INTERLEAVED_ZB)
            apsolve_stage_floor_under(fl, best->total_cost / base->micro_batches * (1 + 1e-9));
        apsolve_chunk_floor_each(fl, kind, v, base->micro_batches, nmax, each);
        for (int n = 0; n <= nmax; n++) {
            any |= skip[n] = apsolve_chunk_skip(each[n], base->micro_batches, best->total_cost);
            *left += skip[n] && isfinite(each[n]);
        }
        /* the whole search's plan, to check the floor of its stage count
         * (ZB-V's: at most its total, or the best, when under the best) */
        if (apsolve_solve_shared(p, &o, sh, &whole) == APSOLVE_OK) {
            double x = base->micro_batches * each[whole->n_stages];
            if (under && x > best->total_cost)
                x = best->total_cost;
            *low += !((under ||
                       each[whole->n_stages] <= whole->max_stage_cost * (1 + 1e-12)) &&
                      x <= whole->total_cost * (1 + 1e-12));
        }
        if (under)
            check_counts(p, &o, sh, each, skip, nmax, best->total_cost, low, counts, NULL);
        for (int n = 0; n <= nmax; n++)
            skip[n] = apsolve_chunk_skip(each[n], base->micro_batches, best->total_cost);
        rc = any ? apsolve_solve_shared_skip(p, &o, sh, skip, &il)
                 : apsolve_solve_shared(p, &o, sh, &il);
        if (rc == APSOLVE_OK && any && il->total_cost < best->total_cost) {
            apsolve_plan_free(&il);
            rc = apsolve_solve_shared(p, &o, sh, &il);
            (*again)++;
        }
        if (rc == APSOLVE_OK && il->total_cost < best->total_cost) {
            apsolve_plan_free(&best);
            best = il;
        } else {
            apsolve_plan_free(&il);
        }
        apsolve_plan_free(&whole);
    }
    apsolve_dp_shared_free(sh);
    free(each);
    free(skip);
    return best;
}

static void test_floor_each_prunes_exactly(void)
{
    uint64_t rng = 0xBEEF5ull;
    int differ = 0, low = 0, left = 0, searched = 0, again = 0, counts = 0;
    for (int t = 0; t < 120; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveStageFloor fl;
        ApsolveOptions o;
        int kind = t % 4 == 3 ? APSOLVE_SCHEDULE_INTERLEAVED_ZB : k_kinds[t % 2], unused = 0;
        memset(&o, 0, sizeof o);
        o.micro_batches = (int[]){2, 4, 8, 12}[oracle_rand(&rng) % 4];
        o.objective = t % 3 == 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        CU_ASSERT_FATAL(apsolve_stage_floor_init(&fl, p) == APSOLVE_OK);
        {
            ApsolvePlan *all = chunk_search(p, &o, kind, &fl, 0, &unused);
            ApsolvePlan *some = chunk_search_each(p, &o, kind, &fl, &left, &low, &again,
                                                  &counts);
            differ += !same_plan(all, some);
            searched += all != NULL;
            apsolve_plan_free(&all);
            apsolve_plan_free(&some);
        }
        apsolve_stage_floor_free(&fl);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(differ == 0);
    CU_ASSERT(low == 0);
    CU_ASSERT(searched > 60);
    CU_ASSERT(left > 20);  /* stage counts are left out */
    CU_ASSERT(again > 5);  /* and v that win with some left out are searched again */
    CU_ASSERT(counts > 100); /* ZB-V's fill floor checked per stage count */
    fprintf(stderr,
            "floor each: %d differ, %d low, %d left out, %d searched again, %d searched, "
            "%d ZB-V and interleaved ZB counts checked\n",
            differ, low, left, again, searched, counts);
}

/* One random problem set up for a per-count floor test: its floors, the
 * options of schedule at v chunks and B micro-batches (the objective by t,
 * whole chunks), a DP share and the per-count arrays. */
typedef struct {
    ApsolveProblem *p;
    ApsolveStageFloor fl;
    ApsolveOptions o;
    ApsolveDpShared *sh;
    int nmax;
    double *each;
    unsigned char *skip;
} CountCase;

static void count_case_open(CountCase *c, uint64_t *rng, int t, int schedule, int v,
                            int B)
{
    c->p = random_problem(rng, t);
    c->sh = apsolve_dp_shared_new();
    c->nmax = c->p->num_layers < c->p->num_devices ? c->p->num_layers : c->p->num_devices;
    c->each = malloc(((size_t)c->nmax + 1) * sizeof *c->each);
    c->skip = malloc((size_t)c->nmax + 1);
    CU_ASSERT_FATAL(c->each && c->skip && c->sh);
    memset(&c->o, 0, sizeof c->o);
    c->o.micro_batches = B;
    c->o.objective = t % 3 == 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
    c->o.schedule = schedule;
    c->o.virtual_stages = v;
    c->o.whole_chunks = 1;
    CU_ASSERT_FATAL(apsolve_stage_floor_init(&c->fl, c->p) == APSOLVE_OK);
}

static void count_case_close(CountCase *c)
{
    apsolve_stage_floor_free(&c->fl);
    apsolve_dp_shared_free(c->sh);
    free(c->each);
    free(c->skip);
    apsolve_problem_free(&c->p);
}

/* ZB-V's fill floor alone, where it binds: few micro-batches (B = 1, 2),
 * every stage count's own plan at or above it, and within 0.7 of some (a
 * floor made 1.4 x too high fails here: 0.73 x 1.4 > 1). */
static void test_zbv_fill_floor(void)
{
    uint64_t rng = 0xF111ull;
    int low = 0, counts = 0;
    double ratio = 0;
    for (int t = 0; t < 80; t++) {
        CountCase c;
        count_case_open(&c, &rng, t, APSOLVE_SCHEDULE_ZBV, 2, 1 + t % 2);
        CU_ASSERT(c.fl.root != NULL);
        apsolve_chunk_floor_each(&c.fl, c.o.schedule, 2, c.o.micro_batches, c.nmax, c.each);
        check_counts(c.p, &c.o, c.sh, c.each, c.skip, c.nmax, INFINITY, &low, &counts, &ratio);
        count_case_close(&c);
    }
    CU_ASSERT(low == 0);
    CU_ASSERT(counts > 100);
    CU_ASSERT(ratio > 0.7);
    fprintf(stderr, "zbv fill: %d low, %d counts checked, closest %.3f\n", low, counts, ratio);
}

/* ZB-V's path floor (chunk_floor.c, path_floor) with more micro-batches
 * (B = 3, 4: the first stage weighed ((B + 1) x + w) / 2): every stage
 * count's own plan at or above B x each[n], and within 0.7 of some where
 * it is above the largest stage. Too high a path floor fails the tests
 * above, checked by hand: made 1.1 x, the B = 1, 2 test (8 counts below
 * their floor, closest 1.055); its first stage weighed ((B + 3) x + w) / 2,
 * that test (57 below) and "stage counts left out" (1 plan differs). The
 * device paths (paths_open) under tau = 1.2 x the least count's plan / B:
 * a count they close has no plan below B tau; with each device's forwards
 * counted twice this fails (34 below) and so does "stage counts left out"
 * (13 plans differ), checked by hand. */
static void test_zbv_path_floor(void)
{
    uint64_t rng = 0xFA7Bull;
    int low = 0, counts = 0, closed = 0;
    double ratio = 0;
    for (int t = 0; t < 80; t++) {
        CountCase c;
        count_case_open(&c, &rng, t, APSOLVE_SCHEDULE_ZBV, 2, t % 2 ? 4 : 3);
        CU_ASSERT(c.fl.x != NULL);
        apsolve_chunk_floor_each(&c.fl, c.o.schedule, 2, c.o.micro_batches, c.nmax, c.each);
        check_counts(c.p, &c.o, c.sh, c.each, c.skip, c.nmax, INFINITY, &low, &counts, &ratio);
        {
            /* under tau (1.2 x the least count's plan / B): a count the
             * device paths close (each[n] +inf) has no plan below B tau */
            double least = INFINITY, tau;
            int unused = 0;
            for (int n = 1; n <= c.nmax; n++) {
                ApsolvePlan *one = NULL;
                for (int q = 0; q <= c.nmax; q++)
                    c.skip[q] = q != n;
                if (apsolve_solve_shared_skip(c.p, &c.o, c.sh, c.skip, &one) == APSOLVE_OK &&
                    one->feasible && one->total_cost < least)
                    least = one->total_cost;
                apsolve_plan_free(&one);
            }
            tau = least * 1.2 / c.o.micro_batches;
            for (int n = 1; n <= c.nmax; n++)
                closed += isfinite(c.each[n]) && isfinite(tau);
            apsolve_stage_floor_under(&c.fl, tau);
            apsolve_chunk_floor_each(&c.fl, c.o.schedule, 2, c.o.micro_batches, c.nmax, c.each);
            for (int n = 1; n <= c.nmax; n++)
                closed -= isfinite(c.each[n]) && isfinite(tau);
            check_counts(c.p, &c.o, c.sh, c.each, c.skip, c.nmax, c.o.micro_batches * tau, &low,
                         &unused, NULL);
        }
        count_case_close(&c);
    }
    CU_ASSERT(low == 0);
    CU_ASSERT(counts > 100);
    CU_ASSERT(ratio > 0.7);
    CU_ASSERT(closed > 20); /* counts closed under tau, their plans checked */
    fprintf(stderr, "zbv path: %d low, %d counts checked, closest %.3f, %d closed under tau\n",
            low, counts, ratio, closed);
}

/* Interleaved ZB's sum floor (chunk_floor.c): at v = 2, 3 and B = 4, 8,
 * every stage count's own plan at or above B x each[n], under no tau and
 * under tau = 1.2 x the least count's plan / B (each[n] then bounds only
 * the plans below B tau: min(B tau, B each[n]) at most each plan); the
 * closest within 0.85 of its plan. Checked by hand: the fill left out of
 * the floor (phi = 0) fails here (59 counts below) and "stage counts left
 * out" (15 below), which runs interleaved ZB on every fourth problem. */
static void test_izb_sum_floor(void)
{
    uint64_t rng = 0x12B5ull;
    int low = 0, counts = 0;
    double ratio = 0;
    for (int t = 0; t < 60; t++) {
        CountCase c;
        int v = 2 + t % 2;
        double least = INFINITY, tau;
        count_case_open(&c, &rng, t, APSOLVE_SCHEDULE_INTERLEAVED_ZB, v, t % 4 < 2 ? 4 : 8);
        apsolve_chunk_floor_each(&c.fl, c.o.schedule, v, c.o.micro_batches, c.nmax, c.each);
        for (int n = 1; n <= c.nmax; n++) {
            ApsolvePlan *one = NULL;
            for (int q = 0; q <= c.nmax; q++)
                c.skip[q] = q != n;
            if (apsolve_solve_shared_skip(c.p, &c.o, c.sh, c.skip, &one) == APSOLVE_OK &&
                one->feasible && (int)one->n_stages == n) {
                double x = c.o.micro_batches * c.each[n];
                low += !(x <= one->total_cost * (1 + 1e-12));
                counts++;
                ratio = x / one->total_cost > ratio ? x / one->total_cost : ratio;
                least = one->total_cost < least ? one->total_cost : least;
            }
            apsolve_plan_free(&one);
        }
        tau = least * 1.2 / c.o.micro_batches;
        if (isfinite(tau)) {
            apsolve_stage_floor_under(&c.fl, tau);
            apsolve_chunk_floor_each(&c.fl, c.o.schedule, v, c.o.micro_batches, c.nmax, c.each);
            check_counts(c.p, &c.o, c.sh, c.each, c.skip, c.nmax, c.o.micro_batches * tau, &low,
                         &counts, NULL);
        }
        count_case_close(&c);
    }
    CU_ASSERT(low == 0);
    CU_ASSERT(counts > 100);
    CU_ASSERT(ratio > 0.85);
    fprintf(stderr, "izb sum: %d low, %d counts checked, closest %.3f\n", low, counts, ratio);
}

static int same_prep(const DpPrep *a, const DpPrep *b, int L)
{
    if (a->n_opts != b->n_opts || a->n_items != b->n_items ||
        memcmp(a->opt_off, b->opt_off, (size_t)(L + 1) * sizeof *a->opt_off) ||
        memcmp(a->opts, b->opts, a->n_opts * sizeof *a->opts))
        return 0;
    for (size_t k = 0; k < a->n_items; k++)
        if (a->items[k].cost != b->items[k].cost || a->items[k].mnss != b->items[k].mnss ||
            a->items[k].config != b->items[k].config || a->items[k].opt != b->items[k].opt ||
            a->apply[k] != b->apply[k])
            return 0;
    return 1;
}

static void test_family_bounds(void)
{
    static const int kinds[] = {APSOLVE_SCHEDULE_INTERLEAVED, APSOLVE_SCHEDULE_INTERLEAVED_ZB,
                                APSOLVE_SCHEDULE_ZBV, APSOLVE_SCHEDULE_ZB_H1};
    uint64_t rng = 0xFA111ull;
    int differ = 0, compared = 0, bounded = 0;
    for (int t = 0; t < 80; t++) {
        ApsolveProblem *p = random_problem(&rng, 2 * t + 1); /* with memory */
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o;
        DpFamily fam;
        int ns[APSOLVE_MAX_LAYERS], count = 0, nmax;
        memset(&o, 0, sizeof o);
        o.schedule = kinds[t % 4];
        o.virtual_stages = o.schedule == APSOLVE_SCHEDULE_ZB_H1 ? 1 : 2 + t % 3;
        o.micro_batches = (int[]){2, 4, 8, 12}[oracle_rand(&rng) % 4];
        o.objective = t % 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        o.headroom_percent = t % 5 == 0 ? 10 : 0;
        o.search_headroom = t % 5 == 0;
        o.whole_chunks = t % 3 != 0;
        nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices;
        for (int n = 1; n <= nmax; n++)
            if (apsolve_schedule_valid((ApsolveSchedule)o.schedule, apsolve_virtual(&o),
                                       o.micro_batches, n, NULL, 0))
                ns[count++] = n;
        CU_ASSERT_FATAL(sh && apsolve_dp_shared_ready(sh, p, &o) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_family_init(&fam, sh, p, &o, ns, count) == APSOLVE_OK);
        CU_ASSERT(fam.on || count == 0);
        for (int q = 0; q < count; q++) {
            DpPrep a = {0}, b = {0};
            CU_ASSERT_FATAL(apsolve_dp_prep_build(&a, sh, &fam, p, &o, ns[q]) == APSOLVE_OK);
            CU_ASSERT_FATAL(apsolve_dp_prep_build(&b, sh, NULL, p, &o, ns[q]) == APSOLVE_OK);
            differ += !same_prep(&a, &b, p->num_layers);
            for (size_t k = 0; k < b.n_items; k++)
                bounded += b.items[k].mnss < p->num_layers;
            compared++;
            apsolve_dp_prep_free(&a);
            apsolve_dp_prep_free(&b);
        }
        apsolve_dp_family_free(&fam);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(differ == 0);
    CU_ASSERT(compared > 150);
    CU_ASSERT(bounded > 100); /* memory does bind */
}

/* dp_prepare's filter at apply limit x over items [off, off + n) of a
 * list: the (config, bound) pairs it keeps, in order, into out; their
 * count (-1: none within the limit, the option dropped). */
static int kept_at(const DpItem *items, const double *apply, int off, int n, double x, int *out)
{
    int kept = 0, top = -2, any = 0;
    for (int k = off; k < off + n; k++) {
        if (apply[k] > x)
            continue;
        any = 1;
        if (items[k].mnss > top) {
            out[2 * kept] = items[k].config;
            out[2 * kept++ + 1] = items[k].mnss;
            top = items[k].mnss;
        }
    }
    return any ? kept : -1;
}

/* The options of a prep (dominated items left out) keep, at every apply
 * limit, what every usable item of the table, with apsolve_entry_mnss's
 * bounds, keeps (dp_prepare's filter). */
static void test_dominated_items(void)
{
    uint64_t rng = 0xD0D0ull;
    int differ = 0, dropped = 0, limits = 0;
    for (int t = 0; t < 60; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o;
        DpPrep pr = {0};
        const double *vals;
        size_t n_vals, n = apsolve_problem_cells(p);
        int L = p->num_layers, *a = malloc(2 * (size_t)p->num_configs * sizeof *a),
            *b = malloc(2 * (size_t)p->num_configs * sizeof *b);
        CU_ASSERT_FATAL(sh && a && b);
        for (size_t k = 0; k < n; k++) /* unknown, zero and spread apply costs */
            p->apply_cost[k] = oracle_rand(&rng) % 6 == 0 ? -1 : (double)(oracle_rand(&rng) % 5);
        memset(&o, 0, sizeof o);
        o.micro_batches = 4;
        o.objective = t % 4 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        o.schedule = t % 2 ? APSOLVE_SCHEDULE_INTERLEAVED : APSOLVE_SCHEDULE_1F1B;
        o.virtual_stages = t % 2 ? 2 : 1;
        CU_ASSERT_FATAL(apsolve_dp_shared_ready(sh, p, &o) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_apply_limits(sh, p, &o, &vals, &n_vals) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_prep_build(&pr, sh, NULL, p, &o, 4) == APSOLVE_OK);
        {
            DpItem *ref = malloc((sh->n_items ? sh->n_items : 1) * sizeof *ref);
            size_t q = 0;
            CU_ASSERT_FATAL(ref != NULL);
            for (size_t k = 0; k < sh->n_items; k++) {
                int m = apsolve_entry_mnss(p, &o, (size_t)sh->items[k].opt, 4);
                ref[k] = sh->items[k];
                ref[k].mnss = m < 0 ? -1000 : m > L ? L : m; /* -1000: never fits */
            }
            for (int i = 0; i < L; i++)
                for (int op = sh->opt_off[i]; op < sh->opt_off[i + 1]; op++) {
                    const DpOpt *so = &sh->opts[op];
                    int in_prep = q < pr.n_opts && pr.opts[q].end == so->end &&
                                  pr.opts[q].submesh == so->submesh;
                    if (!apsolve_chunks_whole(&o, i, so->end))
                        continue;
                    for (size_t x = 0; x <= n_vals; x++) {
                        double lim = o.objective == APSOLVE_OBJECTIVE_FULL && x < n_vals
                                         ? vals[x] : INFINITY;
                        int nb, na;
                        double *ra = malloc((size_t)so->item_n * sizeof *ra);
                        DpItem *ri = malloc((size_t)so->item_n * sizeof *ri);
                        int nr = 0;
                        CU_ASSERT_FATAL(ra && ri);
                        for (int k = so->item_off; k < so->item_off + so->item_n; k++)
                            if (ref[k].mnss >= 0) { /* the items that ever fit */
                                ri[nr] = ref[k];
                                ra[nr++] = sh->apply[k];
                            }
                        nb = kept_at(ri, ra, 0, nr, lim, b);
                        na = in_prep ? kept_at(pr.items, pr.apply, pr.opts[q].item_off,
                                               pr.opts[q].item_n, lim, a) : -1;
                        differ += na != nb || (na > 0 && memcmp(a, b, 2 * (size_t)na * sizeof *a));
                        limits++;
                        if (x == 0 && in_prep)
                            dropped += nr - pr.opts[q].item_n;
                        free(ra);
                        free(ri);
                    }
                    q += in_prep;
                }
            free(ref);
        }
        free(a);
        free(b);
        apsolve_dp_prep_free(&pr);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(differ == 0);
    CU_ASSERT(limits > 1000);
    CU_ASSERT(dropped > 100); /* items are left out */
}

static void test_shared_table(void)
{
    uint64_t rng = 0x5A4EDull;
    int differ = 0, feasible = 0;
    for (int t = 0; t < 60; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        CU_ASSERT_FATAL(sh != NULL);
        for (int v = 2; v <= 4; v++) {
            ApsolveOptions o;
            ApsolvePlan *a = NULL, *b = NULL;
            int ra, rb;
            memset(&o, 0, sizeof o);
            o.micro_batches = 8;
            o.objective = t % 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
            o.schedule = k_kinds[(t + v) % 2];
            o.virtual_stages = v;
            o.whole_chunks = 1;
            ra = apsolve_solve_shared(p, &o, sh, &a);
            rb = apsolve_solve(p, &o, &b);
            differ += ra != rb || !same_plan(a, b);
            feasible += ra == APSOLVE_OK;
            apsolve_plan_free(&a);
            apsolve_plan_free(&b);
        }
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(differ == 0);
    CU_ASSERT(feasible > 60);
}

static void test_budget_per_avail(void)
{
    static const int kinds[] = {APSOLVE_SCHEDULE_1F1B, APSOLVE_SCHEDULE_INTERLEAVED,
                                APSOLVE_SCHEDULE_GPIPE, APSOLVE_SCHEDULE_ZB_H1};
    static const int64_t avails[] = {0, 700, 1000, 1000, 1300};
    uint64_t rng = 0xB0D6E7ull;
    int differ = 0, compared = 0;
    for (int t = 0; t < 48; t++) {
        ApsolveProblem *p = random_problem(&rng, 2 * t + 1); /* with memory */
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        size_t ne = apsolve_problem_cells(p);
        ApsolveOptions o;
        DpPrep pr = {0};
        int n = 1 + t % 4;
        for (size_t k = 0; k < ne; k++)
            p->memory[k].avail = avails[oracle_rand(&rng) % 5];
        memset(&o, 0, sizeof o);
        o.schedule = kinds[t % 4];
        o.virtual_stages = o.schedule == APSOLVE_SCHEDULE_INTERLEAVED ? 2 : 1;
        o.micro_batches = 8;
        o.objective = t % 2 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        o.headroom_percent = t % 3 == 2 ? 0 : 15;
        o.headroom_bytes = t % 3 == 1 ? 250 : 0;
        o.search_headroom = t % 3 != 2;
        CU_ASSERT_FATAL(sh && apsolve_dp_shared_ready(sh, p, &o) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_prep_build(&pr, sh, NULL, p, &o, n) == APSOLVE_OK);
        for (size_t k = 0; k < pr.n_items; k++) {
            int m = apsolve_entry_mnss(p, &o, (size_t)pr.items[k].opt, n);
            differ += pr.items[k].mnss != (m > p->num_layers ? p->num_layers : m);
            compared++;
        }
        apsolve_dp_prep_free(&pr);
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(differ == 0);
    CU_ASSERT(compared > 1000);
}

/* test_chunk_bar's counts: wrong answers, cut searches, plans below the plan to
 * beat, of them above it in total (sf 0), above 0.95 of it or above it (sf 1). */
typedef struct BarCounts {
    int wrong, cut, below, bare, near, unknown;
} BarCounts;

/* A plan to beat best against the search's plan whole: with straddle_free
 * (sf) 0 a plan of T below best wins; with 1, of oracle_full_floor below
 * it. A winner's objective is at most the bar, and the search cut at the
 * bar answers above it only when whole does not win. */
static void bar_case(const ApsolveProblem *p, const ApsolveOptions *o, ApsolveDpShared *sh,
                     const unsigned char *skip, const int *ns, int count, int sf,
                     const ApsolvePlan *whole, double best, BarCounts *n)
{
    double bar = apsolve_chunk_bar(p, o, best, ns, count, sf);
    int wins = whole->feasible && (sf ? oracle_full_floor(whole) : whole->cost) < best;
    ApsolvePlan *pl = NULL;
    n->below += wins && !sf;
    n->bare += wins && !sf && whole->total_cost > best;
    n->near += wins && sf && whole->total_cost > 0.95 * best;
    n->unknown += wins && sf && whole->total_cost > best;
    if (wins && !(whole->total_cost <= bar))
        n->wrong++;
    CU_ASSERT_FATAL(apsolve_solve_shared_below(p, o, sh, skip, bar, &pl) == APSOLVE_OK);
    if (pl->total_cost > bar) {
        n->cut += !sf;
        n->wrong += wins;
    }
    apsolve_plan_free(&pl);
}

/* The chunked searches' bar (solver/search_bar.c, apsolve_chunk_bar; as
 * session_search.c's chunk_solve uses it): over random problems with
 * passes, memory, apply costs and headroom, under interleaved 1F1B,
 * interleaved ZB and ZB-V, both objectives, plans to beat from 0.3 to 2 x
 * the search's T and some stage counts left out, bar_case's checks; then
 * straddle-free, half the problems with every apply_cost known. Bars of
 * best alone (not straddle-free, or an apply_cost unknown), 0.95 x best +
 * the apply term, or the apply term at one stage count only fail it. */
static void test_chunk_bar(void)
{
    static const double cs[] = {0.3, 0.7, 0.9, 0.99, 1.0, 1.01, 1.1, 1.5, 2.0};
    static const int kinds[] = {APSOLVE_SCHEDULE_INTERLEAVED, APSOLVE_SCHEDULE_INTERLEAVED_ZB,
                                APSOLVE_SCHEDULE_ZBV};
    uint64_t rng = 0xBA2C4ull;
    BarCounts n = {0, 0, 0, 0, 0, 0};
    for (int t = 0; t < 240; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveDpShared *sh = apsolve_dp_shared_new();
        ApsolveOptions o;
        int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices;
        size_t cells = apsolve_problem_cells(p);
        unsigned char skip[64] = {0};
        int ns[64], count = 0;
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
            skip[q] = t % 2 && oracle_rand(&rng) % 4 == 0;
        for (int q = 1; q <= nmax; q++)
            if (!skip[q] && apsolve_schedule_valid((ApsolveSchedule)o.schedule,
                                                   o.virtual_stages, o.micro_batches, q, NULL,
                                                   0))
                ns[count++] = q;
        for (int sf = 0; sf < 2; sf++) {
            ApsolvePlan *whole = NULL;
            if (sf && t % 4 < 2) { /* every apply_cost known; a table of that problem */
                for (size_t k = 0; k < cells; k++)
                    p->apply_cost[k] = p->apply_cost[k] < 0 ? (double)(k % 9) / 8
                                                            : p->apply_cost[k];
                apsolve_dp_shared_free(sh);
                CU_ASSERT_FATAL((sh = apsolve_dp_shared_new()) != NULL);
            }
            if (apsolve_solve_shared_skip(p, &o, sh, skip, &whole) == APSOLVE_OK)
                for (size_t k = 0; k < sizeof cs / sizeof *cs; k++)
                    bar_case(p, &o, sh, skip, ns, count, sf, whole, cs[k] * whole->cost, &n);
            apsolve_plan_free(&whole);
        }
        apsolve_dp_shared_free(sh);
        apsolve_problem_free(&p);
    }
    printf("chunk bar: %d cut, %d below the plan to beat, %d above it in total; straddle-free: "
           "%d above 0.95 of it, %d above it\n", n.cut, n.below, n.bare, n.near, n.unknown);
    CU_ASSERT_EQUAL(n.wrong, 0);
    CU_ASSERT(n.cut > 100);
    CU_ASSERT(n.bare > 30); /* a bar of best alone would be wrong */
    CU_ASSERT(n.near > 10 && n.unknown > 0); /* 0.95 x best, or best with one unknown: wrong */
}

int main(void)
{
    static const CunitTest tests[] = {
        {"chunk floor skips no better plan", test_floor_prunes_exactly},
        {"stage counts left out by their floor change no plan", test_floor_each_prunes_exactly},
        {"ZB-V's fill floor at most each stage count's plan", test_zbv_fill_floor},
        {"ZB-V's path floor at most each stage count's plan", test_zbv_path_floor},
        {"interleaved ZB's sum floor at most each stage count's plan", test_izb_sum_floor},
        {"family memory bounds are apsolve_entry_mnss's", test_family_bounds},
        {"dominated items left out", test_dominated_items},
        {"shared table across chunk counts", test_shared_table},
        {"headroom budget once per avail", test_budget_per_avail},
        {"the chunked searches' bar", test_chunk_bar},
    };
    return CUNIT_RUN("solver_chunk_floor", tests);
}
