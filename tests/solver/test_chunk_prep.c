/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The preps, the shared table and the bar of the chunked schedules'
 * searches (docs/performance.md, "apsolve at scale: options shared across
 * stage and chunk counts"), in test program solver-chunk-floor
 * (test_chunk_floor.c, chunk_floor_test.h):
 *
 * - the memory bounds of a DpFamily (solver/dp_prep.c: one bisection per
 *   entry over the in-flight counts, replayed per stage count) are
 *   apsolve_entry_mnss's, option for option, on random memory figures
 *   (negative intermediates, no capacity, headroom), and a prep read from
 *   the family's list (family_list: the items not dominated at every
 *   count) is the one read from the table, item for item;
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

#include "chunk_floor_test.h"
#include "dp_int.h"
#include "oracle.h"
#include "schedule.h"
#include "session_int.h"
#include "solver_int.h"

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

void test_family_bounds(void)
{
    static const int kinds[] = {APSOLVE_SCHEDULE_INTERLEAVED, APSOLVE_SCHEDULE_INTERLEAVED_ZB,
                                APSOLVE_SCHEDULE_ZBV, APSOLVE_SCHEDULE_ZB_H1};
    uint64_t rng = 0xFA111ull;
    int differ = 0, compared = 0, bounded = 0, listed = 0, shorter = 0;
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
        /* in both orders: the list made at the first count's prep, or
         * the fits read by the table's preps first */
        if (t % 2)
            for (int q = 0; q < count; q++) {
                DpPrep a = {0};
                fam.counts = 1; /* no list: the table read, fits kept */
                CU_ASSERT_FATAL(apsolve_dp_prep_build(&a, sh, &fam, p, &o, ns[q]) == APSOLVE_OK);
                fam.counts = count;
                apsolve_dp_prep_free(&a);
            }
        for (int q = 0; q < count; q++) {
            DpPrep a = {0}, b = {0};
            CU_ASSERT_FATAL(apsolve_dp_prep_build(&a, sh, &fam, p, &o, ns[q]) == APSOLVE_OK);
            CU_ASSERT_FATAL(apsolve_dp_prep_build(&b, sh, NULL, p, &o, ns[q]) == APSOLVE_OK);
            if (q == 0 && fam.list == 1) {
                size_t whole = 0;
                for (int i = 0; i < p->num_layers; i++)
                    for (int op = sh->opt_off[i]; op < sh->opt_off[i + 1]; op++)
                        if (apsolve_chunks_whole(&o, i, sh->opts[op].end))
                            whole += (size_t)sh->opts[op].item_n;
                int lo = fam.loff[p->num_layers];
                size_t in_list = lo ? (size_t)fam.lopts[lo - 1].item_off +
                                          (size_t)fam.lopts[lo - 1].item_n : 0;
                listed++;
                shorter += in_list < whole;
            }
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
    CU_ASSERT(listed > 20);   /* the list is read, */
    CU_ASSERT(shorter > 10);  /* and leaves items out */
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

/* The items of an option a prep keeps (got[0 .. ng)), against those of
 * the option's usable items ri[0 .. nr) (apply ra) that no earlier one
 * dominates (apply key no larger: ra's, NaN or <= 0 as 0, when limited,
 * else 0 for all; bound no smaller), by a scan of every earlier one
 * (dp_prep.c keeps a staircase of them instead): *wrong counts a list
 * that differs, *overtaken the items kept that dominate an earlier one
 * kept (a step the staircase drops or replaces). */
static void undominated_check(const DpItem *ri, const double *ra, int nr, int limited,
                              const DpItem *got, int ng, int *wrong, int *overtaken)
{
    int nk = 0, same = 1;
    unsigned char *in = malloc((size_t)(nr ? nr : 1));
    CU_ASSERT_FATAL(in != NULL);
    for (int k = 0; k < nr; k++) {
        double a = !limited || isnan(ra[k]) || ra[k] <= 0 ? 0 : ra[k];
        int dom = 0, over = 0;
        for (int e = 0; e < k && !dom; e++) {
            double ae = !limited || isnan(ra[e]) || ra[e] <= 0 ? 0 : ra[e];
            dom = ae <= a && ri[e].mnss >= ri[k].mnss;
        }
        in[k] = (unsigned char)!dom;
        if (dom)
            continue;
        for (int e = 0; e < k; e++) {
            double ae = !limited || isnan(ra[e]) || ra[e] <= 0 ? 0 : ra[e];
            over |= in[e] && a <= ae && ri[k].mnss >= ri[e].mnss;
        }
        *overtaken += over;
        same = same && nk < ng && got[nk].config == ri[k].config && got[nk].mnss == ri[k].mnss;
        nk++;
    }
    *wrong += !(same && nk == ng);
    free(in);
}

/* The options of a prep (dominated items left out) keep, at every apply
 * limit, what every usable item of the table, with apsolve_entry_mnss's
 * bounds, keeps (dp_prepare's filter). */
void test_dominated_items(void)
{
    uint64_t rng = 0xD0D0ull;
    int differ = 0, dropped = 0, limits = 0, wrong_list = 0, overtaken = 0;
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
                const DpSharedItem *si = &sh->items[k];
                int m = apsolve_entry_mnss(p, &o, (size_t)si->entry, 4);
                /* -1000: never fits */
                ref[k] = (DpItem){si->cost, m < 0 ? -1000 : m > L ? L : m, si->config, si->entry};
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
                                ra[nr++] = sh->items[k].apply;
                            }
                        nb = kept_at(ri, ra, 0, nr, lim, b);
                        na = in_prep ? kept_at(pr.items, pr.apply, pr.opts[q].item_off,
                                               pr.opts[q].item_n, lim, a) : -1;
                        differ += na != nb || (na > 0 && memcmp(a, b, 2 * (size_t)na * sizeof *a));
                        limits++;
                        if (x == 0 && in_prep)
                            dropped += nr - pr.opts[q].item_n;
                        if (x == 0)
                            undominated_check(ri, ra, nr, o.objective == APSOLVE_OBJECTIVE_FULL,
                                              in_prep ? &pr.items[pr.opts[q].item_off] : NULL,
                                              in_prep ? pr.opts[q].item_n : 0, &wrong_list,
                                              &overtaken);
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
    CU_ASSERT(wrong_list == 0);
    CU_ASSERT(overtaken > 20); /* steps the staircase drops or replaces */
}

void test_shared_table(void)
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

void test_budget_per_avail(void)
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
            apsolve_memory_own(p, k)->avail = avails[oracle_rand(&rng) % 5];
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
                     const ApsolvePlan *whole, double best, const ApsolveStageFloor *f,
                     BarCounts *n)
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
    /* the bar read through the floor's least cost per range: the same */
    n->wrong += apsolve_chunk_bar_floor(p, o, best, ns, count, sf, f) != bar;
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
 * the apply term, or the apply term at one stage count only fail it. The
 * bar read through a floor's least cost per range
 * (apsolve_chunk_bar_floor) is the same bar (fails with ranges of least
 * cost above 0.9 x the cap left out). */
void test_chunk_bar(void)
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
            ApsolveStageFloor fl;
            if (sf && t % 4 < 2) { /* every apply_cost known; a table of that problem */
                for (size_t k = 0; k < cells; k++)
                    p->apply_cost[k] = p->apply_cost[k] < 0 ? (double)(k % 9) / 8
                                                            : p->apply_cost[k];
                apsolve_dp_shared_free(sh);
                CU_ASSERT_FATAL((sh = apsolve_dp_shared_new()) != NULL);
            }
            CU_ASSERT_FATAL(apsolve_stage_floor_init_plain(&fl, p) == APSOLVE_OK);
            if (apsolve_solve_shared_skip(p, &o, sh, skip, &whole) == APSOLVE_OK)
                for (size_t k = 0; k < sizeof cs / sizeof *cs; k++)
                    bar_case(p, &o, sh, skip, ns, count, sf, whole, cs[k] * whole->cost, &fl,
                             &n);
            apsolve_plan_free(&whole);
            apsolve_stage_floor_free(&fl);
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
