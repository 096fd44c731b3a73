/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Context parallelism in the auto search (session_int.h, docs/solver.md
 * "Context parallelism in the auto search"): beside the plan the search
 * found without it, for each cp in {2, 4, ..} dividing a host's GPUs and
 * each micro-batch size m with a sweep that cp divides, the best plan the
 * DP finds on that sweep's problem with every entry made the cp stage of
 * its own layout (apsolve_cp_problem_auto: the same devices run as data
 * parallelism dp x cp, compute and saved activations / cp, the ring's
 * communication and buffers added), run with micro-batches of m / cp
 * samples, cp times as many. The best of them replaces the plain plan only
 * when it is better by the search's own comparison (the headroom kept
 * first, then the objective), so a plan cp does not improve stays exactly
 * what it was. Models with no attention, --inference and --batch runs, and
 * runs with a --parallel layout (whose auto plan is a comparison) try no cp.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb.h"
#include "plural.h"
#include "session.h"
#include "session_int.h"

typedef struct Tried {
    int cp;
    int64_t m;
    int64_t sweep;
    int B, headroom, feasible;
    double total;                     /* the plan's objective, or the pruning bound's */
} Tried;

static int better_cp(const ApsolvePlan *x, int xh, const ApsolvePlan *y, int yh)
{
    if (!y)
        return 1;
    if (xh != yh)
        return xh > yh;
    return x->total_cost < y->total_cost ||
           (x->total_cost == y->total_cost && x->cost < y->cost);
}

/* One solve of problem p under c's options (the headroom kept where a
 * plan keeps it); *pl the plan or NULL, *headroom whether it keeps it. */
static int solve_one(const ApsolveProblem *p, ApsolveOptions *o, ApsolvePlan **pl,
                     int *headroom)
{
    int e = apsolve_solve_keep_headroom(p, o, pl);
    *headroom = o->search_headroom;
    if (e == APSOLVE_EINFEASIBLE || (e == 0 && !(*pl)->feasible)) {
        apsolve_plan_free(pl);
        return 0;
    }
    return e;
}

/* Solves candidate c's cp problem as plans of one layout: Megatron-Core and
 * torchtitan run one tp x cp x dp grid on every pipeline stage, so for
 * each submesh and logical mesh (dp cp, tp) in turn every other entry is
 * left out and the DP finds the best pipeline of that layout; *pl the best
 * of them (by the search's rule) or NULL, *headroom whether it keeps the
 * headroom. 0, or 1 after a message. */
static int solve_cp(ApsolveRun *r, ApsolveCand *c, int cp, const ApsolvePlan *bar, int bar_h,
                    ApsolvePlan **pl, int *headroom, double *bound)
{
    const ApsolveRequest *a = r->a;
    const ApsolveProblem *p = c->p;
    ApsolvePlan *any = NULL;
    ApsolveOptions ao;
    int best_h = 0, any_h = 0, e;
    *pl = NULL;
    *headroom = 0;
    c->opt.schedule = a->schedule;
    c->opt.virtual_stages = a->virtual_stages;
    /* the best plan of any layouts bounds every plan of one layout: where
     * it does not beat the plan to beat (bar), none of them does */
    ao = c->opt;
    if ((e = solve_one(p, &ao, &any, &any_h)) != 0)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "solving sweep %lld with cp: %s",
                            (long long)c->sweep, apsolve_strerror(e));
    if (!any || !better_cp(any, any_h, bar, bar_h)) {
        /* -1: pruned, with the bound's objective */
        if (any) {
            *headroom = -1;
            c->opt.search_headroom = any_h;
            *bound = any->total_cost;
        }
        apsolve_plan_free(&any);
        return 0;
    }
    apsolve_plan_free(&any);
    for (int s = 0; s < p->num_submeshes; s++)
        for (int k = 0; k < p->num_configs; k++) {
            const ApsolveConfig *ck = &p->configs[(size_t)s * p->num_configs + k];
            ApsolveProblem *q = NULL;
            ApsolvePlan *one = NULL;
            ApsolveOptions o = c->opt;
            int seen = 0, h = 0;
            if (!ck->valid || ck->force_batch_dim != 0 || ck->logical_a % cp)
                continue;
            for (int j = 0; j < k && !seen; j++) {
                const ApsolveConfig *cj = &p->configs[(size_t)s * p->num_configs + j];
                seen = cj->valid && cj->force_batch_dim == 0 && cj->logical_a == ck->logical_a &&
                       cj->logical_b == ck->logical_b;
            }
            if (seen)
                continue;
            /* a layout whose every entry is left out (dominated by the
             * plain search's twin, or not profiled) has no plan */
            for (int i = 0; i < p->num_layers && !seen; i++)
                for (int j = i; j < p->num_layers && !seen; j++)
                    for (int u = 0; u < p->num_configs && !seen; u++) {
                        const ApsolveConfig *cu = &p->configs[(size_t)s * p->num_configs + u];
                        seen = cu->valid && cu->logical_a == ck->logical_a && cu->logical_b == ck->logical_b &&
                               cu->force_batch_dim == 0 &&
                               isfinite(p->cost[apsolve_index(p, i, j, s, u)]);
                    }
            if (!seen)
                continue;
            if (apsolve_problem_clone(p, &q) != APSOLVE_OK) {
                apsolve_plan_free(pl);
                return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
            }
            for (int i = 0; i < q->num_layers; i++)
                for (int j = i; j < q->num_layers; j++)
                    for (int t = 0; t < q->num_submeshes; t++)
                        for (int u = 0; u < q->num_configs; u++) {
                            const ApsolveConfig *cu = &q->configs[(size_t)t * q->num_configs + u];
                            size_t idx = apsolve_index(q, i, j, t, u);
                            if (t == s && cu->logical_a == ck->logical_a &&
                                cu->logical_b == ck->logical_b && cu->force_batch_dim == 0)
                                continue;
                            q->cost[idx] = INFINITY;
                            if (q->fwd_cost && q->bwd_cost)
                                q->fwd_cost[idx] = q->bwd_cost[idx] = INFINITY;
                        }
            e = solve_one(q, &o, &one, &h);
            apsolve_problem_free(&q);
            if (e) {
                apsolve_plan_free(pl);
                return apsolve_fail(a, APSOLVE_ERROR_FAILED, "solving sweep %lld with cp: %s",
                                    (long long)c->sweep, apsolve_strerror(e));
            }
            /* and of equal stages: Megatron-LM runs num_layers / pp layers
             * on each, and a launch file of uneven stages is a closest plan
             * that does not carry cp through (reports/launch.c) */
            for (size_t t = 1; one && t < one->n_stages; t++)
                if (one->stages[t].end_layer - one->stages[t].start_layer !=
                    one->stages[0].end_layer - one->stages[0].start_layer)
                    apsolve_plan_free(&one);
            if (one && better_cp(one, h, *pl, best_h)) {
                apsolve_plan_free(pl);
                *pl = one;
                best_h = h;
                c->opt.search_headroom = h;
            } else {
                apsolve_plan_free(&one);
            }
        }
    *headroom = best_h;
    return 0;
}

int apsolve_run_auto_cp(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    Tried tried[64];
    int64_t family[64];
    size_t nt = 0, nfamily = 0;
    ApsolvePlan *best = NULL;
    ApsolveCand bestc;
    int best_h = 0, gph = r->main_c.p->cluster_gpus, cps[16], ncp = 0;
    int64_t asked = a->micro_batch_size > 0 || a->micro_batches > 0 ||
                            (a->sweep > 0 && a->global_batch <= 0)
                        ? r->micro : 0;
    /* the plain search's winner: auto_c holds its options either way */
    int plain_h = s->autop ? r->auto_c.opt.search_headroom : 0;
    if (a->parallel || a->opt.inference || a->batch > 0)
        return 0;
    memset(&bestc, 0, sizeof bestc);
    for (int cp = 2; cp <= gph && gph % cp == 0 && ncp < 16; cp *= 2)
        cps[ncp++] = cp;
    /* the micro-batch sizes the plain search could use */
    for (size_t k = 0; k < r->nbs && nfamily < 64; k++) {
        int64_t m = r->bs[k].micro_batch_size;
        if ((asked <= 0 || m == asked) && m > 0 && r->G > 0 && r->G % m == 0)
            family[nfamily++] = m;
    }
    if (!r->nbs)
        family[nfamily++] = r->micro;
    for (size_t k = 0; ncp && (k < r->nbs || (r->nbs == 0 && k == 0)); k++) {
        int64_t m = r->nbs ? r->bs[k].micro_batch_size : r->micro;
        int own = r->nbs == 0 || r->bs[k].sweep_id == r->main_c.sweep;
        ApsolveCand base;
        ApsolveProblem *q[16];
        int64_t seq = 0;
        int attention = 0, rc;
        char why[400] = "";
        if (asked > 0 && m != asked)
            continue;
        if (!own && (r->G <= 0 || m <= 0 || r->G % m || a->micro_batches > 0 ||
                     r->G / m > COSTDB_MAX_MICRO_BATCHES))
            continue;
        if (m <= 0 || m % 2)
            continue;
        if (own) {
            base = r->main_c;
        } else {
            if (apsolve_cand_load(r->db, a, r->bs[k].sweep_id, r->G, m, (int)(r->G / m), &base))
                goto fail;
            base.opt.objective = a->opt.objective;
        }
        rc = apsolve_cp_problem_auto(r->db, base.sweep, base.p, m, family, nfamily, cps, ncp, q,
                                     &seq, &attention, why, sizeof why);
        if (rc == APSOLVE_ENOMEM) {
            if (!own)
                apsolve_cand_free(&base);
            apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
            goto fail;
        }
        /* placements or hardware that cannot price the cp communication,
         * or no attention to split: no cp candidates */
        if (rc || !attention || seq <= 0) {
            for (int i = 0; i < ncp; i++)
                apsolve_problem_free(&q[i]);
            if (!own)
                apsolve_cand_free(&base);
            goto done;
        }
        for (int i = 0; i < ncp; i++) {
            ApsolveCand c = base;
            ApsolvePlan *pl = NULL;
            int cp = cps[i], h = 0;
            double bound = INFINITY;
            c.p = q[i];
            q[i] = NULL;
            /* Megatron's validate_args: the sequence in 2 cp chunks; the
             * micro-batch split into dp x cp replicas */
            if (seq % (2 * cp) || m % cp ||
                (int64_t)base.opt.micro_batches * cp > COSTDB_MAX_MICRO_BATCHES) {
                apsolve_cand_free(&c);
                continue;
            }
            c.opt.micro_batches = base.opt.micro_batches * cp;
            c.micro = m / cp;
            if (solve_cp(r, &c, cp, best ? best : s->autop, best ? best_h : plain_h, &pl, &h, &bound)) {
                apsolve_cand_free(&c);
                for (int j = i + 1; j < ncp; j++)
                    apsolve_problem_free(&q[j]);
                if (!own)
                    apsolve_cand_free(&base);
                goto fail;
            }
            if (pl)
                pl->cp = cp;
            if (nt < sizeof tried / sizeof *tried)
                tried[nt++] = (Tried){cp, m, c.sweep, c.opt.micro_batches, h,
                                      pl ? 1 : h < 0 ? -1 : 0, pl ? pl->total_cost : bound};
            if (pl && better_cp(pl, h, best, best_h)) {
                apsolve_plan_free(&best);
                if (bestc.p)
                    apsolve_cand_free(&bestc);
                best = pl;
                best_h = h;
                bestc = c;
            } else {
                apsolve_plan_free(&pl);
                apsolve_cand_free(&c);
            }
        }
        if (!own)
            apsolve_cand_free(&base);
    }
done:
    if (!best)
        return 0;
    if (!better_cp(best, best_h, s->autop, plain_h)) {
        apsolve_plan_free(&best);
        apsolve_cand_free(&bestc);
        return 0;
    }
    /* cp pays: say what was tried, then take its plan as the auto plan */
    if (!a->quiet) {
        for (size_t i = 0; i < nt; i++) {
            if (tried[i].feasible < 0)
                apsolve_say(a, "context parallelism cp=%d on micro-batch size %lld (sweep %lld, "
                            "%d %s of %lld): its best plan of any layouts (objective "
                            "%.6g s) does not beat the best so far, so none of one layout does",
                            tried[i].cp, (long long)tried[i].m, (long long)tried[i].sweep,
                            tried[i].B, costdb_plural(tried[i].B, "micro-batch", "micro-batches"), (long long)(tried[i].m / tried[i].cp), tried[i].total);
            else if (!tried[i].feasible)
                apsolve_say(a, "context parallelism cp=%d on micro-batch size %lld (sweep %lld, "
                            "%d %s of %lld): infeasible", tried[i].cp,
                            (long long)tried[i].m, (long long)tried[i].sweep, tried[i].B,
                            costdb_plural(tried[i].B, "micro-batch", "micro-batches"),
                            (long long)(tried[i].m / tried[i].cp));
            else
                apsolve_say(a, "context parallelism cp=%d on micro-batch size %lld (sweep %lld, "
                            "%d %s of %lld): objective %.6g s%s", tried[i].cp,
                            (long long)tried[i].m, (long long)tried[i].sweep, tried[i].B,
                            costdb_plural(tried[i].B, "micro-batch", "micro-batches"),
                            (long long)(tried[i].m / tried[i].cp), tried[i].total,
                            tried[i].headroom ? "" : " (without the headroom)");
        }
        if (s->autop)
            apsolve_say(a, "context parallelism cp=%d wins: objective %.6g s against %.6g s for "
                        "the best plan without cp%s", best->cp, best->total_cost,
                        s->autop->total_cost,
                        best_h > plain_h ? " (and it keeps the memory headroom, which that "
                                           "plan does not)" : "");
        else
            apsolve_say(a, "context parallelism: no plan without cp fits; the cp plan does "
                        "(objective %.6g s)", best->total_cost);
    }
    apsolve_plan_free(&s->autop);
    s->autop = best;
    apsolve_plan_batch(s->autop, &bestc);
    if (r->have_auto_c)
        apsolve_cand_free(&r->auto_c);
    bestc.opt.schedule = best->schedule;
    bestc.opt.virtual_stages = best->virtual_stages;
    r->have_auto_c = 1;
    r->auto_c = bestc;
    return 0;
fail:
    apsolve_plan_free(&best);
    if (bestc.p)
        apsolve_cand_free(&bestc);
    return 1;
}
