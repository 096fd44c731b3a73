/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Context parallelism in the auto search (session_int.h, docs/solver.md
 * "Context parallelism in the auto search"): beside the plan the search
 * found without it, for each cp in {2, 4, ..} dividing a host's GPUs (a
 * scale-up domain's of several hosts: apsolve_cp_fast_gpus) and
 * each micro-batch size m with a sweep that cp divides, the best plan the
 * DP finds on that sweep's problem with every entry made the cp stage of
 * its own layout (apsolve_cp_problem_auto: the same devices run as data
 * parallelism dp x cp, compute and saved activations / cp, the
 * communication and buffers of the ring or of the K/V all-gather
 * (all_gather), or of a2a and a2a+p2p where the sweep records the heads and
 * their check passes), run with micro-batches of m / cp
 * samples, cp times as many. The best of them replaces the plain plan only
 * when it is better by the search's own comparison (the headroom kept
 * first, then the objective), so a plan cp does not improve stays exactly
 * what it was. Models with no attention, --inference and --batch runs, and
 * runs with a --parallel layout (whose auto plan is a comparison) try no cp.
 * Expert parallelism (session_autoep.c) is tried in the same loop, on the
 * plain sweep at each micro-batch size and on each cp candidate, and its
 * plans compete by the same rule. Both price a stage from an entry the
 * sweep judged out of memory, with the time it kept, as --parallel does
 * (apsolve_unfit_open, session_twin.c; here restored in place and put
 * back: unfit_in_place.h): a run that needs cp or ep to fit is found.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb.h"
#include "expert_parallel.h"
#include "plural.h"
#include "problem_subset.h"
#include "session_cpspec.h"
#include "session.h"
#include "session_int.h"
#include "unfit_in_place.h"

int apsolve_auto_better(const ApsolvePlan *x, int xh, const ApsolvePlan *y, int yh)
{
    if (!y)
        return 1;
    if (xh != yh)
        return xh > yh;
    return x->total_cost < y->total_cost ||
           (x->total_cost == y->total_cost && x->cost < y->cost);
}

/* One solve of problem p under c's options (the headroom kept where a
 * plan keeps it); *pl the plan or NULL, *headroom whether it keeps it.
 * With bar (r->step_cut), the search leaves out what cannot beat it
 * (apsolve_solve_to_beat; *exact 0 when the plan is not the whole
 * search's, which then does not beat bar either). */
static int solve_one(const ApsolveProblem *p, ApsolveOptions *o, const ApsolvePlan *bar,
                     int bar_h, ApsolvePlan **pl, int *headroom, int *exact)
{
    int e;
    *exact = 1;
    e = bar ? apsolve_solve_to_beat(p, o, bar, bar_h, 1, pl, exact)
            : apsolve_solve_keep_headroom(p, o, pl);
    *headroom = o->search_headroom;
    if (e == APSOLVE_EINFEASIBLE || (e == 0 && !(*pl)->feasible)) {
        apsolve_plan_free(pl);
        return 0;
    }
    return e;
}

/* Whether plan pl's stages hold equal numbers of layers. */
static int equal_stages(const ApsolvePlan *pl)
{
    for (size_t t = 1; t < pl->n_stages; t++)
        if (pl->stages[t].end_layer - pl->stages[t].start_layer !=
            pl->stages[0].end_layer - pl->stages[0].start_layer)
            return 0;
    return 1;
}

/* The best plan of q of equal stages (solve_one's *pl, *headroom), under
 * the options o0: the DP's best of all plans when its stages are equal
 * (the best of a set that lies in the subset is the subset's best), else
 * the best (apsolve_auto_better) over each stage length k dividing the
 * layers of the DP on a copy of q with every range of another length
 * +inf. Dropping the DP's uneven best instead, as the search first did,
 * lost the layout's even plans with it: a budget that let an uneven plan
 * fit could give a worse auto plan than a smaller one (the search not
 * monotone in the budget; docs/solver.md, "Equal stages in the auto
 * search's cp and ep steps"). 0 or an APSOLVE_E* code. */
static int solve_equal(const ApsolveProblem *q, const ApsolveOptions *o0, ApsolvePlan **pl,
                       int *headroom)
{
    ApsolveOptions o = *o0;
    int L = q->num_layers, e, exact;
    *pl = NULL;
    *headroom = 0;
    if ((e = solve_one(q, &o, NULL, 0, pl, headroom, &exact)) != 0 || !*pl || equal_stages(*pl))
        return e;
    apsolve_plan_free(pl);
    *headroom = 0;
    for (int k = 1; k <= L; k++) {
        ApsolveProblem *x = NULL;
        ApsolvePlan *one = NULL;
        int h = 0;
        if (L % k)
            continue;
        if (apsolve_problem_clone(q, &x) != APSOLVE_OK) {
            apsolve_plan_free(pl);
            return APSOLVE_ENOMEM;
        }
        for (int i = 0; i < L; i++)
            for (int j = i; j < L; j++)
                for (int s = 0; j - i + 1 != k && s < x->num_submeshes; s++)
                    for (int c = 0; c < x->num_configs; c++) {
                        size_t idx = apsolve_index(x, i, j, s, c);
                        x->cost[idx] = INFINITY;
                        apsolve_times_drop(x, idx);
                    }
        o = *o0;
        e = solve_one(x, &o, NULL, 0, &one, &h, &exact);
        apsolve_problem_free(&x);
        if (e) {
            apsolve_plan_free(pl);
            return e;
        }
        if (one && apsolve_auto_better(one, h, *pl, *headroom)) {
            apsolve_plan_free(pl);
            *pl = one;
            *headroom = h;
        } else {
            apsolve_plan_free(&one);
        }
    }
    return 0;
}

int apsolve_layout_stages_open(const ApsolveProblem *p, int s, int max_stages)
{
    /* the DP's plans use every device (dp.c, dp_extract: its end state
     * has no device left), and a plan of one layout puts every stage on
     * submesh s: n = D / d stages, as many as the DP allows (a stage holds
     * a layer at least, at most max_stages), each of L / n layers */
    int64_t d = (int64_t)p->submeshes[s].hosts * p->submeshes[s].gpus, n;
    if (d < 1 || p->num_devices % d)
        return 0;
    n = p->num_devices / d;
    return n <= p->num_layers && p->num_layers % n == 0 && (max_stages <= 0 || n <= max_stages);
}

/* Solves candidate c's problem (cp or ep stages) as plans of one layout:
 * Megatron-Core and torchtitan run one tp x cp x dp grid on every pipeline
 * stage, so for each submesh and logical mesh (dp cp, tp) in turn every
 * other entry is left out and the DP finds the best pipeline of that
 * layout (session_int.h). */
int apsolve_auto_layouts(ApsolveRun *r, ApsolveCand *c, int cp, const char *what,
                         const ApsolvePlan *bar, int bar_h, ApsolvePlan **pl, int *headroom,
                         double *bound)
{
    const ApsolveRequest *a = r->a;
    const ApsolveProblem *p = c->p;
    ApsolvePlan *any = NULL;
    ApsolveOptions ao;
    unsigned char *keep;
    int best_h = 0, any_h = 0, e, exact, open = 0;
    *pl = NULL;
    *headroom = 0;
    c->opt.schedule = a->schedule;
    c->opt.virtual_stages = a->virtual_stages;
    /* no submesh that a plan of one layout of equal stages can fill
     * (apsolve_layout_stages_open): the loop below finds no plan, so the
     * bound's solve is left out too. Its verdict (pruned, with the bound's
     * objective, or no plan) is not known then: counted as a cut bound, so
     * where cp or ep wins, apsolve_run_auto_cp searches again without the
     * cut, this solve included, before its lines say it */
    for (int s = 0; s < p->num_submeshes && !open; s++)
        open = apsolve_layout_stages_open(p, s, c->opt.max_stages);
    if (!open && r->step_cut) {
        r->cut_inexact++;
        return 0;
    }
    /* the best plan of any layouts bounds every plan of one layout: where
     * it does not beat the plan to beat (bar), none of them does */
    ao = c->opt;
    if ((e = solve_one(p, &ao, r->step_cut ? bar : NULL, bar_h, &any, &any_h, &exact)) != 0)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "solving sweep %lld with %s: %s",
                            (long long)c->sweep, what, apsolve_strerror(e));
    if (!any || !apsolve_auto_better(any, any_h, bar, bar_h)) {
        /* -1: pruned, with the bound's objective (not the whole search's
         * when cut: apsolve_run_auto_cp searches again before saying it);
         * a plan below bar, of the cut search or not, is only freed */
        r->cut_inexact += any && !exact;
        if (any) {
            *headroom = -1;
            c->opt.search_headroom = any_h;
            *bound = any->total_cost;
        }
        apsolve_plan_free(&any);
        return 0;
    }
    apsolve_plan_free(&any);
    if (!(keep = calloc((size_t)p->num_submeshes * (size_t)p->num_configs, 1)))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    for (int s = 0; s < p->num_submeshes; s++)
        for (int k = 0; k < p->num_configs; k++) {
            const ApsolveConfig *ck = &p->configs[(size_t)s * p->num_configs + k];
            ApsolveProblem *q = NULL;
            ApsolveSubset v;
            ApsolvePlan *one = NULL;
            ApsolveOptions o = c->opt;
            int seen = 0, h = 0;
            if (!ck->valid || ck->force_batch_dim != 0 || ck->logical_a % cp ||
                !apsolve_layout_stages_open(p, s, c->opt.max_stages))
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
            /* the layout's pairs alone (problem_subset.h): the DP's options
             * are those of the whole table with every other entry +inf */
            for (int u = 0; u < p->num_configs; u++) {
                const ApsolveConfig *cu = &p->configs[(size_t)s * p->num_configs + u];
                keep[(size_t)s * p->num_configs + u] = cu->logical_a == ck->logical_a &&
                                                       cu->logical_b == ck->logical_b &&
                                                       cu->force_batch_dim == 0;
            }
            e = apsolve_subset_new(p, keep, 0, &v);
            if (e == APSOLVE_OK && (e = apsolve_subset_problem(p, &v, &q)) != APSOLVE_OK)
                apsolve_subset_free(&v);
            memset(keep + (size_t)s * p->num_configs, 0, (size_t)p->num_configs);
            if (e != APSOLVE_OK) {
                apsolve_plan_free(pl);
                free(keep);
                return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
            }
            /* and of equal stages: Megatron-LM runs num_layers / pp layers
             * on each, and a launch file of uneven stages is a closest plan
             * that does not carry cp through (reports/launch.c) */
            e = solve_equal(q, &o, &one, &h);
            apsolve_problem_free(&q);
            apsolve_subset_plan(&v, one);
            apsolve_subset_free(&v);
            if (e) {
                apsolve_plan_free(pl);
                free(keep);
                return apsolve_fail(a, APSOLVE_ERROR_FAILED, "solving sweep %lld with %s: %s",
                                    (long long)c->sweep, what, apsolve_strerror(e));
            }
            if (one && apsolve_auto_better(one, h, *pl, best_h)) {
                apsolve_plan_free(pl);
                *pl = one;
                best_h = h;
                c->opt.search_headroom = h;
            } else {
                apsolve_plan_free(&one);
            }
        }
    free(keep);
    *headroom = best_h;
    return 0;
}

void apsolve_auto_offer(ApsolveAutoBest *b, const ApsolveAutoTried *t, ApsolvePlan *pl, int h,
                        ApsolveCand *c)
{
    if (b->nt < sizeof b->tried / sizeof *b->tried)
        b->tried[b->nt++] = *t;
    if (pl && apsolve_auto_better(pl, h, b->best, b->best_h)) {
        apsolve_plan_free(&b->best);
        if (b->bestc.p)
            apsolve_cand_free(&b->bestc);
        b->best = pl;
        b->best_h = h;
        b->bestc = *c;
    } else {
        apsolve_plan_free(&pl);
        apsolve_cand_free(c);
    }
}

static void auto_best_free(ApsolveAutoBest **b)
{
    if (!*b)
        return;
    apsolve_plan_free(&(*b)->best);
    if ((*b)->bestc.p)
        apsolve_cand_free(&(*b)->bestc);
    free(*b);
    *b = NULL;
}

/* What a tried candidate was, "context parallelism cp=2", "expert
 * parallelism ep=8 etp=1" or both, into out. */
static const char *tried_name(const ApsolveAutoTried *t, char *out, size_t len)
{
    if (t->cp > 1 && t->comm != APSOLVE_CP_P2P)
        snprintf(out, len, "context parallelism cp=%d cp_comm=%s", t->cp,
                 apsolve_cp_comm_name(t->comm));
    else if (t->ep > 1 && t->cp > 1)
        snprintf(out, len, "context and expert parallelism cp=%d ep=%d etp=%d%s", t->cp, t->ep,
                 t->etp, t->a2a_overlap ? " moe_a2a_overlap=1" : "");
    else if (t->ep > 1)
        snprintf(out, len, "expert parallelism ep=%d etp=%d%s", t->ep, t->etp,
                 t->a2a_overlap ? " moe_a2a_overlap=1" : "");
    else
        snprintf(out, len, "context parallelism cp=%d", t->cp);
    return out;
}

/* The lines of what was tried and why the best won (b->best beats plain). */
static void say_tried(const ApsolveRequest *a, const ApsolveAutoBest *b, const ApsolvePlan *plain,
                      int plain_h)
{
    char name[96], what[24];
    for (size_t i = 0; i < b->nt; i++) {
        const ApsolveAutoTried *t = &b->tried[i];
        const char *mbs = costdb_plural(t->B, "micro-batch", "micro-batches");
        tried_name(t, name, sizeof name);
        if (t->feasible == -2)
            apsolve_say(a, "%s on micro-batch size %lld (sweep %lld, %d %s of %lld): "
                        "objective %.6g s, not better than the same candidate without ep", name,
                        (long long)t->m, (long long)t->sweep, t->B, mbs, (long long)(t->m / t->cp),
                        t->total);
        else if (t->feasible < 0)
            apsolve_say(a, "%s on micro-batch size %lld (sweep %lld, %d %s of %lld): "
                        "its best plan of any layouts (objective %.6g s) does not beat the best "
                        "so far, so none of one layout does", name, (long long)t->m,
                        (long long)t->sweep, t->B, mbs, (long long)(t->m / t->cp), t->total);
        else if (!t->feasible)
            apsolve_say(a, "%s on micro-batch size %lld (sweep %lld, %d %s of %lld): "
                        "infeasible", name, (long long)t->m, (long long)t->sweep, t->B, mbs,
                        (long long)(t->m / t->cp));
        else
            apsolve_say(a, "%s on micro-batch size %lld (sweep %lld, %d %s of %lld): "
                        "objective %.6g s%s", name, (long long)t->m, (long long)t->sweep, t->B,
                        mbs, (long long)(t->m / t->cp), t->total,
                        t->headroom ? "" : " (without the headroom)");
    }
    {
        ApsolveAutoTried w = {b->best->cp > 1 ? b->best->cp : 1, b->best->ep, b->best->etp, 0, 0,
                              0, 0, 0, 0, b->best->cp_comm, b->best->moe_a2a_overlap};
        tried_name(&w, name, sizeof name);
        snprintf(what, sizeof what, "%s", w.ep > 1 && w.cp > 1 ? "cp or ep"
                                          : w.ep > 1         ? "ep"
                                                             : "cp");
    }
    /* "context parallelism cp=2 wins", as before ep was tried */
    if (plain)
        apsolve_say(a, "%s wins: objective %.6g s against %.6g s for the best plan without %s%s",
                    name, b->best->total_cost, plain->total_cost, what,
                    b->best_h > plain_h ? " (and it keeps the memory headroom, which that plan "
                                          "does not)" : "");
    else
        apsolve_say(a, "%s: no plan without %s fits; the %s plan does (objective %.6g s)",
                    b->best->ep > 1 ? "expert parallelism" : "context parallelism", what, what,
                    b->best->total_cost);
}

/* What makes one cp candidate's table again (apsolve_cp_problem_auto). */
typedef struct CpTable {
    ApsolveRun *r;
    const ApsolveCpAuto *cpa;         /* the sweep's problem, its unfit entries restored */
    int cp, comm;
} CpTable;

/* Candidate c, solved on the subset v of its pairs (while v holds a map),
 * made the whole table of p's indices, and its plan pl's stages with it:
 * what ep's step (ApsolveEpCache, by p's index) and the plans and reports
 * after the search (the best candidate's problem) read. Only a candidate
 * that is read so is made whole. 0; 1 failed (said). */
static int cp_whole(const CpTable *t, ApsolveCand *c, ApsolveSubset *v, ApsolvePlan *pl)
{
    ApsolveProblem *whole = NULL;
    if (!v->at)
        return 0;
    if (apsolve_cp_auto_table(t->cpa, t->cp, t->comm, &whole, NULL)) {
        apsolve_fail(t->r->a, APSOLVE_ERROR_FAILED, "out of memory");
        return 1;
    }
    apsolve_unfit_settle(whole);
    apsolve_subset_plan(v, pl);
    apsolve_subset_free(v);
    apsolve_problem_free(&c->p);
    c->p = whole;
    return 0;
}

/* Whether the table of candidate cp, comm (apsolve_cp_auto_table on cpa,
 * whose problem is p) keeps a submesh that a plan of one layout of equal
 * stages can fill (apsolve_layout_stages_open): 1 or 0, *some whether it
 * keeps a pair at all; -1 out of memory. Where it keeps none such, no
 * layout of the candidate has a plan (apsolve_auto_layouts solves none),
 * so its table need not be made (docs/performance.md, "The cp step's
 * layouts that cannot hold equal stages"). */
static int cp_open(const ApsolveCpAuto *cpa, const ApsolveProblem *p, int cp, int comm,
                   int max_stages, int *some)
{
    unsigned char *kept = malloc(p->num_submeshes > 0 ? (size_t)p->num_submeshes : 1);
    int open = 0;
    if (!kept)
        return -1;
    *some = apsolve_cp_auto_kept(cpa, cp, comm, kept) > 0;
    for (int s = 0; s < p->num_submeshes && !open; s++)
        open = kept[s] && apsolve_layout_stages_open(p, s, max_stages);
    free(kept);
    return open;
}

/* The entries the sweep judged out of memory with the time it computed,
 * restored in base's problem for the cp and ep steps to price stages from
 * (as --parallel does: a run that needs cp or ep to fit); the plain search
 * never sees them (session_twin.c): in the problem itself, put back after
 * the size's candidates (unfit_in_place.h), rather than in a clone of the
 * whole table. On the main sweep (own) the stored entries the partial
 * recomputation's K replaced are put back first. Done once per size
 * (*done), when a step first reads more than which single-layer entries
 * have a time (apsolve_cp_auto_open_as_restored reads those as restored):
 * the ep step, a candidate's table; a size whose every candidate is left
 * out before its table restores nothing and puts nothing back, the same
 * problem after it (docs/performance.md, "apsolve: the cp step's restore
 * and the stored entries put back only when read"). 0; 1 after a message. */
static int size_restore(ApsolveRun *r, ApsolveCand *base, int own, ApsolveUnfitUndo *undo,
                        int *done)
{
    if (*done)
        return 0;
    *done = 1;
    if (own)
        apsolve_auto_recompute_layers_stored(r);
    if (apsolve_unfit_open_in_place(base->p, undo) != APSOLVE_OK)
        return apsolve_fail(r->a, APSOLVE_ERROR_FAILED, "out of memory");
    return 0;
}

/* The cp and ep candidates' search (apsolve_run_auto_cp): *out the best
 * so far with what was tried, or NULL when nothing is tried. 0, or 1 after
 * a message (*out freed). */
static int auto_cp_search(ApsolveRun *r, ApsolveAutoBest **out)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    ApsolveAutoBest *b;
    int64_t family[64];
    size_t nfamily = 0;
    /* cp's GPUs on NVLink: a host's, or the scale-up domain's of several
     * hosts (GB200 NVL72), where the cp group's all-to-alls may span trays */
    int gph = apsolve_cp_fast_gpus(r->db, r->main_c.sweep, r->main_c.p->cluster_gpus);
    int cps[48], comms[48], ncp = 0, top_k = 0, fail = 0;
    int no_cp = 0, heads = 0, kv_heads = 0, changed;
    ApsolveCpSpec *spec = NULL;
    int64_t capacity = 0;
    int64_t asked = a->micro_batch_size > 0 || a->micro_batches > 0 ||
                            (a->sweep > 0 && a->global_batch <= 0)
                        ? r->micro : 0;
    /* the plain search's winner: auto_c holds its options either way */
    int plain_h = s->autop ? r->auto_c.opt.search_headroom : 0;
    *out = NULL;
    if (a->parallel || a->opt.inference || a->batch > 0)
        return 0;
    /* expert parallelism only for a model whose sweep recorded its routing
     * (a dense model: one read of its row) */
    apsolve_ep_routing(r->db, r->main_c.sw.model_id, &top_k, &capacity);
    /* the attention heads the sweep records: a2a and a2a+p2p split them,
     * so they are tried only where the heads are known (context_parallel.h) */
    apsolve_cp_heads(r->db, r->main_c.sweep, r->main_c.p, &heads, &kv_heads);
    for (int cp = 2; cp <= gph && gph % cp == 0 && ncp + 4 <= 48; cp *= 2)
        for (int comm = APSOLVE_CP_P2P; comm <= APSOLVE_CP_ALL_GATHER; comm++)
            /* a2a+p2p's ring runs across hosts (or domains): on one its
             * inner group is all of cp (a2a's entry); all_gather (Transformer
             * Engine's KV all-gather, which Megatron-LM and torchtitan
             * run) splits no heads, so it needs none known */
            if (comm == APSOLVE_CP_P2P || comm == APSOLVE_CP_ALL_GATHER ||
                (heads > 0 && (comm == APSOLVE_CP_A2A || r->main_c.p->num_devices > gph))) {
                cps[ncp] = cp;
                comms[ncp++] = comm;
            }
    if (!ncp && !top_k)
        return 0;
    if (!(b = calloc(1, sizeof *b)) || !(spec = malloc(sizeof *spec))) {
        free(b);
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    }
    /* the micro-batch sizes the plain search could use */
    for (size_t k = 0; k < r->nbs && nfamily < 64; k++) {
        int64_t m = r->bs[k].micro_batch_size;
        if ((asked <= 0 || m == asked) && m > 0 && r->G > 0 && r->G % m == 0)
            family[nfamily++] = m;
    }
    if (!r->nbs)
        family[nfamily++] = r->micro;
    for (size_t k = 0; !fail && (k < r->nbs || (r->nbs == 0 && k == 0)); k++) {
        int64_t m = r->nbs ? r->bs[k].micro_batch_size : r->micro;
        int own = r->nbs == 0 || r->bs[k].sweep_id == r->main_c.sweep;
        ApsolveCand base, ub;
        ApsolveCpAuto *cpa = NULL;
        ApsolveUnfitUndo undo = {NULL, 0};
        ApsolveEpCache cache = {NULL, NULL};
        int64_t seq = 0;
        int attention = 0, rc, with_cp, restored = 0;
        /* a size that does not divide G holds only cp twins: a cp plan's
         * micro-batch is m / cp sequences, each split cp ways, and it runs
         * G / (m / cp) of them (apsolve_cp_micro_batches); no plain
         * or ep plan of it */
        int twin_only = !own && r->G > 0 && m > 0 && r->G % m != 0;
        char why[400] = "";
        if (asked > 0 && m != asked)
            continue;
        if (!own && (r->G <= 0 || m <= 0 || a->micro_batches > 0 ||
                     r->G / m > COSTDB_MAX_MICRO_BATCHES))
            continue;
        with_cp = ncp && !no_cp && m > 0 && m % 2 == 0;
        if (!with_cp && (!top_k || twin_only))
            continue;
        if (own) {
            base = r->main_c;
        } else {
            if (apsolve_cand_load(r->db, a, r->bs[k].sweep_id, r->G, m,
                                  twin_only ? 1 : (int)(r->G / m), &base)) {
                fail = 1;
                break;
            }
            base.opt.objective = a->opt.objective;
        }
        /* the out-of-memory entries restored (size_restore): at once for
         * an ep step, which reads every entry; for the cp candidates alone,
         * before the first table */
        ub = base;
        if (!fail && top_k && size_restore(r, &base, own, &undo, &restored))
            fail = 1;
        /* ep's facts of this sweep's entries, shared by its plain and cp
         * candidates */
        if (top_k && !fail) {
            if (apsolve_ep_cache_new(base.p, &cache)) {
                apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
                fail = 1;
            } else if (!twin_only &&
                       apsolve_auto_ep(r, &ub, 1, &cache, s->autop, plain_h, NULL, 0, b)) {
                fail = 1;
            }
        }
        /* the layers' facts, read once (from the problem as restored,
         * whether or not it is yet); each candidate's table is made when it
         * is tried and freed after it, so only one is held
         * (apsolve_cp_auto_table) */
        rc = fail || !with_cp ? 0
                              : apsolve_cp_auto_open_as_restored(r->db, base.sweep, ub.p, m,
                                                                 family, nfamily, heads,
                                                                 kv_heads, &cpa, &seq,
                                                                 &attention, why, sizeof why);
        if (rc == APSOLVE_ENOMEM) {
            apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
            fail = 1;
        }
        /* placements or hardware that cannot price the cp communication,
         * or no attention to split: no cp candidates (for any size) */
        if (!fail && with_cp && (rc || !attention || seq <= 0)) {
            no_cp = 1;
            with_cp = 0;
        }
        /* with several threads and no ep step, every candidate of this
         * size is searched ahead (pass 0 notes them, session_cpspec.h) */
        changed = 0;
        apsolve_cp_spec_init(spec, r, base.p, cpa, b->best ? b->best : s->autop,
                             b->best ? b->best_h : plain_h,
                             !top_k && with_cp && !fail ? apsolve_run_threads(r) : 1);
        for (int pass = spec->on ? 0 : 1; pass < 2; pass = apsolve_cp_spec_next(spec, pass))
        for (int i = 0; i < ncp; i++) {
            ApsolveCand c = base;
            ApsolvePlan *pl = NULL;
            int cp = cps[i], h = 0;
            double bound = INFINITY;
            ApsolveAutoTried t;
            /* the subset of the pairs that can hold cp stages, its map in
             * v (apsolve_cp_auto_table) */
            ApsolveSubset v;
            CpTable tab = {r, cpa, cp, comms[i]};
            memset(&v, 0, sizeof v);
            c.p = NULL;
            /* the one check of a cp layout (the ring's: the sequence in 2
             * cp chunks, context_parallel.h); the micro-batch split into
             * dp x cp replicas */
            ApsolveCpLayout lay = {1, 1, cp, APSOLVE_CP_P2P, 0};
            /* the cp plan's micro-batches, by the one rule
             * (apsolve_cp_micro_batches, session_cp.c), on the twin at m
             * with base's B; 0 where cp does not divide m or G is not whole
             * micro-batches of m / cp. What this loop counted before, case
             * by case: a twin-only size (m does not divide G, both known)
             * G / (m / cp), the rule's BATCH; any other size that is not
             * the main sweep's comes here with G, m > 0 (the continue
             * above), so m divides G: cp x B, B = G / m (apsolve_cand_load
             * above), the rule's TWIN; the main sweep's size is r->micro
             * with B = r->B, and count_micro_batches (session.c) refuses a
             * G that r->micro does not divide, or (--micro-batches) makes
             * r->micro = G / B or G = B x r->micro, so where both are known
             * m divides G again: TWIN, cp x B, as before, and with G or m
             * unknown TWIN too (no cp candidate without m: with_cp). A
             * size cp does not divide was left out by m % cp before; the
             * rule's NOT_WHOLE (count 0) now. No stored count here. */
            int64_t count;
            apsolve_cp_micro_batches(r->G, m, base.opt.micro_batches, cp, 0, &count);
            if (fail || !with_cp || !apsolve_cp_check(&lay, seq, 0, 0, why, sizeof why, NULL, 0) ||
                count <= 0 || count > COSTDB_MAX_MICRO_BATCHES)
                continue;
            /* no submesh of its table can hold a plan of one layout (cp_open):
             * no plan, as its layouts' search would find (none), without its
             * table or solves; the bound's verdict that search gives first
             * is not known then (a pruned candidate's line), so where some
             * pair is kept it counts as a cut bound and a search where cp or
             * ep wins runs again without the cut (apsolve_run_auto_cp). Not
             * with an ep step, which reads the candidate's table */
            if (r->step_cut && !top_k) {
                int some = 0, open = cp_open(cpa, base.p, cp, comms[i], base.opt.max_stages,
                                             &some);
                if (open < 0) {
                    apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
                    fail = 1;
                    continue;
                }
                if (!open) {
                    if (pass == 0)
                        continue;
                    c.opt.micro_batches = (int)count;
                    c.micro = m / cp;
                    r->cut_inexact += some;
                    goto searched;
                }
            }
            /* its table reads the restored entries (and, in pass 0, the
             * threads ahead make it) */
            if (size_restore(r, &base, own, &undo, &restored)) {
                fail = 1;
                continue;
            }
            /* the transients' cut, read for the first table made (open
             * leaves it unread); one that cannot be read: no cp
             * candidates, as when open cannot read the layers' facts */
            rc = apsolve_cp_auto_transients_load(cpa, r->db, base.sweep, why, sizeof why);
            if (rc == APSOLVE_ENOMEM) {
                apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
                fail = 1;
                continue;
            }
            if (rc) {
                no_cp = 1;
                with_cp = 0;
                continue;
            }
            if (pass == 0) {
                apsolve_cp_spec_add(spec, i, &c, cp, comms[i], (int)count, m / cp);
                continue;
            }
            if (apsolve_cp_spec_take(spec, i, changed, &c, &v, &pl, &h, &bound))
                goto searched;
            /* settled already: it holds no unfit figures */
            if (apsolve_cp_auto_table(cpa, cp, comms[i], &c.p, &v)) {
                apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
                fail = 1;
                continue;
            }
            c.opt.micro_batches = (int)count;
            c.micro = m / cp;
            if (apsolve_auto_layouts(r, &c, cp, "cp", b->best ? b->best : s->autop,
                                     b->best ? b->best_h : plain_h, &pl, &h, &bound)) {
                apsolve_cand_free(&c);
                apsolve_subset_free(&v);
                fail = 1;
                continue;
            }
        searched:
            if (pl) {
                pl->cp = cp;
                pl->cp_comm = comms[i];
            }
            /* ep on the cp candidate's entries (the cp step first, as
             * --parallel ...,cp=C,ep=E prices them); on the ring's only */
            if (top_k && comms[i] == APSOLVE_CP_P2P &&
                (cp_whole(&tab, &c, &v, pl) ||
                 apsolve_auto_ep(r, &c, cp, &cache, s->autop, plain_h, pl, h, b)))
                fail = 1;
            /* the plan that becomes the best so far keeps its candidate,
             * which the plans and reports after the search read whole */
            if (!fail && pl && apsolve_auto_better(pl, h, b->best, b->best_h) &&
                cp_whole(&tab, &c, &v, pl))
                fail = 1;
            apsolve_subset_free(&v);
            t = (ApsolveAutoTried){cp, 0, 0, m, c.sweep, c.opt.micro_batches, h,
                                   pl ? 1 : h < 0 ? -1 : 0, pl ? pl->total_cost : bound,
                                   comms[i]};
            changed |= pl && apsolve_auto_better(pl, h, b->best, b->best_h);
            apsolve_auto_offer(b, &t, pl, h, &c);
        }
        apsolve_cp_spec_free(spec);
        apsolve_ep_cache_free(&cache);
        apsolve_cp_auto_close(&cpa);
        apsolve_unfit_close_in_place(base.p, &undo);
        if (!own)
            apsolve_cand_free(&base);
    }
    free(spec);
    *out = b;
    if (fail)
        auto_best_free(out);
    return fail;
}

/* Context parallelism and expert parallelism in the auto search (the file
 * comment). The candidates' pruning solves leave out what cannot beat the
 * plan to beat (apsolve_solve_to_beat): the same candidates are pruned and
 * the same plans kept, but a pruned candidate's bound is not the whole
 * search's; where cp or ep wins and its lines would say such a bound, the
 * search runs again without the cut. */
int apsolve_run_auto_cp(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    ApsolveAutoBest *b = NULL;
    int plain_h = s->autop ? r->auto_c.opt.search_headroom : 0, fail;
    r->step_cut = 1;
    r->cut_inexact = 0;
    fail = auto_cp_search(r, &b);
    if (!fail && b && b->best && apsolve_auto_better(b->best, b->best_h, s->autop, plain_h) &&
        r->cut_inexact && !a->quiet) {
        auto_best_free(&b);
        r->step_cut = 0;
        fail = auto_cp_search(r, &b);
    }
    r->step_cut = 0;
    if (fail || !b || !b->best || !apsolve_auto_better(b->best, b->best_h, s->autop, plain_h)) {
        auto_best_free(&b);
        return fail;
    }
    /* cp or ep pays: say what was tried, then take its plan as the auto plan */
    if (!a->quiet)
        say_tried(a, b, s->autop, plain_h);
    apsolve_plan_free(&s->autop);
    s->autop = b->best;
    apsolve_plan_batch(s->autop, &b->bestc);
    if (r->have_auto_c)
        apsolve_cand_free(&r->auto_c);
    b->bestc.opt.schedule = b->best->schedule;
    b->bestc.opt.virtual_stages = b->best->virtual_stages;
    r->have_auto_c = 1;
    r->auto_c = b->bestc;
    free(b);
    return 0;
}
