/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Partial recomputation in the auto search (session_int.h, docs/solver.md
 * "Partial recomputation in the auto search"): beside the plan the search
 * found, for each K of 1 .. the longest chunk's layers - 1, the DP's best
 * plan on the winner's candidate and schedule whose `full` entries are the
 * stages with the first K layers of each model chunk fully recomputed and
 * the rest keeping their activations (apsolve_recompute_layers_compose_all,
 * the pricing --parallel ...,recompute_layers=K uses: recompute_layers.h).
 * One K for the whole plan, as Megatron-LM core_v0.19.0 runs it: one
 * --recompute-method block --recompute-num-layers K for every
 * TransformerBlock (megatron/core/recompute.py `checkpointed_forward`, the
 * 'block' branch: layer_idx < recompute_num_layers of each virtual
 * pipeline chunk); a stage whose chunks hold K layers or fewer recomputes
 * every layer, its stored `full` entry. The best of them replaces the plan
 * only when it is better by the search's own rule (the headroom kept
 * first, then the objective), so a plan K does not improve stays exactly
 * what it was. It runs before the cp and ep steps, whose plans then
 * compete with its plan; it composes no cp or ep entries (--parallel does
 * not either). Only under the schedules Megatron-LM runs (1F1B and
 * interleaved 1F1B), never with --inference, --batch or a --parallel
 * layout.
 */
#include <math.h>
#include <stdlib.h>

#include "apsolve.h"
#include "costdb.h"
#include "plural.h"
#include "recompute_layers.h"
#include "schedule.h"
#include "session.h"
#include "session_int.h"
#include "solver_int.h"

/* Whether some valid `full` config of p has a `none` sibling (the same
 * submesh, logical mesh, batch option, memory level and ZeRO stage): the
 * entries a composed stage is made of. */
static int composable(const ApsolveProblem *p)
{
    int C = p->num_configs;
    for (int s = 0; s < p->num_submeshes; s++)
        for (int c = 0; c < C; c++) {
            const ApsolveConfig *f = &p->configs[(size_t)s * C + c];
            if (!f->valid || f->variant.recompute != COSTDB_RECOMPUTE_FULL)
                continue;
            for (int o = 0; o < C; o++) {
                const ApsolveConfig *x = &p->configs[(size_t)s * C + o];
                if (x->valid && x->variant.recompute == COSTDB_RECOMPUTE_NONE &&
                    x->logical_a == f->logical_a && x->logical_b == f->logical_b &&
                    x->force_batch_dim == f->force_batch_dim &&
                    x->variant.memory_level == f->variant.memory_level &&
                    x->variant.zero == f->variant.zero)
                    return 1;
            }
        }
    return 0;
}

/* Whether stage t of plan pl is an entry compose_all writes at k (a valid
 * `full` config's, its chunks of more than k layers). */
static int stage_composed(const ApsolveProblem *p, const ApsolvePlan *pl, size_t t, int k,
                          int chunks)
{
    const ApsolveStage *g = &pl->stages[t];
    int n = g->end_layer - g->start_layer + 1;
    const ApsolveConfig *cf;
    if (g->submesh < 0 || g->config < 0)
        return 1; /* not an entry: no witness */
    cf = &p->configs[(size_t)g->submesh * p->num_configs + g->config];
    return cf->valid && cf->variant.recompute == COSTDB_RECOMPUTE_FULL && n % chunks == 0 &&
           n / chunks > k;
}

/* The K left out without being composed or solved (docs/performance.md,
 * "apsolve: partial recomputation's K left out by a floor"). */
typedef struct RlCut {
    double *floor;                    /* apsolve_recompute_layers_floors, made when first
                                       * read; NULL: none left out */
    int made;                         /* floor made (or its memory refused) */
    double stored_above;              /* the stored entries alone have no plan at or below
                                       * it (keeping the headroom where one is asked): -inf
                                       * unknown */
    double stored_tried;              /* the least bar they were solved against (+inf) */
    int threads;                      /* the floor's (--threads) */
} RlCut;

/* Whether k's problem (p with compose_all's entries at k) has a plan that
 * fits, and none that beats bar (headroom bar_h) by apsolve_auto_better,
 * shown without composing it; then apsolve_solve_to_beat on it would give
 * a feasible plan that apsolve_auto_step_offer counts and does not take.
 * Its plans are of two kinds:
 * - those with an entry compose_all writes at k: under 1F1B and
 *   interleaved 1F1B the objective is base_time(v, B, sum, max) + the
 *   apply step >= 0 (evaluate.c, apsolve_plan_price; schedule.c,
 *   apsolve_schedule_base_time: (sum + (v B - 1) max) / v, or sum + (B -
 *   1) max, both >= B max as sum >= max), so at least B x that entry's
 *   cost, at least B x floor[k] (recompute_layers.h, with the margin of
 *   apsolve_chunk_skip), which reaches bar: above it, never a tie;
 * - those of stored entries alone: plans of p as stored, whose every
 *   entry is the same there, so none beats bar when p as stored has no
 *   plan at or below bar keeping the headroom (one apsolve_solve_to_beat
 *   of p between two k, when bar keeps the headroom or none is asked:
 *   then a plan beats bar only keeping it with a lower objective), kept
 *   for every later bar at or below that one.
 * A plan fits: the plan without partial recomputation, fitting and of
 * stored entries alone (none of its stages an entry composed at k), is a
 * plan of k's problem with the same entries. */
static int left_out(RlCut *cut, ApsolveProblem *p, const ApsolveOptions *o0,
                    const ApsolvePlan *plain, const ApsolvePlan *bar, int bar_h, int k,
                    int chunks)
{
    int hmax = o0->headroom_bytes > 0 || o0->headroom_percent > 0;
    /* bar the plan without it: that plan is one of p as stored, which then
     * has one at bar (its least, or a tie): nothing is left out, and
     * neither the floors nor p as stored are solved for it */
    if (bar == plain)
        return 0;
    if (!cut->made) {
        int kmax = p->num_layers / chunks - 1;
        cut->made = 1;
        if ((cut->floor = malloc(((size_t)kmax + 1) * sizeof *cut->floor)) &&
            apsolve_recompute_layers_floors_threads(p, chunks, cut->floor, cut->threads) !=
                APSOLVE_OK) {
            free(cut->floor);
            cut->floor = NULL;
        }
    }
    if (!cut->floor || bar_h < hmax || !(bar->total_cost < INFINITY) || !plain->feasible ||
        !apsolve_chunk_skip(cut->floor[k], o0->micro_batches, bar->total_cost))
        return 0;
    for (size_t t = 0; t < plain->n_stages; t++)
        if (stage_composed(p, plain, t, k, chunks))
            return 0;
    if (!(bar->total_cost <= cut->stored_above) && bar->total_cost < cut->stored_tried) {
        ApsolveOptions o = *o0;
        ApsolvePlan *pl = NULL;
        int exact, e = apsolve_solve_to_beat(p, &o, bar, bar_h, 0, &pl, &exact);
        /* above bar: its least plan is above it (apsolve_solve_below) */
        if (e == APSOLVE_EINFEASIBLE ||
            (e == 0 && pl->feasible && (o.search_headroom < hmax ||
                                        pl->total_cost > bar->total_cost)))
            cut->stored_above = bar->total_cost;
        cut->stored_tried = bar->total_cost;
        apsolve_plan_free(&pl);
    }
    return bar->total_cost <= cut->stored_above;
}

int apsolve_run_auto_recompute_layers(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    const ApsolvePlan *plain = r->s->autop;
    ApsolveProblem *p = r->auto_c.p;
    ApsolveRecomputeSaved *saved = NULL, *snap = NULL;
    ApsolveOptions o0;
    ApsolveAutoStep st = {.plain = plain, .plain_h = r->auto_c.opt.search_headroom};
    RlCut cut = {NULL, 0, -INFINITY, INFINITY, apsolve_run_threads(r)};
    int chunks, kmax;
    if (a->parallel || a->opt.inference || a->batch > 0 || !plain || plain->cp > 1 ||
        plain->ep > 1 || !p || !p->memory || !p->times)
        return 0;
    if (plain->schedule != APSOLVE_SCHEDULE_1F1B &&
        plain->schedule != APSOLVE_SCHEDULE_INTERLEAVED)
        return 0;
    if (!composable(p))
        return 0;
    chunks = plain->schedule == APSOLVE_SCHEDULE_INTERLEAVED && plain->virtual_stages > 1
                 ? plain->virtual_stages : 1;
    kmax = p->num_layers / chunks - 1; /* the longest chunk's layers, less one */
    o0 = r->auto_c.opt;
    o0.schedule = plain->schedule;
    o0.virtual_stages = plain->virtual_stages;
    /* each k composed in the problem itself and put back after its solve
     * (recompute_layers.h), instead of in a clone of the whole table; the
     * winner's K is put in it again for good (below) from a save taken
     * when it was composed (snap) */
    if (kmax >= 1 && apsolve_recompute_layers_save(p, chunks, &saved) != APSOLVE_OK)
        goto nomem;
    for (int k = 1; k <= kmax; k++) {
        ApsolvePlan *pl = NULL;
        ApsolveOptions o = o0;
        int e, exact;
        if (left_out(&cut, p, &o0, plain, st.best ? st.best : plain,
                     st.best ? st.best_h : st.plain_h, k, chunks)) {
            st.priced++; /* a plan fits, none beats the best so far */
            continue;
        }
        apsolve_recompute_layers_compose_all_threads(p, k, chunks, cut.threads);
        /* a K that cannot beat the best so far is priced only as far as
         * whether a plan fits (the count said below) */
        e = apsolve_solve_to_beat(p, &o, st.best ? st.best : plain,
                                  st.best ? st.best_h : st.plain_h, 0, &pl, &exact);
        e = apsolve_auto_step_offer(&st, e, &pl, &o, k);
        if (e == 1) {
            /* the best so far: its composition kept (a save of p as it
             * is now, whose places of k put_back writes back after the
             * loop) rather than composed again; without the memory,
             * composed again */
            apsolve_recompute_layers_saved_free(&snap);
            if (apsolve_recompute_layers_save(p, chunks, &snap) != APSOLVE_OK)
                snap = NULL;
        }
        apsolve_recompute_layers_put_back(p, saved, k);
        if (e < 0) {
            free(cut.floor);
            apsolve_recompute_layers_saved_free(&snap);
            apsolve_recompute_layers_saved_free(&saved);
            apsolve_auto_step_free(&st);
            return apsolve_fail(a, APSOLVE_ERROR_FAILED, "recompute_layers=%d: %s", k,
                                apsolve_strerror(e));
        }
    }
    free(cut.floor);
    if (!a->quiet && st.priced)
        apsolve_say(a, "partial recomputation (the first K of each chunk's layers, K = 1 .. "
                    "%d): %d plan%s fit%s; %s", kmax, st.priced, st.priced == 1 ? "" : "s",
                    st.priced == 1 ? "s" : "",
                    st.best ? "one beats the plan without it" : "none beats the plan without it");
    if (!st.best) {
        apsolve_recompute_layers_saved_free(&snap);
        apsolve_recompute_layers_saved_free(&saved);
        return 0;
    }
    st.best->recompute_layers = st.best_n;
    if (!a->quiet)
        apsolve_say(a, "partial recomputation: K = %d (the first %d %s of each chunk): "
                    "objective %.6g s (%.6g s without it)%s", st.best_n, st.best_n,
                    costdb_plural(st.best_n, "layer", "layers"), st.best->total_cost,
                    plain->total_cost,
                    st.best_h > st.plain_h ? ", keeping the memory headroom" : "");
    /* the winner's K in the problem itself, as its clone held it: the
     * auto candidate's problem from now on (a DP plan's stages are finite
     * entries, so what is said reads only the composed ones) */
    if (snap)
        apsolve_recompute_layers_put_back(p, snap, st.best_n);
    else
        apsolve_recompute_layers_compose_all_threads(p, st.best_n, chunks, cut.threads);
    apsolve_recompute_layers_saved_free(&snap);
    apsolve_recompute_layers_stages_say(a, st.best, p, p, st.best_n, chunks);
    apsolve_plan_free(&r->s->autop);
    r->s->autop = st.best;
    apsolve_plan_batch(r->s->autop, &r->auto_c);
    r->auto_c.opt = st.besto;
    st.best = NULL;
    if (r->have_auto_c) {
        /* a candidate of another micro-batch size owns p, which the cp
         * step does not read (it loads that sweep again) */
        apsolve_recompute_layers_saved_free(&saved);
    } else {
        /* main_c's problem: borrowed, and its stored entries put back for
         * the cp step (apsolve_auto_recompute_layers_stored) */
        r->auto_c.borrowed = 1;
        r->have_auto_c = 1;
        r->rl_saved = saved;
        r->rl_auto_k = st.best_n;
        r->rl_auto_chunks = chunks;
    }
    return 0;
nomem:
    apsolve_auto_step_free(&st);
    return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
}

void apsolve_auto_recompute_layers_stored(ApsolveRun *r)
{
    /* freed before the cp step's tables, the run's peak: kept through
     * them to put the K back after, they raised the peak by 5 MB on the
     * 126-layer file, for less time than composing the K again */
    if (r->rl_saved) {
        apsolve_recompute_layers_put_back(r->main_c.p, r->rl_saved, r->rl_auto_k);
        apsolve_recompute_layers_saved_free(&r->rl_saved);
    }
}

int apsolve_auto_recompute_layers_again(ApsolveRun *r)
{
    /* the K plan is still the auto plan when auto_c still borrows main_c's
     * problem (a later step's winner has a problem of its own) */
    int still = r->rl_auto_k > 0 && r->have_auto_c && r->auto_c.borrowed &&
                r->auto_c.p == r->main_c.p;
    if (r->rl_saved) {
        /* the cp step did not put the stored entries back: the problem
         * still holds the K's, as composing it again would write them
         * (compose_all is a function of the stored entries, and the save
         * put back after the loop is what it wrote:
         * apsolve_recompute_layers_put_back); where the K plan is no longer
         * the auto plan, the stored entries, as the cp step would have
         * left them */
        if (!still)
            apsolve_recompute_layers_put_back(r->main_c.p, r->rl_saved, r->rl_auto_k);
        apsolve_recompute_layers_saved_free(&r->rl_saved);
    } else if (still) {
        apsolve_recompute_layers_compose_all(r->main_c.p, r->main_c.p, r->rl_auto_k,
                                             r->rl_auto_chunks);
    }
    r->rl_auto_k = 0;
    return 0;
}
