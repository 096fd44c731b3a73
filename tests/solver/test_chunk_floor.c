/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shortcuts of the chunked schedules' searches (docs/performance.md,
 * "apsolve at scale: options shared across stage and chunk counts"), one
 * test program with test_chunk_prep.c (the preps, the shared table and the
 * bar; chunk_floor_test.h):
 *
 * - the floor of a chunk count v (solver/chunk_floor.c) never exceeds the
 *   largest stage cost of a plan the search under v returns, and a search
 *   over v that skips every v whose B x floor reaches the best so far (as
 *   try_chunks does) keeps the plan the search without skipping keeps, on
 *   random problems with memory limits;
 * - ZB-V's fill and path floors, its device paths and interleaved ZB's sum
 *   floor (chunk_floor.c) at most every stage count's own plan (under the
 *   best so far: each[n] bounds the plans below it), and the same plans
 *   kept when the counts they leave out are left out.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "chunk_floor_test.h"
#include "cunit_run.h"
#include "dp_int.h"
#include "oracle.h"
#include "schedule.h"
#include "session_int.h"
#include "solver_int.h"

const int k_kinds[2] = {APSOLVE_SCHEDULE_INTERLEAVED, APSOLVE_SCHEDULE_ZBV};

ApsolveProblem *random_problem(uint64_t *rng, int t)
{
    ApsolveProblem *p = NULL;
    CU_ASSERT_FATAL(oracle_chunk_problem(rng, t, 4, 0.2, 1, 2, &p) == APSOLVE_OK);
    return p;
}

int same_plan(const ApsolvePlan *a, const ApsolvePlan *b)
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

static int same_doubles(const double *a, const double *b, size_t n)
{
    return (!a && !b) || (a && b && !memcmp(a, b, n * sizeof *a));
}

/* Whether two floors' roots and path tables (ranges i <= j: the others are
 * never written) are the same, bit for bit. */
static int same_roots(const ApsolveStageFloor *a, const ApsolveStageFloor *b, int S)
{
    int L = a->L;
    if (!a->root != !b->root || !a->x != !b->x)
        return 0;
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++) {
            size_t at = (size_t)i * L + j;
            if (a->root && !same_doubles(&a->root[at], &b->root[at], 1))
                return 0;
            for (int q = 0; a->x && q < 5; q++)
                if (!same_doubles(&a->x[(q * (size_t)L * L + at) * S],
                                  &b->x[(q * (size_t)L * L + at) * S], (size_t)S))
                    return 0;
        }
    return 1;
}

/* One floor for the three chunked searches (session_search.c): a floor
 * made plain, its roots made later, after an interleaved ZB's tau and
 * again at another (the ZB-V search after it), floors every v and kind as
 * a floor made whole for each, bit for bit. */
static void test_floor_shared(void)
{
    uint64_t rng = 0x5AEDull;
    int differ = 0, roots = 0;
    for (int t = 0; t < 60; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveStageFloor shared, fresh;
        int L = p->num_layers, B = (int[]){2, 4, 8}[t % 3];
        double tau[2] = {t % 2 ? INFINITY : 0.5 + (double)(oracle_rand(&rng) % 8) / 4, 0};
        double *a = malloc(((size_t)L + 1) * sizeof *a), *b = malloc(((size_t)L + 1) * sizeof *b);
        tau[1] = t % 4 < 2 ? tau[0] : (double)(oracle_rand(&rng) % 8) / 4;
        CU_ASSERT_FATAL(a && b && apsolve_stage_floor_init_plain(&shared, p) == APSOLVE_OK);
        CU_ASSERT(!shared.roots && !shared.root && !shared.x);
        for (int v = 2; v <= L; v++) { /* interleaved: cost and work alone */
            apsolve_chunk_floor_each(&shared, APSOLVE_SCHEDULE_INTERLEAVED, v, B, L, a);
            CU_ASSERT_FATAL(apsolve_stage_floor_init(&fresh, p) == APSOLVE_OK);
            apsolve_chunk_floor_each(&fresh, APSOLVE_SCHEDULE_INTERLEAVED, v, B, L, b);
            differ += !same_doubles(a, b, (size_t)L + 1);
            apsolve_stage_floor_free(&fresh);
        }
        for (int z = 0; z < 2; z++) { /* interleaved ZB at tau[0], then ZB-V at tau[1] */
            int kind = z ? APSOLVE_SCHEDULE_ZBV : APSOLVE_SCHEDULE_INTERLEAVED_ZB;
            apsolve_stage_floor_roots(&shared);
            apsolve_stage_floor_under(&shared, tau[z]);
            CU_ASSERT_FATAL(apsolve_stage_floor_init(&fresh, p) == APSOLVE_OK);
            apsolve_stage_floor_under(&fresh, tau[z]);
            roots += shared.root != NULL;
            differ += !same_roots(&shared, &fresh, p->num_submeshes) ||
                      (shared.x && shared.fill != fresh.fill) || shared.tau != fresh.tau;
            for (int v = 2; v <= (z ? 2 : L); v++) {
                apsolve_chunk_floor_each(&shared, kind, v, B, L, a);
                apsolve_chunk_floor_each(&fresh, kind, v, B, L, b);
                differ += !same_doubles(a, b, (size_t)L + 1);
            }
            apsolve_stage_floor_free(&fresh);
        }
        apsolve_stage_floor_free(&shared);
        apsolve_problem_free(&p);
        free(a);
        free(b);
    }
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT(roots > 30); /* the zero-bubble floors are made */
}

/* ZB-V's device paths by enumeration (chunk_floor.c, paths_open): whether
 * some cut of n stages from layer i on, r stages placed on e devices with
 * prefix pre, keeps every path below U, each stage priced by f's least
 * figures on its submesh; c[3 r ..] device r's F, B and W passes of its
 * two segments (the file comment's definition). Every cut is walked, none
 * merged or ordered, so it is the reference for paths_open's states. */
static int paths_ref(const ApsolveStageFloor *f, const int *c, int n, int v, double U, int i,
                     int e, int r, double pre)
{
    const ApsolveProblem *p = f->p;
    int L = f->L, D = f->D, S = p->num_submeshes;
    size_t q = (size_t)L * L * S;
    if (r == n)
        return i == L && e == D;
    for (int j = i + v - 1; j < L; j += v)
        for (int s = 0; s < S; s++) {
            size_t at = ((size_t)i * L + j) * S + s;
            int e2 = e + p->submeshes[s].hosts * p->submeshes[s].gpus;
            const int *cr = c + 3 * r;
            double w0 = r ? 0 : f->x[3 * q + at] / 2,
                   seg = (cr[0] * f->x[q + at] + cr[1] * f->x[2 * q + at] +
                          cr[2] * f->x[3 * q + at]) / 2;
            if (e2 > D || !(pre + seg + w0 < U))
                continue;
            if (paths_ref(f, c, n, v, U, j + 1, e2, r + 1, pre + f->x[at] + w0))
                return 1;
        }
    return 0;
}

/* Device r's passes of its two segments at n stages, B micro-batches (as
 * the file comment of chunk_floor.c counts them on PyTorch's V order). */
static void paths_counts(int n, int B, int *c)
{
    ApsolvePass *ord = malloc((size_t)6 * B * sizeof *ord);
    CU_ASSERT_FATAL(ord != NULL);
    for (int r = 0; r < n; r++) {
        int k = apsolve_schedule_zb_order(APSOLVE_SCHEDULE_ZBV, 2, B, n, r, ord), c1 = 2 * n - 1 - r,
            in = 1, *cr = c + 3 * r;
        CU_ASSERT_FATAL(k == 6 * B);
        cr[0] = cr[1] = cr[2] = 0;
        for (int t = 0; t < k; t++) {
            if (ord[t].op == 1 && ord[t].stage == c1 && ord[t].mb == 0)
                in = 1;
            if (in)
                cr[ord[t].op]++;
            if (ord[t].op == 0 && ord[t].stage == c1 && ord[t].mb == 0)
                in = 0;
            if (ord[t].op == 1 && ord[t].stage == r && ord[t].mb == B - 1)
                break;
        }
    }
    free(ord);
}

/* The device paths close only counts no cut keeps open (docs/
 * performance.md, "apsolve's floors, third round"): on problems of 16
 * devices (many device counts per row, so a row's states are many and
 * their prefixes differ), under tau from 1 to 2.5 x a count's other floor,
 * every count ZB-V's floor leaves +inf has no cut whose paths all stay
 * below B tau (enumerated), and some have one that is open and stays
 * finite. Checked by hand: with the row's states read in the reverse order
 * of their prefixes (the break then too early) this fails. */
static void test_zbv_paths_by_prefix(void)
{
    uint64_t rng = 0x9A75ull;
    int bad = 0, closed = 0, open = 0;
    for (int t = 0; t < 24; t++) {
        OracleGen g;
        ApsolveProblem *p = NULL;
        ApsolveStageFloor fl;
        int B = 3 + t % 3, nmax, *c;
        double *each, *base;
        memset(&g, 0, sizeof g);
        g.layers = 8 + 2 * (int)(oracle_rand(&rng) % 3);
        g.hosts = t % 2 ? 2 : 4;
        g.gpus = t % 2 ? 8 : 4;
        g.inf_prob = 0.05;
        g.noise = 0.3;
        g.device_exponent = t % 3 ? 0.8 : 1.0;
        CU_ASSERT_FATAL(oracle_make_problem(&g, &rng, &p) == APSOLVE_OK);
        CU_ASSERT_FATAL(oracle_add_passes(p, &rng) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_stage_floor_init(&fl, p) == APSOLVE_OK);
        nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices;
        each = malloc(((size_t)nmax + 1) * sizeof *each);
        base = malloc(((size_t)nmax + 1) * sizeof *base);
        c = malloc(3 * ((size_t)nmax + 1) * sizeof *c);
        CU_ASSERT_FATAL(each && base && c && fl.x);
        apsolve_chunk_floor_each(&fl, APSOLVE_SCHEDULE_ZBV, 2, B, nmax, base);
        for (int n = 1; n <= nmax; n++) {
            if (!isfinite(base[n]))
                continue;
            for (int k = 0; k < 7; k++) {
                double tau = base[n] * (1 + 0.25 * k);
                int ref;
                apsolve_stage_floor_under(&fl, tau);
                apsolve_chunk_floor_each(&fl, APSOLVE_SCHEDULE_ZBV, 2, B, nmax, each);
                paths_counts(n, B, c);
                ref = paths_ref(&fl, c, n, 2, B * fl.tau, 0, 0, 0, 0);
                bad += ref && !isfinite(each[n]);
                closed += !ref && !isfinite(each[n]);
                open += ref && isfinite(each[n]);
            }
        }
        apsolve_stage_floor_free(&fl);
        apsolve_problem_free(&p);
        free(each);
        free(base);
        free(c);
    }
    fprintf(stderr, "zbv paths by prefix: %d closed with an open cut, %d closed, %d open\n", bad,
            closed, open);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(closed > 20);
    CU_ASSERT(open > 20);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"chunk floor skips no better plan", test_floor_prunes_exactly},
        {"stage counts left out by their floor change no plan", test_floor_each_prunes_exactly},
        {"ZB-V's fill floor at most each stage count's plan", test_zbv_fill_floor},
        {"ZB-V's path floor at most each stage count's plan", test_zbv_path_floor},
        {"ZB-V's device paths close only counts no cut keeps open", test_zbv_paths_by_prefix},
        {"interleaved ZB's sum floor at most each stage count's plan", test_izb_sum_floor},
        {"family memory bounds are apsolve_entry_mnss's", test_family_bounds},
        {"dominated items left out", test_dominated_items},
        {"shared table across chunk counts", test_shared_table},
        {"headroom budget once per avail", test_budget_per_avail},
        {"the chunked searches' bar", test_chunk_bar},
        {"each stage count searched once", test_chunk_counts},
        {"a count's options built once per run", test_chunk_counts_prep},
        {"one floor shared by the chunked searches", test_floor_shared},
    };
    return CUNIT_RUN("solver_chunk_floor", tests);
}
