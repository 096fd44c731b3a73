/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The recompute_layers step of a --parallel plan (session_int.h): with
 * recompute=full and recompute_layers=K, the candidate whose full entries
 * of the plan's stages are composed stages with the first K layers of
 * each model chunk recomputed and the rest keeping their activations
 * (recompute_layers.h), Megatron-LM's --recompute-method block
 * --recompute-num-layers K; with recompute_layers=auto, the K of 1 .. the
 * chunk's layers whose plan is the cheapest that fits (docs/variants.md,
 * "Partial recomputation").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "frameworks.h"
#include "recompute_layers.h"
#include "session.h"
#include "session_int.h"

/* The layers of each chunk of the plan's stages (the most: a K at least
 * that recomputes every layer; a stage of fewer layers a chunk than K
 * recomputes all of its own, as Megatron-LM's blocks do, which a stored
 * auto plan of unequal stages may hold: session_autorl.c), or 0 when the
 * chunks do not split a stage. */
static int chunk_layers(const ApsolveRun *r, int chunks)
{
    int m = 0;
    for (size_t t = 0; t < r->nspec; t++) {
        int n = r->specs[t].end_layer - r->specs[t].start_layer + 1;
        if (n % chunks)
            return 0;
        if (n / chunks > m)
            m = n / chunks;
    }
    return m;
}

/* The problem of c's with k layers of each chunk recomputed (k >= the
 * chunk's layers: a clone, every layer recomputed). */
static int make(ApsolveRun *r, const ApsolveCand *c, int k, int chunks, ApsolveProblem **q)
{
    return apsolve_recompute_layers_problem(c->p, r->specs, r->nspec, k, chunks, q);
}

/* recompute_layers=auto: the k whose plan is feasible and cheapest
 * (apsolve_plan_better); the chunk's layers (plain full) when none fits. */
static int search(ApsolveRun *r, const ApsolveCand *c, int m, int chunks, int *best_k)
{
    ApsolvePlan *best = NULL;
    ApsolveStageSpec *sp = malloc(r->nspec * sizeof *sp);
    int rc = 0;
    *best_k = m;
    if (!sp)
        return APSOLVE_ENOMEM;
    for (int k = 1; k <= m && !rc; k++) {
        ApsolveProblem *q = NULL;
        ApsolvePlan *pl = NULL;
        ApsolveOptions o = c->opt;
        char why[300];
        memcpy(sp, r->specs, r->nspec * sizeof *sp);
        if ((rc = make(r, c, k, chunks, &q)) != APSOLVE_OK)
            break;
        apsolve_parallel_apply(&r->a->par, &o, sp, r->nspec);
        if (apsolve_evaluate_as_run(r->db, c->sweep, q, &o, sp, r->nspec, &pl, why,
                                    sizeof why) == APSOLVE_ENOMEM)
            rc = APSOLVE_ENOMEM;
        if (pl && !r->a->quiet)
            apsolve_say(r->a, "recompute_layers=auto: %d of %d layers a chunk recomputed: %.6g s"
                        "%s", k, m, pl->total_cost, pl->feasible ? "" : ", does not fit");
        if (pl && pl->feasible && (!best || apsolve_plan_better(pl, best))) {
            apsolve_plan_free(&best);
            best = pl;
            pl = NULL;
            *best_k = k;
        }
        apsolve_plan_free(&pl);
        apsolve_problem_free(&q);
    }
    apsolve_plan_free(&best);
    free(sp);
    return rc;
}

int apsolve_run_recompute_layers(ApsolveRun *r, ApsolveCand **pc)
{
    const ApsolveRequest *a = r->a;
    const ApsolveParallel *pr = &a->par;
    const ApsolveCand *c = *pc;
    const char *what = a->parallel ? a->parallel : "of the stored plan";
    int chunks = pr->vpp > 1 ? pr->vpp : 1, m, k = pr->recompute_layers, rc;
    r->rl_k = 0;
    if (!k)
        return 0;
    if (a->opt.inference)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: recompute_layers prices "
                            "the backward's recomputation; not with --inference", what);
    if (a->batch > 0)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: --batch does not re-price "
                            "recompute_layers (give the new batch with --global-batch)", what);
    if (!(m = chunk_layers(r, chunks)))
        return apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s: recompute_layers counts "
                            "the layers of each of vpp=%d chunks, which do not split every "
                            "stage", what, chunks);
    if (k == APSOLVE_RECOMPUTE_LAYERS_AUTO && (rc = search(r, c, m, chunks, &k)) != 0)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    if (k > m)
        k = m; /* Megatron checkpoints every layer of the chunk then */
    if ((rc = make(r, c, k, chunks, &r->rl_c.p)) != APSOLVE_OK)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, rc == APSOLVE_ENOMEM ? "out of memory"
                            : "--parallel %s: the sweep has no memory figures", what);
    r->have_rl_c = 1;
    r->rl_k = k;
    r->rl_src = c;
    r->rl_c.sweep = c->sweep;
    r->rl_c.sw = c->sw;
    r->rl_c.opt = c->opt;
    r->rl_c.global_batch = c->global_batch;
    r->rl_c.micro = c->micro;
    *pc = &r->rl_c;
    return 0;
}

void apsolve_recompute_layers_stages_say(const ApsolveRequest *a, const ApsolvePlan *g,
                                         const ApsolveProblem *q, const ApsolveProblem *src,
                                         int k, int chunks)
{
    for (size_t t = 0; !a->quiet && t < g->n_stages; t++) {
        const ApsolveStage *st = &g->stages[t];
        int n = (st->end_layer - st->start_layer + 1) / chunks;
        ApsolveRecomputeLayers x;
        char why[400];
        if (st->submesh < 0 || st->config < 0 || k >= n ||
            st->variant.recompute != COSTDB_RECOMPUTE_FULL)
            continue;
        if (!isfinite(st->cost)) {
            /* why the composition has no time, from the entries it is made of */
            if (apsolve_recompute_layers_entry(src, st->start_layer, st->end_layer,
                                               st->submesh, st->config, k, chunks, &x,
                                               why, sizeof why))
                apsolve_say(a, "recompute_layers=%d, stage %zu (layers %d-%d): not priced: "
                            "%s", k, t, st->start_layer, st->end_layer, why);
            continue;
        }
        {
            const ApsolveMemory *m = apsolve_memory_at(
                q, apsolve_index(q, st->start_layer, st->end_layer, st->submesh, st->config));
            apsolve_say(a, "recompute_layers=%d, stage %zu (layers %d-%d): the first %d of %d "
                        "layers of each of %d chunk%s fully recomputed, the rest keep their "
                        "activations: %.6g s forward, %.6g s backward, %lld bytes saved a "
                        "micro-batch, peak %lld bytes", k, t, st->start_layer,
                        st->end_layer, k, n, chunks, chunks > 1 ? "s" : "", st->fwd_cost,
                        st->bwd_cost, (long long)m->intermediate, (long long)m->peak);
        }
    }
}

void apsolve_recompute_layers_say(ApsolveRun *r, ApsolvePlan *g)
{
    int chunks = r->a->par.vpp > 1 ? r->a->par.vpp : 1;
    const ApsolveProblem *q = r->have_rl_c ? r->rl_c.p : NULL;
    if (!g || !r->rl_k || !q)
        return;
    g->recompute_layers = r->rl_k;
    apsolve_recompute_layers_stages_say(r->a, g, q, r->rl_src->p, r->rl_k, chunks);
}
