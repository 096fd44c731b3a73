/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Expert parallelism of a --parallel plan (expert_parallel.h; the model,
 * with the Megatron-Core code it follows, is in docs/expert-parallel.md):
 * the problems of ep stages, their cache, the all-to-all overlap and the
 * frameworks' limits. An entry's facts and their price under a layout
 * are in ep_stage_price.c.
 * Collectives are priced by costdb/collective.c, the one price of a
 * message; Adam's bytes by costdb_adam_bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "costdb_text.h"
#include "ep_stage_price.h"
#include "expert_parallel.h"
#include "fp8_recipe.h"
#include "frameworks.h"
#include "hardware.h"
#include "problem_subset.h"
#include "session.h"
#include "solver_int.h"


void apsolve_ep_a2a_hidden(const ApsolveEpStage *x, double fwd, double bwd, double *hidden_fwd,
                           double *hidden_bwd)
{
    double a2a_fwd = 0, a2a_bwd = 0;
    for (int k = 0; k < x->n_costs; k++)
        if (strstr(x->costs[k].what, "all-to-all")) {
            a2a_fwd += x->costs[k].fwd;
            a2a_bwd += x->costs[k].bwd;
        }
    /* Megatron-Core's combined 1F1B (combined_1f1b.py lines 34-41 at
     * Megatron-LM 00caa53, the schedule plan of fine_grained_callables.py)
     * runs one micro-batch's forward beside another's backward, layer by
     * layer on two streams: the forward's dispatch and combine all-to-alls
     * under the backward's attention and MLP compute, and the backward's
     * under the forward's. The project's one overlap rule, with no GEMM
     * slowdown (the solver's fabric carries none): hidden min(comm,
     * window), the rest exposed. */
    *hidden_fwd = approf_overlap_hidden_at(0.0, a2a_fwd, bwd);
    *hidden_bwd = approf_overlap_hidden_at(0.0, a2a_bwd, fwd);
}

/* Entry idx of q under the ep layout x (a2a_overlap: Megatron-Core's MoE
 * all-to-all overlap, apsolve_ep_a2a_hidden). */
static void transform(ApsolveProblem *q, size_t idx, const ApsolveEpStage *x, int a2a_overlap)
{
    double hf = 0, hb = 0;
    if (x->usable == 1 || !isfinite(q->cost[idx]))
        return;
    if (x->usable == 0) {
        q->cost[idx] = INFINITY;
        return;
    }
    if (a2a_overlap && q->times)
        apsolve_ep_a2a_hidden(x, apsolve_times_at(q, idx)->fwd, apsolve_times_at(q, idx)->bwd,
                              &hf, &hb);
    apsolve_entry_add(q, idx, &(ApsolveEntryDelta){x->comm_fwd + x->perm_fwd - hf,
                                                   x->comm_bwd + x->perm_bwd - hb, x->apply_delta,
                                                   x->peak_delta, x->initial_delta});
}

int apsolve_ep_problem(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                       const ApsolveStageSpec *specs, size_t n, const ApsolveEpLayout *l,
                       ApsolveProblem **out, ApsolveEpStage *first, char *why, size_t len)
{
    ApsolveProblem *q = NULL;
    ApsolveEpStage *xs;
    int rc;
    *out = NULL;
    if ((rc = apsolve_problem_clone(p, &q)) != APSOLVE_OK)
        return rc;
    if (!(xs = calloc((size_t)q->num_configs, sizeof *xs))) {
        apsolve_problem_free(&q);
        return APSOLVE_ENOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        const ApsolveStageSpec *sp = &specs[k];
        int s = apsolve_find_submesh(q, sp->hosts, sp->gpus), best = -1;
        memset(&first[k], 0, sizeof first[k]);
        if (s < 0)
            continue;
        memset(xs, 0, (size_t)q->num_configs * sizeof *xs);
        for (int c = 0; c < q->num_configs; c++) {
            const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
            size_t idx = apsolve_index(q, sp->start_layer, sp->end_layer, s, c);
            /* a twin the sweep judged out of memory is priced from the time
             * it computed; the transformed memory decides fit */
            if (!cf->valid || cf->logical_a != l->dp || cf->logical_b != l->tp ||
                cf->force_batch_dim != 0 || !apsolve_unfit_restore(q, idx))
                continue;
            ApsolveEpLayout m = *l;
            m.recompute = cf->variant.recompute; /* full reruns the dispatcher */
            if (apsolve_ep_stage(db, sweep, q->cluster_gpus, sp->start_layer, sp->end_layer, s,
                                 c, &m, &xs[c], why, len)) {
                free(xs);
                apsolve_problem_free(&q);
                return APSOLVE_EDB;
            }
        }
        /* A variant (recompute, ZeRO) the sweep profiled with the experts
         * split as asked is priced as profiled: its transformed levels
         * stand aside. */
        for (int c = 0; c < q->num_configs; c++) {
            const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
            for (int d = 0; d < q->num_configs && xs[c].usable == 2; d++) {
                const ApsolveConfig *df = &q->configs[(size_t)s * q->num_configs + d];
                if (xs[d].usable == 1 && costdb_variant_same_settings(df->variant, cf->variant))
                    xs[c].usable = 0;
            }
        }
        for (int c = 0; c < q->num_configs; c++) {
            const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
            if (!xs[c].moe_layers)
                continue;
            transform(q, apsolve_index(q, sp->start_layer, sp->end_layer, s, c), &xs[c],
                      l->a2a_overlap);
            if (xs[c].usable &&
                (best < 0 || cf->variant.memory_level < best ||
                 (cf->variant.memory_level == best && xs[c].usable < first[k].usable))) {
                best = cf->variant.memory_level;
                first[k] = xs[c];
            } else if (!first[k].moe_layers) {
                first[k] = xs[c];
            }
        }
    }
    free(xs);
    *out = q;
    return APSOLVE_OK;
}

int apsolve_ep_cache_new(const ApsolveProblem *p, ApsolveEpCache *c)
{
    size_t sc = (size_t)p->num_submeshes * (size_t)p->num_configs;
    c->facts = calloc(apsolve_problem_cells(p) + 1, sizeof *c->facts);
    c->owner = malloc((sc + 1) * sizeof *c->owner);
    if (!c->facts || !c->owner) {
        apsolve_ep_cache_free(c);
        return APSOLVE_ENOMEM;
    }
    for (size_t k = 0; k < sc; k++)
        c->owner[k] = -1;
    c->sweep_fp8_read = 0;
    return APSOLVE_OK;
}

void apsolve_ep_cache_free(ApsolveEpCache *c)
{
    free(c->facts);
    free(c->owner);
    c->facts = NULL;
    c->owner = NULL;
}

/* Facts of entry (i, j, s, c) from cache, read on first use: once per
 * placement owner (the variants of one memory level share its
 * placements: costdb_placements_owner); *f the fabric, read with the first
 * entry. *x points at them. 0; -1 with why. */
static int cached_facts(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                        ApsolveEpCache *cache, int i, int j, int s, int c, CostdbFabric *f,
                        int *have_f, const ApsolveEpFacts **x, char *why, size_t len)
{
    const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + c];
    int *own = &cache->owner[(size_t)s * p->num_configs + c];
    CostdbPlacement *pl = NULL;
    ApsolveEpFacts *y;
    size_t n = 0;
    if (*own < 0 && costdb_placements_owner(db, sweep, s, c, own) < 0) {
        snprintf(why, len, "placements of config %d: %s", c, costdb_errmsg(db));
        return -1;
    }
    if (*own < 0 || *own >= p->num_configs)
        *own = c;
    y = &cache->facts[apsolve_index(p, i, j, s, *own)];
    *x = y;
    /* the facts are cached per owner; the fabric is read once per call
     * (the caller's f), so a call that finds the facts known still reads it */
    if (y->known && *have_f)
        return 0;
    if (!*have_f) {
        if (apsolve_stage_inputs(db, sweep, i, j, s, c, "the token all-to-all", f, &pl, &n, why,
                                 len) < 0)
            return -1;
        *have_f = 1;
    } else if (costdb_placements_get(db, sweep, i, j, s, c, &pl, &n) < 0) {
        snprintf(why, len, "layers %d-%d: placements: %s", i, j, costdb_errmsg(db));
        return -1;
    }
    apsolve_ep_facts(pl, n, cf->logical_a, cf->logical_b, y);
    free(pl);
    if (!cache->sweep_fp8_read) {
        if (apsolve_ep_fp8(db, sweep, &cache->sweep_fp8) < 0) {
            y->known = 0;
            snprintf(why, len, "sweep %lld: its hardware row cannot be read to price the "
                     "expert weights' FP8 copies", (long long)sweep);
            return -1;
        }
        cache->sweep_fp8_read = 1;
    }
    y->fp8_recipe = cache->sweep_fp8.fp8_recipe;
    y->fp8_copies = cache->sweep_fp8.fp8_copies;
    y->fp8_params = cache->sweep_fp8.fp8_params;
    y->drop_pad = cache->sweep_fp8.drop_pad;
    y->launch = cache->sweep_fp8.launch;
    return 0;
}

/* Whether config cf can hold ep stages of layout l at all, whatever the
 * layer range (apsolve_ep_problem_auto): (dp, tp) with the batch on axis 0,
 * ZeRO below 2, its GPUs a multiple of ep x etp; under the MoE all-to-all
 * overlap not a full recomputation (Megatron-Core refuses it, as
 * apsolve_ep_a2a_overlap_check does for --parallel). */
static int config_holds_ep(const ApsolveConfig *cf, const ApsolveEpLayout *l)
{
    return cf->valid && cf->force_batch_dim == 0 && cf->variant.zero < 2 &&
           ((int64_t)cf->logical_a * cf->logical_b) % (l->ep * l->etp) == 0 &&
           !(l->a2a_overlap && cf->variant.recompute == COSTDB_RECOMPUTE_FULL);
}

int apsolve_ep_problem_auto(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            ApsolveEpCache *cache, const ApsolveEpLayout *l,
                            ApsolveProblem **out, ApsolveSubset *view, size_t *transformed,
                            char *why, size_t len)
{
    ApsolveProblem *q = NULL;
    ApsolveEpStage *xs;
    CostdbFabric f;
    int *use;
    int have_f = 0, rc, C = p->num_configs;
    *out = NULL;
    *transformed = 0;
    if (view) {
        /* the pairs that can hold ep stages (problem_subset.h): the rest
         * would be +inf; only the submeshes with such a pair (all of them,
         * of padding, when none has one) */
        size_t pairs = (size_t)p->num_submeshes * (size_t)C;
        unsigned char *keep = malloc(pairs);
        if (!keep)
            return APSOLVE_ENOMEM;
        for (size_t k = 0; k < pairs; k++)
            keep[k] = (unsigned char)config_holds_ep(&p->configs[k], l);
        rc = apsolve_subset_new_kept(p, keep, view);
        free(keep);
        if (rc == APSOLVE_OK && (rc = apsolve_subset_problem(p, view, &q)) != APSOLVE_OK)
            apsolve_subset_free(view);
    } else {
        rc = apsolve_problem_clone(p, &q);
    }
    if (rc != APSOLVE_OK)
        return rc;
    xs = calloc((size_t)(C > 0 ? C : 1), sizeof *xs);
    use = calloc((size_t)(C > 0 ? C : 1), sizeof *use);
    if (!xs || !use) {
        rc = APSOLVE_ENOMEM;
        goto fail;
    }
    memset(&f, 0, sizeof f);
    for (int i = 0; i < p->num_layers; i++)
        for (int j = i; j < p->num_layers; j++)
            for (int s = 0; s < p->num_submeshes; s++) {
                /* use[c]: -1 +inf, 0 no experts (kept), 1 as profiled, 2 transformed */
                for (int c = 0; c < C; c++) {
                    const ApsolveConfig *cf = &p->configs[(size_t)s * C + c];
                    size_t idx = apsolve_index(p, i, j, s, c);
                    ApsolveEpLayout m = *l;
                    const ApsolveEpFacts *x = NULL;
                    use[c] = -1;
                    if (!config_holds_ep(cf, l) || !isfinite(p->cost[idx]))
                        continue;
                    if (cached_facts(db, sweep, p, cache, i, j, s, c, &f, &have_f, &x, why,
                                     len)) {
                        rc = APSOLVE_EDB;
                        goto fail;
                    }
                    m.dp = cf->logical_a;
                    m.tp = cf->logical_b;
                    m.zero = cf->variant.zero;
                    m.recompute = cf->variant.recompute;
                    apsolve_ep_price(x, &f, p->cluster_gpus, &m, &xs[c]);
                    if (!xs[c].moe_layers)
                        use[c] = 0;
                    else if (xs[c].experts % l->ep == 0 && xs[c].usable)
                        use[c] = xs[c].usable;
                }
                /* a variant the sweep profiled with the experts split as
                 * asked is priced as profiled: its transformed twins (same
                 * mesh, recompute and ZeRO) stand aside, as in
                 * apsolve_ep_problem */
                for (int c = 0; c < C; c++) {
                    const ApsolveConfig *cf = &p->configs[(size_t)s * C + c];
                    for (int d = 0; d < C && use[c] == 2; d++) {
                        const ApsolveConfig *df = &p->configs[(size_t)s * C + d];
                        if (use[d] == 1 && df->logical_a == cf->logical_a &&
                            df->logical_b == cf->logical_b &&
                            costdb_variant_same_settings(df->variant, cf->variant))
                            use[c] = -1;
                    }
                }
                for (int c = 0; c < C; c++) {
                    size_t idx = apsolve_index(p, i, j, s, c);
                    int u = use[c];
                    if (view) {
                        /* a pair left out of the subset is +inf already */
                        int at = view->at[(size_t)s * C + c];
                        if (at < 0)
                            continue;
                        idx = apsolve_index(q, i, j, at / view->num_configs,
                                            at % view->num_configs);
                    }
                    if (u < 0) {
                        q->cost[idx] = INFINITY;
                        apsolve_times_drop(q, idx);
                    } else if (u == 2) {
                        transform(q, idx, &xs[c], l->a2a_overlap);
                        ++*transformed;
                    }
                }
            }
    free(xs);
    free(use);
    *out = q;
    return APSOLVE_OK;
fail:
    free(xs);
    free(use);
    apsolve_problem_free(&q);
    if (view)
        apsolve_subset_free(view);
    return rc;
}

void apsolve_ep_frameworks(int dp, int tp, int ep, int etp, int zero, struct ApsolveFwVerdict *v)
{
    unsigned ds = 1u << APSOLVE_FW_DEEPSPEED, tt = 1u << APSOLVE_FW_TORCHTITAN;
    if (ep <= 1)
        return;
    if ((v->runs & ds) && (dp % ep || (tp > 1 && etp != tp))) {
        v->runs &= ~ds;
        snprintf(v->why[APSOLVE_FW_DEEPSPEED], sizeof v->why[0], "experts on ep %d x etp %d: "
                 "its MoE layer takes ep_size ranks of the %d data-parallel ones and splits the "
                 "experts over all %d tp ranks or none", ep, etp, dp, tp);
    }
    if ((v->runs & tt) && zero == 0) {
        v->runs &= ~tt;
        snprintf(v->why[APSOLVE_FW_TORCHTITAN], sizeof v->why[0], "expert parallelism with "
                 "ZeRO-0: it builds expert parallelism inside FSDP's data-parallel shards "
                 "(ZeRO-2/3)");
    }
    if ((v->runs & tt) && etp != 1 && etp != tp) {
        v->runs &= ~tt;
        snprintf(v->why[APSOLVE_FW_TORCHTITAN], sizeof v->why[0], "expert tensor parallelism "
                 "%d: it takes 1 or the tensor-parallel size %d (ParallelDims._validate)", etp,
                 tp);
    }
}

int apsolve_ep_a2a_overlap_check(const struct ApsolveParallel *par, char *errbuf, size_t errlen)
{
    /* TransformerConfig.__post_init__ (megatron/core/transformer/
     * transformer_config.py, the `if self.overlap_moe_expert_parallel_comm`
     * block) asserts each of these */
    if (par->ep < 2) {
        snprintf(errbuf, errlen, "moe_a2a_overlap needs expert parallelism (ep >= 2): "
                 "Megatron-Core's overlap_moe_expert_parallel_comm is only supported with "
                 "expert model parallelism");
        return -1;
    }
    if (par->pp > 1 && par->vpp < 2) {
        snprintf(errbuf, errlen, "moe_a2a_overlap with pp=%d needs vpp >= 2: Megatron-Core "
                 "runs the MoE all-to-all overlap on the interleaved schedule only", par->pp);
        return -1;
    }
    if (par->recompute == COSTDB_RECOMPUTE_FULL) {
        snprintf(errbuf, errlen, "moe_a2a_overlap is not run with recompute=full: "
                 "Megatron-Core asks to disable full recomputation with "
                 "overlap_moe_expert_parallel_comm");
        return -1;
    }
    return 0;
}
