/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The exact stage/mesh search (docs/solver.md has the proof). For a cost
 * threshold t, a DP over states (first layer i, devices d) computes the
 * Pareto frontier of (stages n from i to the end, least sum of stage costs)
 * using only entries with cost <= t: a state with fewer following stages
 * and no larger sum dominates, because the memory rule only gets looser
 * with fewer stages. g(t), the least sum (training) or the least stage
 * count (inference) at threshold t, is non-increasing in t, and every plan
 * P with max stage cost tau has objective >= F(g(tau), tau). A bisection
 * over the sorted distinct stage costs with that bound then visits only the
 * thresholds that can still improve the best plan. Configs of one
 * (i, j, submesh) are reduced beforehand to those not dominated in
 * (cost, max_n_succ_stages).
 */
#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dp_int.h"
#include "solver_int.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Builds the stage options (end descending, submesh ascending, as Alpa's
 * loops visit them) with their undominated configs among those within the
 * apply limit, and the candidates, from pr. */
static int dp_prepare(Dp *dp, const DpPrep *pr)
{
    int L = dp->L, signed_zero = 0;
    size_t n_opts = 0, n_items = 0;

    dp->opts = malloc((pr->n_opts ? pr->n_opts : 1) * sizeof *dp->opts);
    dp->opt_off = malloc((size_t)(L + 1) * sizeof *dp->opt_off);
    dp->items = malloc((pr->n_items ? pr->n_items : 1) * sizeof *dp->items);
    if (!dp->opts || !dp->opt_off || !dp->items)
        return APSOLVE_ENOMEM;
    for (int i = 0; i < L; i++) {
        dp->opt_off[i] = (int)n_opts;
        for (int o = pr->opt_off[i]; o < pr->opt_off[i + 1]; o++) {
            const DpOpt *po = &pr->opts[o];
            int kept = 0, top = -2, any = 0;
            /* Keep an item only if it fits more following stages than
             * every cheaper (or equally cheap, lower-index) item within
             * the limit: the filtered list stays sorted by (cost, config). */
            for (int k = po->item_off; k < po->item_off + po->item_n; k++) {
                if (pr->apply[k] > dp->apply_limit)
                    continue;
                any = 1;
                if (pr->items[k].mnss > top) {
                    DpItem *it = &dp->items[n_items + (size_t)kept++];
                    *it = pr->items[k];
                    it->opt = (int)n_opts;
                    top = pr->items[k].mnss;
                }
            }
            if (!any)
                continue;
            dp->opts[n_opts] = *po;
            dp->opts[n_opts].item_off = (int)n_items;
            dp->opts[n_opts].item_n = kept;
            n_items += (size_t)kept;
            n_opts++;
        }
    }
    dp->opt_off[L] = (int)n_opts;
    dp->cands = malloc((n_items ? n_items : 1) * sizeof *dp->cands);
    if (!dp->cands)
        return APSOLVE_ENOMEM;
    for (size_t k = 0; k < n_items; k++) {
        dp->cands[k] = dp->items[k].cost;
        signed_zero |= signbit(dp->cands[k]) != 0;
        dp->nan_cost |= isnan(dp->cands[k]);
    }
    /* the costs are finite and not negative (apsolve_entry_cost); a -0,
     * which the radix sort would put last, takes qsort */
    if (signed_zero || apsolve_dp_sort_nonneg(dp->cands, n_items) < 0)
        qsort(dp->cands, n_items, sizeof *dp->cands, cmp_double);
    dp->n_cands = 0;
    for (size_t k = 0; k < n_items; k++)
        if (dp->n_cands == 0 || dp->cands[k] != dp->cands[dp->n_cands - 1])
            dp->cands[dp->n_cands++] = dp->cands[k];
    return APSOLVE_OK;
}

int apsolve_dp_tables(Dp *dp)
{
    size_t states = (size_t)(dp->L + 1) * (size_t)(dp->D + 1);
    size_t cells = states * (size_t)dp->NS;
    if (cells / (size_t)dp->NS != states || cells > ((size_t)1 << 31))
        return APSOLVE_ENOMEM;
    dp->val = malloc(cells * sizeof *dp->val);
    dp->front = malloc(cells * sizeof *dp->front);
    dp->front_cnt = calloc(states, sizeof *dp->front_cnt);
    dp->foff = malloc(states * sizeof *dp->foff);
    dp->best = malloc((size_t)dp->NS * sizeof *dp->best);
    dp->rb = malloc(((size_t)dp->D + 1) * (size_t)dp->NS * sizeof *dp->rb);
    dp->pre_chain = malloc((size_t)dp->NS * sizeof *dp->pre_chain);
    dp->chain = malloc((size_t)dp->NS * sizeof *dp->chain);
    dp->path = malloc((size_t)dp->NS * sizeof *dp->path);
    if (!dp->rb || !dp->val || !dp->front || !dp->front_cnt || !dp->foff || !dp->best ||
        !dp->pre_chain || !dp->chain || !dp->path)
        return APSOLVE_ENOMEM;
    /* The end state: layer L reached with every device used, no stage after. */
    {
        dp->front_cnt[(size_t)dp->L * (size_t)(dp->D + 1)] = 1;
        dp->foff[(size_t)dp->L * (size_t)(dp->D + 1)] = 0;
        dp->front[0] = 0;
        dp->val[0] = 0.0;
        dp->pool_top = 1;
    }
    dp->rows_bound = INFINITY; /* no row cut yet (dp_rows.c) */
    return APSOLVE_OK;
}

/* The place of stage count n on state st's frontier (dp_int.h), or -1. */
static int dp_place(const Dp *dp, size_t st, int n)
{
    size_t base = dp->front_cnt[st] ? (size_t)dp->foff[st] : 0;
    for (int e = 0; e < dp->front_cnt[st]; e++)
        if (dp->front[base + (size_t)e] == n)
            return e;
    return -1;
}

/* One threshold DP, g(t) known to be at most bound (+inf: nothing known).
 * Returns the stage count chosen at the top state (0, D) or -1 when no
 * plan has every stage cost <= t. */
static int dp_run(Dp *dp, double t, double bound)
{
    int D = dp->D;
    dp->evals++;
    apsolve_dp_rows_below(dp, t, bound);
    {
        size_t st = (size_t)D, base;
        int cnt = dp->front_cnt[st];
        /* a bound is one: the answer is at most it */
        assert(bound == INFINITY ||
               (cnt > 0 && (dp->exact_n > 0 ? dp_place(dp, st, dp->exact_n) >= 0 &&
                                                  dp->val[(size_t)dp->foff[st] +
                                                          (size_t)dp_place(dp, st, dp->exact_n)] <=
                                                      bound
                                            : dp->val[(size_t)dp->foff[st] + (size_t)cnt - 1] <=
                                                  bound)));
        if (!cnt)
            return -1;
        base = (size_t)dp->foff[st];
        if (dp->exact_n > 0)
            return dp_place(dp, st, dp->exact_n) >= 0 ? dp->exact_n : -1;
        /* Training: least sum = last frontier entry; inference: fewest stages. */
        return dp->front[base + (size_t)(dp->opt->inference ? 0 : cnt - 1)];
    }
}

/* Rebuilds the plan of the last dp_run from the top state with n stages. */
static int dp_extract(Dp *dp, int n, ApsolvePlan **out)
{
    const ApsolveProblem *p = dp->p;
    ApsolvePlan *plan;
    int i = 0, d = dp->D, k;
    assert(n >= 1 && n < dp->NS && out);  /* a stage count dp_run found */
    plan = calloc(1, sizeof *plan);
    if (!plan)
        return APSOLVE_ENOMEM;
    plan->stages = calloc((size_t)n, sizeof *plan->stages);
    if (!plan->stages) {
        free(plan);
        return APSOLVE_ENOMEM;
    }
    plan->n_stages = (size_t)n;
    for (k = 0; k < n; k++) {
        /* n - k is on (i, d)'s frontier; its item found again (dp_rows.c) */
        int q = apsolve_dp_entry_item(dp, i, d, n - k);
        assert(d > 0 && i < dp->L && q >= 0 &&
               dp_place(dp, (size_t)i * (size_t)(dp->D + 1) + (size_t)d, n - k) >= 0);
        const DpItem *it = &dp->items[q];
        const DpOpt *op = &dp->opts[it->opt];
        ApsolveStage *st = &plan->stages[k];
        st->start_layer = i;
        st->end_layer = op->end;
        st->submesh = op->submesh;
        st->config = it->config;
        apsolve_stage_fill(p, dp->opt, st, n - k, n);
        i = op->end + 1;
        d -= op->dev;
        dp->path[k] = it->opt; /* the plan's chain (dp_bound.c) */
    }
    assert(i == dp->L && d == 0);  /* every layer and every device, as the end state says */
    dp->path_n = n;
    plan->micro_batches = dp->opt->micro_batches;
    plan->inference = dp->opt->inference;
    apsolve_plan_price(p, dp->opt, plan);
    *out = plan;
    return APSOLVE_OK;
}

/* F(g, t): a lower bound on the objective of any plan with max stage cost
 * >= t when the primary value (sum or stage count) is >= g. */
static double dp_bound(const Dp *dp, double g, double t)
{
    int v = apsolve_virtual(dp->opt);
    if (dp->opt->inference)
        return g * t;
    /* interleaved ZB and ZBV: every device works B t when one stage
     * costs t, whatever the order; interleaved ZB (exactly exact_n stages,
     * B >= n) is also the interleaved T less at most (n - 1) t / v, a
     * stage's fill being at most its cost */
    if (dp->opt->schedule == APSOLVE_SCHEDULE_ZBV)
        return (double)dp->opt->micro_batches * t;
    if (dp->opt->schedule == APSOLVE_SCHEDULE_INTERLEAVED_ZB) {
        int n = dp->exact_n > 1 ? dp->exact_n : 1;
        double work = (double)dp->opt->micro_batches * t,
               closed = (g + ((double)v * dp->opt->micro_batches - n) * t) / (double)v;
        return closed > work ? closed : work;
    }
    if (v > 1) /* interleaved: the DP at B' = vB, divided by v (schedule.h) */
        return apsolve_schedule_base_time(v, dp->opt->micro_batches, g, t);
    /* ZB-H1 (exactly exact_n stages): 1F1B's T less at most (n - 1) t, a
     * stage's fill being at most its cost (apsolve_schedule_zb_fill) */
    if (dp->opt->schedule == APSOLVE_SCHEDULE_ZB_H1 && dp->exact_n > 1)
        return g + (double)(dp->opt->micro_batches - dp->exact_n) * t;
    /* Alpa's T (schedule.h); t is a finite candidate */
    return apsolve_schedule_base_time(1, dp->opt->micro_batches, g, t);
}

/* Runs the DP at candidate k, keeps the plan if it is the best so far, and
 * returns g(t_k) (+inf when infeasible); *err gets allocation failures.
 * above: g at a candidate below k (+inf: none evaluated), which bounds
 * g(t_k) from above: a DP at a higher threshold admits every item a lower
 * one does (each option's items within t are a prefix of its list), so
 * each stage's first item that fits is the same one or a cheaper one, and
 * every sum (floating-point addition is monotone) is no larger. The
 * inference's g is a stage count, no bound on a sum. */
static double dp_eval(Dp *dp, size_t k, double above, int *err)
{
    ApsolvePlan *plan = NULL;
    int n;
    double g;
    assert(k < dp->n_cands && err);
    /* and the chains known (dp_bound.c) */
    above = dp->opt->inference ? INFINITY : apsolve_dp_upper(dp, dp->cands[k], above);
    n = dp_run(dp, dp->cands[k], above);
    if (n < 0)
        return INFINITY;
    g = dp->opt->inference ? (double)n
                           : dp->val[(size_t)dp->foff[dp->D] +
                                     (size_t)dp_place(dp, (size_t)dp->D, n)];
    if (dp_extract(dp, n, &plan) != APSOLVE_OK) {
        *err = APSOLVE_ENOMEM;
        return g;
    }
    if (!dp->plan || plan->cost < dp->plan_obj ||
        (plan->cost == dp->plan_obj && plan->max_stage_cost < dp->plan_max)) {
        apsolve_plan_free(&dp->plan);
        dp->plan = plan;
        dp->plan_obj = plan->cost;
        dp->plan_max = plan->max_stage_cost;
        memcpy(dp->chain, dp->path, (size_t)n * sizeof *dp->chain);
        dp->chain_n = n;
        if (dp->store) /* for the table's later searches (dp_bound.c) */
            apsolve_dp_chains_put(dp->store, dp, dp->chain, n);
    } else {
        apsolve_plan_free(&plan);
    }
    return g;
}

/* Thresholds of bound f left out: those that cannot beat the best plan,
 * and those above the cut (apsolve_solve_below; its bar +inf: none). */
static int dp_left_out(const Dp *dp, double f)
{
    return f >= dp->plan_obj || f > dp->cut.bar;
}

static int dp_kept(const Dp *dp, double f)
{
    return f < dp->plan_obj && !(f > dp->cut.bar);
}

/* Whether a search told to stop at its first plan below the cut has one. */
static int dp_done(const Dp *dp)
{
    return dp->cut.first && dp->plan && dp->plan->total_cost < dp->cut.bar;
}

/* Candidates strictly between a and b (evaluated, g(a) >= g(b); a may be -1
 * with g = +inf). */
static void dp_search(Dp *dp, long a, double ga, long b, double gb, int *err)
{
    long lo = a + 1, hi = b - 1, mid;
    double gm;
    assert(a >= -1 && a < b && (size_t)b < dp->n_cands && err);  /* b was evaluated */
    if (lo > hi || *err || isinf(gb) || dp_done(dp))
        return;
    if (ga == gb)
        return; /* g constant on [t_a, t_b]: the plan found at t_a wins */
    if (dp_left_out(dp, dp_bound(dp, gb, dp->cands[lo])))
        return;
    /* Only thresholds whose bound can still beat the best plan matter. */
    if (dp_left_out(dp, dp_bound(dp, gb, dp->cands[hi]))) {
        long l = lo, h = hi;
        while (l < h) {
            long m = l + (h - l + 1) / 2;
            if (dp_kept(dp, dp_bound(dp, gb, dp->cands[m])))
                l = m;
            else
                h = m - 1;
        }
        hi = l;
    }
    mid = lo + (hi - lo) / 2;
    gm = dp_eval(dp, (size_t)mid, ga, err);
    dp_search(dp, a, ga, mid, gm, err);
    dp_search(dp, mid, gm, b, gb, err);
}

void apsolve_dp_free(Dp *dp)
{
    free(dp->opts);
    free(dp->opt_off);
    free(dp->items);
    free(dp->live);
    free(dp->live_off);
    free(dp->livebits);
    free(dp->nz);
    free(dp->nz_cnt);
    free(dp->rb);
    free(dp->stamp);
    free(dp->lim);
    free(dp->ncap);
    if (!dp->pre_kept)
        free(dp->pre);
    free(dp->c0);
    free(dp->pre_chain);
    free(dp->chain);
    free(dp->path);
    free(dp->row_top);
    free(dp->cands);
    free(dp->val);
    free(dp->front);
    free(dp->front_cnt);
    free(dp->foff);
    free(dp->best);
    apsolve_plan_free(&dp->plan);
}

/* One exact search: the best plan whose entries have apply_cost <= limit
 * (FULL) under the memory rule for mem_n stages, of exactly exact_n stages
 * when > 0. *evals accumulates the threshold DPs run. cut: +inf, or the
 * thresholds whose bound reaches it are left out after the first
 * (apsolve_solve_below). above: an upper bound on g at the largest
 * candidate (+inf: none; apply_eval's); *g_top gets that g (+inf when
 * infeasible or not run). */
static int solve_core(const ApsolveProblem *p, const ApsolveOptions *opt, const DpPrep *pr,
                      double limit, int mem_n, int exact_n, int dense, DpCut cut,
                      DpLiveKeep *keep, DpChains *store, double above, double *g_top,
                      ApsolvePlan **out, long *evals, long *cands)
{
    Dp dp;
    double ginf;
    int rc, err = 0;

    *out = NULL;
    *g_top = INFINITY;
    memset(&dp, 0, sizeof dp);
    dp.p = p;
    dp.opt = opt;
    dp.L = p->num_layers;
    dp.D = p->num_devices;
    dp.apply_limit = limit;
    dp.mem_n = mem_n;
    dp.exact_n = exact_n;
    dp.dense = dense;
    dp.cut = cut;
    dp.store = store;
    dp.NS = dp.L < dp.D ? dp.L : dp.D;
    if (opt->max_stages > 0 && opt->max_stages < dp.NS)
        dp.NS = opt->max_stages;
    if (exact_n > 0) {
        if (exact_n > dp.NS) {
            rc = APSOLVE_EINFEASIBLE;
            goto cleanup;
        }
        dp.NS = exact_n;
    }
    if (dp.NS > INT16_MAX - 1) {
        rc = APSOLVE_EINVAL;
        goto cleanup;
    }
    dp.NS += 1;
    rc = dp_prepare(&dp, pr);
    if (rc)
        goto cleanup;
    if (dp.n_cands == 0) {
        rc = APSOLVE_EINFEASIBLE;
        goto cleanup;
    }
    /* keep: the live states of the last limit's Dp (dp_rows.c) */
    rc = keep ? apsolve_dp_live_kept(&dp, keep) : apsolve_dp_live(&dp);
    if (!rc)
        rc = apsolve_dp_tables(&dp);
    if (rc)
        goto cleanup;
    if (keep) /* the last limit's least prefixes when they are this one's */
        apsolve_dp_prefix_kept(&dp, keep);
    /* The largest threshold allows every entry: infeasible there means
     * infeasible everywhere, and g there bounds every plan from below. */
    /* apply_eval's bound between limits reads each option's items sorted
     * by cost, which a NaN cost would not be */
    ginf = dp_eval(&dp, dp.n_cands - 1, dp.nan_cost ? INFINITY : above, &err);
    *g_top = dp.nan_cost ? INFINITY : ginf;
    if (!err && !isinf(ginf))
        dp_search(&dp, -1, INFINITY, (long)dp.n_cands - 1, ginf, &err);
    if (err) {
        rc = err;
        goto cleanup;
    }
    if (!dp.plan) {
        rc = APSOLVE_EINFEASIBLE;
        goto cleanup;
    }
    if (cands && (long)dp.n_cands > *cands)
        *cands = (long)dp.n_cands;
    *out = dp.plan;
    dp.plan = NULL;
    rc = APSOLVE_OK;
cleanup:
    *evals += dp.evals;
    if (keep)
        apsolve_dp_prefix_keep(&dp, keep);
    apsolve_dp_free(&dp);
    return rc;
}

/* The search over apply_cost limits of the full objective (docs/solver.md
 * "Objectives"): T_a, the optimum over entries with apply <= a, is
 * non-increasing in a, and a plan whose largest apply is a costs at least
 * T_a + a; the plan found at a costs at most T_a + a. */
typedef struct ApplySearch {
    const ApsolveProblem *p;
    const ApsolveOptions *opt;
    const DpPrep *prep;
    int mem_n, exact_n, dense;
    DpCut cut;                        /* apsolve_solve_below's, else bar +inf */
    const double *vals;
    size_t n_vals;
    ApsolvePlan *best;
    long evals, cands;
    int err;
    DpLiveKeep keep;                  /* the live states of its last Dp */
    DpChains *store;                  /* the table's plans' chains */
} ApplySearch;

static void apply_keep(ApplySearch *as, ApsolvePlan *pl)
{
    if (!as->best || pl->total_cost < as->best->total_cost ||
        (pl->total_cost == as->best->total_cost && pl->cost < as->best->cost)) {
        apsolve_plan_free(&as->best);
        as->best = pl;
    } else {
        apsolve_plan_free(&pl);
    }
}

/* T at limit vals[k] (+inf when infeasible); keeps the plan. above: g at
 * the largest candidate of a lower limit (+inf: none evaluated), *g_top
 * this limit's. above bounds this limit's g there from above: at its
 * largest candidate each DP admits all its items; this limit's entries
 * are a superset of the lower one's, and an option's first item that fits
 * a count (dp_prepare's list, a subsequence sorted by (cost, config)
 * holding the first entry of each larger bound: the cheapest of its
 * entries that fits) is no dearer; an option of the lower limit's is one
 * of this limit's (of the same rows, ends and devices), so each state's
 * fewest stages from the top are no more and its stage cap (dp_rows.c,
 * dp_stage_caps) no lower: every chain the lower DP holds, this one
 * holds, at no larger sum (solve_core passes neither way when a cost is
 * NaN, which no sort orders). */
static double apply_eval(ApplySearch *as, size_t k, double above, double *g_top)
{
    ApsolvePlan *pl = NULL;
    double t;
    int rc;
    assert(k < as->n_vals);
    rc = solve_core(as->p, as->opt, as->prep, as->vals[k], as->mem_n, as->exact_n, as->dense,
                    as->cut, &as->keep, as->store, above, g_top, &pl, &as->evals,
                    &as->cands);
    if (rc == APSOLVE_EINFEASIBLE)
        return INFINITY;
    if (rc) {
        as->err = rc;
        return INFINITY;
    }
    t = pl->cost;
    apply_keep(as, pl);
    return t;
}

/* ga: g at the largest candidate of limit a (+inf: a = -1). */
static void apply_search(ApplySearch *as, long a, double ta, double ga, long b, double tb)
{
    long lo = a + 1, hi = b - 1, mid;
    double tm, gm, top, bar = as->cut.bar;
    assert(a >= -1 && a < b && (size_t)b < as->n_vals);  /* b was evaluated */
    if (lo > hi || as->err || isinf(tb) || ta == tb || !as->best ||
        (as->cut.first && as->best->total_cost < bar))
        return;
    /* limits whose plans cannot beat the best, nor be at or below the cut
     * (apsolve_solve_below; bar +inf: none) */
    top = as->best->total_cost;
    if (tb + as->vals[lo] >= top || tb + as->vals[lo] > bar)
        return;
    if (tb + as->vals[hi] >= top || tb + as->vals[hi] > bar) {
        long l = lo, h = hi;
        while (l < h) {
            long m = l + (h - l + 1) / 2;
            if (tb + as->vals[m] < top && !(tb + as->vals[m] > bar))
                l = m;
            else
                h = m - 1;
        }
        hi = l;
    }
    mid = lo + (hi - lo) / 2;
    tm = apply_eval(as, (size_t)mid, ga, &gm);
    apply_search(as, a, ta, ga, mid, tm);
    apply_search(as, mid, tm, gm, b, tb);
}

/* The optimum for one memory-rule stage count (and exact count), over
 * apply limits (vals, n_vals: apsolve_dp_apply_limits) when the objective
 * is FULL; its options in sh->prep. */
int apsolve_dp_solve_apply(const ApsolveProblem *p, const ApsolveOptions *opt,
                           ApsolveDpShared *sh, DpFamily *fam, const double *vals,
                           size_t n_vals, int mem_n, int exact_n, int dense, DpCut cut,
                           unsigned long run, ApsolvePlan **out, long *evals, long *cands)
{
    ApplySearch as;
    DpPrep *prep = &sh->prep; /* its buffers kept in sh for the next n */
    double top, g_top;
    int rc;

    if (!run && !fam) { /* dp_int.h, ApsolveDpShared.plain */
        prep = &sh->plain;
        if (!sh->plain_ok || sh->plain_n != mem_n ||
            memcmp(&sh->plain_opt, opt, sizeof *opt) != 0) {
            sh->plain_ok = 0;
            if ((rc = apsolve_dp_prep_build(prep, sh, NULL, p, opt, mem_n)) != APSOLVE_OK)
                return rc;
            memcpy(&sh->plain_opt, opt, sizeof *opt);
            sh->plain_n = mem_n;
            sh->plain_ok = 1;
            sh->plain_builds++;
        }
    } else if (!run || sh->prep_id != run || sh->prep_n != mem_n) {
        sh->prep_id = 0; /* no one's while it is built */
        if ((rc = apsolve_dp_prep_build(prep, sh, fam, p, opt, mem_n)) != APSOLVE_OK)
            return rc;
        sh->prep_id = run;
        sh->prep_n = mem_n;
    }
    if (opt->objective != APSOLVE_OBJECTIVE_FULL || opt->inference)
        return solve_core(p, opt, prep, INFINITY, mem_n, exact_n, dense, cut, NULL, &sh->chains,
                          INFINITY, &g_top, out, evals, cands);
    memset(&as, 0, sizeof as);
    as.p = p;
    as.opt = opt;
    as.prep = prep;
    as.mem_n = mem_n;
    as.exact_n = exact_n;
    as.dense = dense;
    as.cut = cut;
    as.store = &sh->chains;
    as.vals = vals;
    as.n_vals = n_vals;
    if (as.n_vals == 0)
        return APSOLVE_EINFEASIBLE;
    top = apply_eval(&as, as.n_vals - 1, INFINITY, &g_top);
    if (!as.err && !isinf(top))
        apply_search(&as, -1, INFINITY, INFINITY, (long)as.n_vals - 1, top);
    apsolve_dp_live_keep_free(&as.keep);
    *evals += as.evals;
    if (as.cands > *cands)
        *cands = as.cands;
    rc = as.err ? as.err : as.best ? APSOLVE_OK : APSOLVE_EINFEASIBLE;
    if (rc == APSOLVE_OK)
        *out = as.best;
    else
        apsolve_plan_free(&as.best);
    return rc;
}

/* The stage counts a per-n search tries (solve_all): 1..nmax that the
 * schedule allows; their number. */
int apsolve_dp_valid_counts(const ApsolveProblem *p, const ApsolveOptions *opt, int v, int *ns)
{
    int nmax = p->num_layers < p->num_devices ? p->num_layers : p->num_devices, count = 0;
    if (opt->max_stages > 0 && opt->max_stages < nmax)
        nmax = opt->max_stages;
    for (int n = 1; n <= nmax; n++)
        if (apsolve_schedule_valid((ApsolveSchedule)opt->schedule, v, opt->micro_batches, n,
                                   NULL, 0))
            ns[count++] = n;
    return count;
}

/* The checks, table and apply limits of a search (solve_all, dp_counts.c). */
int apsolve_dp_solve_setup(const ApsolveProblem *p, const ApsolveOptions *opt,
                           ApsolveDpShared *sh, const double **vals, size_t *n_vals)
{
    int rc;
    if (!p || !opt || !sh || opt->micro_batches < 1 || p->num_layers < 1 ||
        p->num_layers > APSOLVE_MAX_LAYERS || p->num_devices < 1 ||
        p->num_devices > APSOLVE_MAX_DEVICES || opt->max_stages < 0 || !p->apply_cost ||
        opt->schedule < 0 || opt->schedule >= APSOLVE_SCHEDULE_COUNT)
        return APSOLVE_EINVAL;
    if ((rc = apsolve_dp_shared_ready(sh, p, opt)) != APSOLVE_OK)
        return rc;
    if (opt->objective == APSOLVE_OBJECTIVE_FULL && !opt->inference &&
        (rc = apsolve_dp_apply_limits(sh, p, opt, vals, n_vals)) != APSOLVE_OK)
        return rc;
    return APSOLVE_OK;
}

int apsolve_solve_by_count(const ApsolveOptions *opt)
{
    return (apsolve_virtual(opt) > 1 || opt->schedule == APSOLVE_SCHEDULE_ZB_H1 ||
            opt->schedule == APSOLVE_SCHEDULE_INTERLEAVED_ZB) && !opt->inference;
}

/* skip: NULL, or per stage count n (indices 0 .. most stages) nonzero when
 * the exact-count searches leave n out (apsolve_solve_shared_skip); cut:
 * +inf, or apsolve_solve_below's bar. */
static int solve_all(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolveDpShared *sh,
                     const unsigned char *skip, int dense, DpCut cut, ApsolvePlan **out)
{
    double t0 = costdb_monotonic_seconds();
    ApsolvePlan *best = NULL;
    long evals = 0, cands = 0;
    int rc = APSOLVE_EINFEASIBLE, v;
    const double *vals = NULL;
    size_t n_vals = 0;

    if (!out)
        return APSOLVE_EINVAL;
    if ((rc = apsolve_dp_solve_setup(p, opt, sh, &vals, &n_vals)) != APSOLVE_OK) {
        if (rc != APSOLVE_EINVAL)
            *out = NULL;
        return rc;
    }
    *out = NULL;
    v = apsolve_virtual(opt);
    if (apsolve_solve_by_count(opt)) {
        /* Interleaved: the in-flight count depends on the stage count n, and
         * n must divide B; one exact-count search per valid n, each with
         * the memory rule of n stages. ZB-H1 likewise (min(B, n) on every
         * stage, B >= n), and its saving, (n - 1) x the least fill, is
         * outside the DP's sum: each n's candidates are priced as plans
         * (docs/solver.md, "Schedules"); interleaved ZB and ZBV, whose
         * in-flight counts depend on n too, the same way. The memory
         * bounds of every n come from one family (dp_prep.c). */
        int ns[APSOLVE_MAX_LAYERS], count = apsolve_dp_valid_counts(p, opt, v, ns);
        DpFamily fam;
        if (skip) { /* the family over the counts searched alone */
            int kept = 0;
            for (int q = 0; q < count; q++)
                if (!skip[ns[q]])
                    ns[kept++] = ns[q];
            count = kept;
        }
        if ((rc = apsolve_dp_family_init(&fam, sh, p, opt, ns, count)) != APSOLVE_OK)
            return rc;
        for (int q = 0; q < count; q++) {
            ApsolvePlan *pl = NULL;
            int e = apsolve_dp_solve_apply(p, opt, sh, &fam, vals, n_vals, ns[q], ns[q], dense,
                                           cut, 0, &pl, &evals, &cands);
            if (e == APSOLVE_EINFEASIBLE)
                continue;
            if (e) {
                apsolve_plan_free(&best);
                apsolve_dp_family_free(&fam);
                return e;
            }
            if (!best || pl->total_cost < best->total_cost ||
                (pl->total_cost == best->total_cost && pl->cost < best->cost)) {
                apsolve_plan_free(&best);
                best = pl;
            } else {
                apsolve_plan_free(&pl);
            }
            if (cut.first && best->total_cost < cut.bar)
                break;
        }
        apsolve_dp_family_free(&fam);
        rc = best ? APSOLVE_OK : APSOLVE_EINFEASIBLE;
    } else {
        rc = apsolve_dp_solve_apply(p, opt, sh, NULL, vals, n_vals, p->num_layers, 0, dense, cut, 0,
                                    &best, &evals, &cands);
    }
    if (rc)
        return rc;
    best->dp_evaluations = evals;
    best->candidates = cands;
    best->solve_seconds = costdb_monotonic_seconds() - t0;
    *out = best;
    return APSOLVE_OK;
}

/* apsolve_solve's: nothing left out. */
static const DpCut no_cut = {INFINITY, 0};

/* A search with a table of its own (solve_all). */
static int solve_alone(const ApsolveProblem *p, const ApsolveOptions *opt, int dense,
                       DpCut cut, ApsolvePlan **out)
{
    ApsolveDpShared *sh = apsolve_dp_shared_new();
    int rc = sh ? solve_all(p, opt, sh, NULL, dense, cut, out) : APSOLVE_ENOMEM;
    apsolve_dp_shared_free(sh);
    return rc;
}

int apsolve_solve(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolvePlan **out)
{
    return solve_alone(p, opt, 0, no_cut, out);
}

int apsolve_solve_below_kept(const ApsolveProblem *p, const ApsolveOptions *opt,
                             ApsolveDpShared *sh, double bar, int first, ApsolvePlan **out)
{
    DpCut cut = {bar, first};
    int whole;
    if (isnan(bar) || !sh)
        return APSOLVE_EINVAL;
    /* a table of the ranges the options let a stage hold: only its counts
     * and the apply limits it tries (which still hold every usable
     * entry's) differ from a whole table's. Every range where the options
     * split a stage into no chunks (apsolve_chunks_whole: 1F1B, GPipe), so
     * the whole table, which any search of p under the same objective
     * reads (dp_prep.c, apsolve_dp_shared_ready) */
    whole = bar < INFINITY && opt->whole_chunks && apsolve_virtual(opt) > 1;
    if (!sh->built)
        sh->whole_only = whole;
    else if (sh->whole_only != whole) /* the other kind: a table of its own */
        return apsolve_solve_below(p, opt, bar, first, out);
    return solve_all(p, opt, sh, NULL, 0, cut, out);
}

int apsolve_solve_below(const ApsolveProblem *p, const ApsolveOptions *opt, double bar,
                        int first, ApsolvePlan **out)
{
    ApsolveDpShared *sh;
    int rc;
    if (isnan(bar))
        return APSOLVE_EINVAL;
    if (!(sh = apsolve_dp_shared_new())) /* a table of its own */
        return APSOLVE_ENOMEM;
    rc = apsolve_solve_below_kept(p, opt, sh, bar, first, out);
    apsolve_dp_shared_free(sh);
    return rc;
}

int apsolve_solve_shared(const ApsolveProblem *p, const ApsolveOptions *opt,
                         ApsolveDpShared *sh, ApsolvePlan **out)
{
    return sh ? solve_all(p, opt, sh, NULL, 0, no_cut, out)
              : solve_alone(p, opt, 0, no_cut, out);
}

int apsolve_solve_shared_skip(const ApsolveProblem *p, const ApsolveOptions *opt,
                              ApsolveDpShared *sh, const unsigned char *skip, ApsolvePlan **out)
{
    return sh ? solve_all(p, opt, sh, skip, 0, no_cut, out) : APSOLVE_EINVAL;
}

int apsolve_solve_shared_below(const ApsolveProblem *p, const ApsolveOptions *opt,
                               ApsolveDpShared *sh, const unsigned char *skip, double bar,
                               ApsolvePlan **out)
{
    DpCut cut = {bar, 1};
    if (isnan(bar))
        return APSOLVE_EINVAL;
    return sh ? solve_all(p, opt, sh, skip, 0, cut, out) : APSOLVE_EINVAL;
}

int apsolve_solve_dense(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolvePlan **out)
{
    return solve_alone(p, opt, 1, no_cut, out);
}
