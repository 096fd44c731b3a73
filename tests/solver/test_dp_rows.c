/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rows of one threshold DP (solver/dp_rows.c) against the plain
 * recurrence, DP after DP (docs/performance.md, "apsolve: the threshold
 * DPs' own cost, cut exactly"): random stage options built by hand (a few
 * items each, costs from a handful of integers so that many items of
 * different rows share a cost), run at a random sequence of thresholds
 * (item costs themselves, values between them, repeats) on one Dp, so that
 * each DP keeps whatever rows the last one left as it would make them.
 * After every DP each live state's frontier (stage counts, sums bit for
 * bit, items) must be the one the plain recurrence makes afresh over every
 * state, cut at the entries a plan can hold: all of it at the top state
 * (0, D), elsewhere its entries of at most NS - 1 - k stages, k the fewest
 * stages of a chain of options from the top to the state. Fails when a row
 * kept from the last DP differs (a row made again left out, a wrong place
 * in the pool), when an offer takes the wrong item or entry, or when an
 * entry a plan can hold is left out (or one it cannot hold kept). Pareto
 * frontiers and exact stage counts, every stage count cap down to one
 * stage.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "dp_int.h"
#include "oracle.h"

enum { MAXL = 9, MAXD = 10, MAXNS = 11 };

/* The plain recurrence of every state (i, d): best sum per stage count,
 * its item, and the frontier kept from them. */
typedef struct Ref {
    double val[MAXL + 1][MAXD + 1][MAXNS];
    int arg[MAXL + 1][MAXD + 1][MAXNS];
    int n[MAXL + 1][MAXD + 1][MAXNS];
    int cnt[MAXL + 1][MAXD + 1];
} Ref;

static void ref_run(const Dp *dp, double t, Ref *r)
{
    memset(r->cnt, 0, sizeof r->cnt);
    r->cnt[dp->L][0] = 1;
    r->n[dp->L][0][0] = 0;
    r->val[dp->L][0][0] = 0.0;
    r->arg[dp->L][0][0] = -1;
    for (int i = dp->L - 1; i >= 0; i--)
        for (int d = 1; d <= dp->D; d++) {
            double best[MAXNS];
            int arg[MAXNS], nmax = dp->NS - 1;
            double run = INFINITY;
            if (nmax > dp->L - i)
                nmax = dp->L - i;
            if (nmax > d)
                nmax = d;
            for (int n = 0; n < MAXNS; n++)
                best[n] = INFINITY;
            for (int o = dp->opt_off[i]; o < dp->opt_off[i + 1]; o++) {
                const DpOpt *op = &dp->opts[o];
                int c = op->end + 1, cd = d - op->dev;
                if (cd < 0)
                    continue;
                for (int e = 0; e < r->cnt[c][cd]; e++) {
                    int nc = r->n[c][cd][e], q = -1;
                    double cand;
                    if (nc + 1 > nmax)
                        break;
                    /* the cheapest item within t that fits nc stages after it */
                    for (int k = 0; k < op->item_n && q < 0; k++) {
                        const DpItem *it = &dp->items[op->item_off + k];
                        if (it->cost <= t && it->mnss >= nc)
                            q = op->item_off + k;
                    }
                    if (q < 0)
                        continue;
                    cand = r->val[c][cd][e] + dp->items[q].cost;
                    if (cand < best[nc + 1]) {
                        best[nc + 1] = cand;
                        arg[nc + 1] = q;
                    }
                }
            }
            for (int n = 1; n <= nmax; n++)
                if (dp->exact_n > 0 ? best[n] < INFINITY : best[n] < run) {
                    int e = r->cnt[i][d]++;
                    run = best[n];
                    r->n[i][d][e] = n;
                    r->val[i][d][e] = best[n];
                    r->arg[i][d][e] = arg[n];
                }
        }
}

/* Random options in dp_prepare's order (end descending, devices
 * ascending), items sorted by cost with their stage bounds ascending. */
static void make_dp(Dp *dp, uint64_t *rng, int t, double *costs, int *n_costs)
{
    static const int sizes[] = {1, 2, 3, 4, 6, 8, 10};
    int n_opts = 0, n_items = 0, cap = MAXL * MAXL * 7;
    memset(dp, 0, sizeof *dp);
    dp->L = 1 + (int)(oracle_rand(rng) % MAXL);
    dp->D = 1 + (int)(oracle_rand(rng) % MAXD);
    dp->NS = dp->L < dp->D ? dp->L : dp->D;
    if (t % 4 == 1) /* a stage cap, one stage among them */
        dp->NS = 1 + (int)(oracle_rand(rng) % (uint64_t)dp->NS);
    if (t % 4 == 2) /* an exact stage count */
        dp->exact_n = dp->NS = 1 + (int)(oracle_rand(rng) % (uint64_t)dp->NS);
    dp->NS += 1;
    if (t % 3 == 2) /* dp_stage_caps telling apart fewer levels than NS - 1 */
        dp->levels = 1 + (int)(oracle_rand(rng) % 3);
    dp->opts = malloc((size_t)cap * sizeof *dp->opts);
    dp->items = malloc((size_t)cap * 3 * sizeof *dp->items);
    dp->opt_off = malloc((size_t)(dp->L + 1) * sizeof *dp->opt_off);
    CU_ASSERT_FATAL(dp->opts && dp->items && dp->opt_off);
    *n_costs = 0;
    for (int i = 0; i < dp->L; i++) {
        dp->opt_off[i] = n_opts;
        for (int j = dp->L - 1; j >= i; j--)
            for (int s = 0; s < 7 && sizes[s] <= dp->D; s++) {
                int k = 1 + (int)(oracle_rand(rng) % 3), mnss = -1 + (int)(oracle_rand(rng) % 3);
                double cost = (double)(1 + oracle_rand(rng) % 4);
                if (oracle_uniform(rng) < 0.3)
                    continue;
                dp->opts[n_opts] = (DpOpt){j, s, sizes[s], n_items, k};
                for (int q = 0; q < k; q++) {
                    dp->items[n_items++] = (DpItem){cost, mnss > dp->L ? dp->L : mnss, q, n_opts};
                    costs[(*n_costs)++] = cost;
                    cost += (double)(oracle_rand(rng) % 3); /* ties within an option too */
                    mnss += 1 + (int)(oracle_rand(rng) % 3);
                }
                n_opts++;
            }
    }
    dp->opt_off[dp->L] = n_opts;
}

/* The fewest stages of a chain of options from the top (0, D) to each
 * state, by the plain relaxation row after row, told apart up to the
 * levels dp_stage_caps tells apart (more, or none: one above). */
static void fewest_stages(const Dp *dp, int k[MAXL + 1][MAXD + 1])
{
    int most = dp->levels > 0 ? dp->levels : dp->NS - 1; /* told apart: more is most + 1 */
    for (int i = 0; i <= dp->L; i++)
        for (int d = 0; d <= dp->D; d++)
            k[i][d] = INT_MAX;
    k[0][dp->D] = 0;
    for (int i = 0; i < dp->L; i++)
        for (int d = 1; d <= dp->D; d++)
            for (int o = dp->opt_off[i]; k[i][d] < INT_MAX && o < dp->opt_off[i + 1]; o++) {
                const DpOpt *op = &dp->opts[o];
                if (op->dev <= d && k[i][d] + 1 < k[op->end + 1][d - op->dev])
                    k[op->end + 1][d - op->dev] = k[i][d] + 1;
            }
    for (int i = 0; i <= dp->L; i++)
        for (int d = 0; d <= dp->D; d++)
            if (k[i][d] > most)
                k[i][d] = most + 1;
}

/* What dp_run_live reads of a row besides the frontiers: each row's
 * headers of its states with a non-empty frontier (dp->nz: d ascending,
 * every such live state once, with its frontier's place, size, first
 * count and whether its counts run without a gap), and a zero cap at every
 * state not live (the offers' only test of liveness). Returns the
 * mismatches. */
static long headers_wrong(const Dp *dp)
{
    long wrong = 0;
    for (int i = 0; i <= dp->L; i++) {
        /* row L: the end state (0 devices) alone */
        int k = 0, first = i < dp->L ? dp->live_off[i] : 0,
            end = i < dp->L ? dp->live_off[i + 1] : 1;
        for (int li = first; li < end; li++) {
            int d = i < dp->L ? dp->live[li] : 0;
            size_t st = (size_t)i * (size_t)(dp->D + 1) + (size_t)d;
            int cnt = dp->front_cnt[st];
            if (cnt == 0)
                continue;
            if (k >= dp->nz_cnt[i]) {
                wrong++;
                break;
            }
            {
                const DpChild *h = &dp->nz[dp->live_off[i] + k++];
                int32_t base = dp->foff[st];
                int n0 = dp->front[base];
                wrong += h->d != d || h->base != base || h->cnt != cnt || h->n0 != n0 ||
                         h->consec != (dp->front[base + cnt - 1] - n0 == cnt - 1);
            }
        }
        wrong += k != dp->nz_cnt[i];
        if (i == dp->L)
            continue;
        for (int d = 0; d <= dp->D; d++) {
            int live = 0;
            for (int li = dp->live_off[i]; li < dp->live_off[i + 1]; li++)
                live |= dp->live[li] == d;
            wrong += !live && dp->ncap[(size_t)i * (size_t)(dp->D + 1) + (size_t)d] != 0;
        }
    }
    return wrong;
}

static void test_rows_against_plain(void)
{
    uint64_t rng = 0xD9A0ull;
    static Ref ref;
    static int fewest[MAXL + 1][MAXD + 1];
    static double costs[MAXL * MAXL * 7 * 3];
    long states = 0, kept = 0, mismatches = 0, exact = 0, headers = 0, gaps = 0;
    for (int t = 0; t < 400; t++) {
        Dp dp;
        int n_costs;
        make_dp(&dp, &rng, t, costs, &n_costs);
        exact += dp.exact_n > 0;
        CU_ASSERT_FATAL(apsolve_dp_live(&dp) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_tables(&dp) == APSOLVE_OK);
        fewest_stages(&dp, fewest);
        for (int run = 0; run < 25; run++) {
            /* an item's cost (ties at the threshold), between two, or +inf */
            double th = n_costs && run % 5 ? costs[oracle_rand(&rng) % (uint64_t)n_costs]
                                           : run % 10 ? 0.5 + (double)(oracle_rand(&rng) % 8)
                                                      : INFINITY;
            apsolve_dp_rows(&dp, th);
            ref_run(&dp, th, &ref);
            headers += headers_wrong(&dp);
            for (int i = 0; i < dp.L; i++)
                for (int k = 0; k < dp.nz_cnt[i]; k++)
                    gaps += !dp.nz[dp.live_off[i] + k].consec;
            for (int i = 0; i < dp.L; i++)
                for (int li = dp.live_off[i]; li < dp.live_off[i + 1]; li++) {
                    int d = dp.live[li], e = 0, same = 1;
                    size_t st = (size_t)i * (size_t)(dp.D + 1) + (size_t)d;
                    int cnt = dp.front_cnt[st];
                    size_t base = cnt ? (size_t)dp.foff[st] : 0;
                    states++;
                    for (int k = 0; k < ref.cnt[i][d]; k++) {
                        if (ref.n[i][d][k] > dp.NS - 1 - fewest[i][d])
                            break;
                        same = same && e < cnt && dp.front[base + (size_t)e] == ref.n[i][d][k] &&
                               memcmp(&dp.val[base + (size_t)e], &ref.val[i][d][k],
                                      sizeof(double)) == 0 &&
                               apsolve_dp_entry_item(&dp, i, d, ref.n[i][d][k]) ==
                                   ref.arg[i][d][k];
                        e++;
                    }
                    same = same && e == cnt;
                    kept += cnt > 0;
                    mismatches += !same;
                }
        }
        apsolve_dp_free(&dp);
    }
    CU_ASSERT(mismatches == 0);
    CU_ASSERT(headers == 0);
    CU_ASSERT(gaps > 20); /* frontiers with a gap in their counts too */
    CU_ASSERT(exact > 50);
    CU_ASSERT(kept > states / 4);
}

/* Whether a and b's live states are the same, array for array. */
static int live_equal(const Dp *a, const Dp *b)
{
    int L = a->L;
    size_t n = (size_t)a->live_off[L], W = a->words;
    size_t caps = (size_t)(L + 1) * (size_t)(a->D + 1);
    if (b->words != W || memcmp(a->live_off, b->live_off, (size_t)(L + 2) * sizeof(int)) ||
        memcmp(a->live, b->live, n * sizeof(int)) ||
        memcmp(a->livebits, b->livebits, (size_t)(L + 1) * W * sizeof(uint64_t)) ||
        !a->ncap != !b->ncap || (a->ncap && memcmp(a->ncap, b->ncap, caps * sizeof(int16_t))) ||
        b->nz_cnt[L] != 1 || b->nz[n].cnt != 1 || b->nz[n].d != 0 || b->ran != 0)
        return 0;
    for (int i = 0; i < L; i++)
        if (b->nz_cnt[i] != 0)
            return 0;
    return 1;
}

/* apsolve_dp_live_kept (dp_rows.c) against apsolve_dp_live: Dps made
 * again with the same options but other items (the kept states taken),
 * with one option's devices or end moved (made afresh), or new. Every
 * Dp's states must be apsolve_dp_live's, and the threshold DPs run on the
 * kept ones the same rows. Fails when the keep's key misses a field the
 * states depend on (a moved option's stale states taken). */
static void test_live_kept(void)
{
    uint64_t rng = 0x11FEull, last = rng;
    static double costs[MAXL * MAXL * 7 * 3];
    DpLiveKeep keep;
    long taken = 0, moved = 0, wrong = 0;
    memset(&keep, 0, sizeof keep);
    for (int t = 0; t < 900; t++) {
        Dp a, b;
        uint64_t r;
        int n_costs, kind = t % 3, same;
        if (kind) /* the last Dp's options again */
            rng = last;
        last = rng;
        make_dp(&a, &rng, t / 3, costs, &n_costs);
        r = last;
        make_dp(&b, &r, t / 3, costs, &n_costs);
        if (kind == 2 && a.opt_off[a.L] > 0) { /* one option moved, in both */
            int o = (int)(oracle_rand(&rng) % (uint64_t)a.opt_off[a.L]);
            if (a.opts[o].dev > 1)
                a.opts[o].dev = b.opts[o].dev = a.opts[o].dev - 1;
            else if (a.opts[o].end < a.L - 1)
                a.opts[o].end = b.opts[o].end = a.opts[o].end + 1;
            moved++;
        }
        for (int k = 0; k < a.opt_off[a.L]; k++) /* other items' costs: no key */
            for (int q = 0; q < b.opts[k].item_n; q++)
                b.items[b.opts[k].item_off + q].cost *= 2; /* sums doubled exactly */
        same = keep.ok && keep.L == b.L && keep.D == b.D && keep.NS == b.NS &&
               keep.levels == b.levels && keep.n_opts == (size_t)b.opt_off[b.L];
        for (int i = 0; same && i <= b.L; i++)
            same = keep.opt_off[i] == b.opt_off[i];
        for (int o = 0; same && o < b.opt_off[b.L]; o++)
            same = keep.end_dev[2 * o] == b.opts[o].end && keep.end_dev[2 * o + 1] == b.opts[o].dev;
        taken += same;
        CU_ASSERT_FATAL(apsolve_dp_live(&a) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_live_kept(&b, &keep) == APSOLVE_OK);
        wrong += !live_equal(&a, &b);
        CU_ASSERT_FATAL(apsolve_dp_tables(&a) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_tables(&b) == APSOLVE_OK);
        for (int run = 0; run < 4; run++) { /* the same rows on both (b's costs x 2) */
            double th = run == 3 ? INFINITY : 1.5 + run;
            apsolve_dp_rows(&a, th);
            apsolve_dp_rows(&b, 2 * th);
            wrong += a.front_cnt[a.D] != b.front_cnt[b.D] ||
                     (a.front_cnt[a.D] &&
                      2 * a.val[a.foff[a.D] + a.front_cnt[a.D] - 1] !=
                          b.val[b.foff[b.D] + b.front_cnt[b.D] - 1]);
        }
        apsolve_dp_free(&a);
        apsolve_dp_free(&b);
    }
    apsolve_dp_live_keep_free(&keep);
    printf("\n  live states kept: %ld Dps took kept states, %ld with an option moved, %ld wrong\n",
           taken, moved, wrong);
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_TRUE(taken > 200);
    CU_ASSERT_TRUE(moved > 200);
}

/* The top's answer of dp's last DP (the least sum's entry, or exact_n's):
 * its stage count (-1: none) and sum; its plan's items into items. */
static int top_answer(const Dp *dp, double *g, int *items)
{
    size_t base = dp->front_cnt[dp->D] ? (size_t)dp->foff[dp->D] : 0;
    int cnt = dp->front_cnt[dp->D], e = cnt - 1, n, i = 0, d = dp->D;
    if (dp->exact_n > 0)
        for (e = 0; e < cnt && dp->front[base + (size_t)e] != dp->exact_n; e++)
            ;
    if (e < 0 || e >= cnt)
        return -1;
    n = dp->front[base + (size_t)e];
    *g = dp->val[base + (size_t)e];
    for (int k = 0; k < n; k++) {
        int q = apsolve_dp_entry_item(dp, i, d, n - k);
        items[k] = q;
        if (q < 0)
            return n;
        i = dp->opts[dp->items[q].opt].end + 1;
        d -= dp->opts[dp->items[q].opt].dev;
    }
    return n;
}

/* The rows cut at an upper bound on g (apsolve_dp_rows_below, dp_bound.c)
 * against the uncut ones, DP after DP on one Dp each (so rows cut at one
 * bound are kept, or made again, at the next): the bound g itself (ties
 * at the cut), a little or much above it, or +inf, in a random order; the
 * top's answer, its sum bit for bit and its plan's items must be the
 * uncut DP's. The plan's chain summed by apsolve_dp_chain_sum must be g
 * bit for bit (the bounds the search takes from plans), and the least
 * prefix's chain at least g. Fails when the cut drops an entry a plan
 * summing <= the bound passes through (a prefix above the least, a
 * rounding), when a tie's first offer is lost, or when rows cut at a lower
 * bound are kept for a higher one. */
static void test_rows_cut(void)
{
    uint64_t rng = 0xC07Bull;
    static double costs[MAXL * MAXL * 7 * 3];
    long answers = 0, cut = 0, wrong = 0, chains = 0, dropped = 0;
    double last;
    for (int t = 0; t < 600; t++) {
        Dp a, b;
        uint64_t r = rng;
        int n_costs;
        make_dp(&a, &rng, t, costs, &n_costs);
        make_dp(&b, &r, t, costs, &n_costs);
        CU_ASSERT_FATAL(apsolve_dp_live(&a) == APSOLVE_OK && apsolve_dp_live(&b) == APSOLVE_OK);
        CU_ASSERT_FATAL(apsolve_dp_tables(&a) == APSOLVE_OK &&
                        apsolve_dp_tables(&b) == APSOLVE_OK);
        if (t % 2) /* whole prefixes and their least chain; else cut at the first bound */
            apsolve_dp_prefix(&b, INFINITY);
        last = INFINITY;
        for (int run = 0; run < 25; run++) {
            /* an item's cost, between two, +inf, or just below the last
             * (rows kept from a DP cut at a lower bound than this one's) */
            double th = run % 3 == 2 ? last - 0.25
                        : n_costs && run % 5 ? costs[oracle_rand(&rng) % (uint64_t)n_costs]
                        : run % 10           ? 0.5 + (double)(oracle_rand(&rng) % 8)
                                             : INFINITY;
            double ga = 0, gb = 0, bound, sum;
            last = th;
            int ia[MAXNS], ib[MAXNS], na, nb, chain[MAXNS];
            apsolve_dp_rows(&a, th);
            na = top_answer(&a, &ga, ia);
            switch (run % 3 == 2 ? 3 : run % 3 == 1 ? 0 : oracle_rand(&rng) % 4) {
            case 0: bound = na < 0 ? INFINITY : ga; break;
            case 1: bound = na < 0 ? INFINITY : ga + 0.5; break;
            case 2: bound = na < 0 ? INFINITY : ga * 3; break;
            default: bound = INFINITY; break;
            }
            cut += bound < INFINITY;
            apsolve_dp_rows_below(&b, th, bound);
            nb = top_answer(&b, &gb, ib);
            {
                long ea = 0, eb = 0;
                for (size_t st = 0; st < (size_t)(a.L + 1) * (size_t)(a.D + 1); st++) {
                    ea += a.front_cnt[st];
                    eb += b.front_cnt[st];
                }
                dropped += eb < ea;
            }
            wrong += na != nb || (na >= 0 && (memcmp(&ga, &gb, sizeof ga) ||
                                              memcmp(ia, ib, (size_t)na * sizeof *ia)));
            if (na < 0)
                continue;
            answers++;
            for (int k = 0; k < na; k++)
                chain[k] = a.items[ia[k]].opt;
            sum = apsolve_dp_chain_sum(&a, chain, na, th);
            wrong += memcmp(&sum, &ga, sizeof sum) != 0;
            if (b.pre && b.pre_chain_n > 0) {
                chains++;
                wrong += apsolve_dp_chain_sum(&b, b.pre_chain, b.pre_chain_n, th) < ga;
            }
        }
        apsolve_dp_free(&a);
        apsolve_dp_free(&b);
    }
    printf("\n  cut rows: %ld answers, %ld DPs cut, %ld with entries left out, %ld prefix chains, "
           "%ld wrong\n",
           answers, cut, dropped, chains, wrong);
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_TRUE(answers > 3000);
    CU_ASSERT_TRUE(cut > 3000);
    CU_ASSERT_TRUE(dropped > 1000);
    CU_ASSERT_TRUE(chains > 1000);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"threshold DP rows against the plain recurrence", test_rows_against_plain},
        {"live states kept across Dps of the same options", test_live_kept},
        {"threshold DP rows cut at an upper bound", test_rows_cut},
    };
    return CUNIT_RUN("solver_dp_rows", tests);
}
