/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ZB-V's device paths under the memory rule, one config per stage
 * (chunk_floor.c paths_open; solver_int.h, ApsolveZbLists; docs/
 * performance.md, "ZB-V's device paths under the memory rule, one config
 * per stage (issue 38, zbfloor)").
 *
 * paths_open asks whether some cut of n stages on exactly D devices keeps
 * every device path of PyTorch's V order (schedule_zb.c; Qi et al. 2024,
 * "Pipeline Parallelism with Controllable Memory", section 6) below U =
 * B tau. Priced by the least f, b - w and w of a range's configs on its
 * submesh, each on its own, it closed none of the 17 middle counts of the
 * 126-layer file (apsbar). Those least figures may come from configs that
 * the count's DP never puts at that position, and from different configs.
 * A plan the DP of count n returns (dp_prep.c, item_mnss) has at stage r
 * (0-based from layer 0, succ = n - r stages from it to the end) an entry
 * idx with
 *   - its config allowed (apsolve_config_allowed), its cost finite and,
 *     under best, at most tau (chunk_floor.c's first claim);
 *   - succ - 1 <= apsolve_entry_mnss(p, opt, idx, n) (evaluate.c), which
 *     with the memory rule on is read through the count family
 *     (dp_prep.c apsolve_dp_family_init): the entry's fit count u over
 *     the sorted distinct in-flight values fv of the search's counts
 *     (apsolve_entry_fit_prefix), then bound[n][u], the bisection over
 *     the count's ranks with "fits" read as rank < u.
 * This file keeps, per (i, j, submesh s) of whole chunks, the configs that
 * pass the first test, each with its f, b - w, w and u, made the same way
 * (the same counts, fv, ranks and bisection; an entry of negative
 * intermediate, which the DP tests by the bisection at each n, gets u =
 * nf: allowed everywhere, which only lowers the floor). A config whose
 * f, b - w and w are each at most another's and whose u is at least its
 * is kept in its place (bound rises with u, so it is allowed wherever the
 * other is, and every path and prefix below is no longer with it). With
 * the memory rule off (no memory table, ignore_memory, inference, or an
 * in-flight count not defined) every kept config is allowed everywhere.
 *
 * paths_open then takes each stage at one of its configs allowed at
 * (n, r): its segment test and the prefix it passes on are that
 * config's, and a state moves on with the least prefix over the configs
 * that pass (a smaller prefix only loosens the paths after it, as
 * before). Every plan of n stages the DP can return under best is one
 * such cut with one such config per stage, so when no cut keeps every
 * path below U, none of those plans is under best: each[n] = +inf keeps
 * the search exact as in chunk_floor.c.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dp_int.h"
#include "solver_int.h"

void apsolve_zb_lists_free(ApsolveZbLists *z)
{
    free(z->at);
    free(z->cfg);
    free(z->bound);
    memset(z, 0, sizeof *z);
}

/* The count family's fv and bound (dp_prep.c apsolve_count_ranks, as
 * apsolve_dp_family_init makes them): 0, or -1 when the memory rule is
 * off for the DP's family (every entry then allowed here). */
static int family_bounds(ApsolveZbLists *z, const ApsolveProblem *p, const ApsolveOptions *opt,
                         int nmax, double **fvp)
{
    int ns[APSOLVE_MAX_LAYERS], count = 0, all, *rank = NULL;
    if (!p->memory || opt->ignore_memory || opt->inference)
        return -1;
    all = apsolve_dp_valid_counts(p, opt, apsolve_virtual(opt), ns); /* as counts_family */
    for (int q = 0; q < all; q++)
        if (ns[q] <= nmax)
            ns[count++] = ns[q];
    if (count < 1)
        return -1;
    z->nmax = ns[count - 1];
    /* not a count: nothing known, all allowed */
    if (apsolve_count_ranks(opt, ns, count, z->nmax, APSOLVE_UNBOUNDED, fvp, &z->nf, &rank,
                            &z->bound) != APSOLVE_OK) {
        z->bound = NULL;
        z->nf = 0;
        return -1;
    }
    free(rank);
    return 0;
}

/* Whether config c dominates d (the file comment). */
static int dominates(const ApsolveZbCfg *c, const ApsolveZbCfg *d)
{
    return c->f <= d->f && c->bw <= d->bw && c->w <= d->w && c->x <= d->x && c->u >= d->u;
}

int apsolve_zb_lists_build(ApsolveZbLists *z, const ApsolveStageFloor *f,
                           const ApsolveOptions *opt, int v, int nmax)
{
    const ApsolveProblem *p = f->p;
    int L = f->L, S = p->num_submeshes, K = p->num_configs;
    size_t cells = (size_t)L * L * S, n = 0, cap = 1024;
    double *fv = NULL;
    ApsolveZbCfg *tmp = malloc((size_t)(K > 0 ? K : 1) * sizeof *tmp);
    memset(z, 0, sizeof *z);
    z->at = malloc((cells + 1) * sizeof *z->at);
    z->cfg = malloc(cap * sizeof *z->cfg);
    if (!tmp || !z->at || !z->cfg)
        goto fail;
    z->on = family_bounds(z, p, opt, nmax, &fv) == 0;
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++) /* j < i too: every cell's start is set */
            for (int s = 0; s < S; s++) {
                size_t at = ((size_t)i * L + j) * S + s;
                int m = 0;
                z->at[at] = n;
                /* only whole chunks from a chunk's start are stages; a
                 * range none of whose entries costs tau or less has none */
                if (j < i || i % v || (j - i + 1) % v || !(f->cost[(size_t)i * L + j] <= f->tau))
                    continue;
                for (int k = 0; k < K; k++) {
                    size_t idx = apsolve_index(p, i, j, s, k);
                    double c = apsolve_cell_cost(p, idx, (size_t)s * K + k);
                    const ApsolveTimes *t;
                    ApsolveZbCfg e;
                    int keep = 1;
                    if (isinf(c) || c > f->tau || !apsolve_config_allowed(p, opt, s, k))
                        continue;
                    t = apsolve_times_at(p, idx);
                    e.f = t->fwd;
                    e.bw = t->bwd - t->wgrad;
                    e.w = t->wgrad;
                    e.x = t->fwd + t->bwd - t->wgrad; /* as chunk_floor.c's x */
                    e.u = z->nf;
                    if (z->on) {
                        const ApsolveMemory *mm = apsolve_memory_at(p, idx);
                        if (mm->intermediate >= 0)
                            e.u = apsolve_entry_fit_prefix(
                                mm, opt, apsolve_search_budget(opt, mm->avail), fv, z->nf);
                    }
                    for (int q = 0; q < m && keep; q++)
                        keep = !dominates(&tmp[q], &e);
                    if (!keep)
                        continue;
                    for (int q = 0; q < m;) /* those e dominates go */
                        if (dominates(&e, &tmp[q]))
                            tmp[q] = tmp[--m];
                        else
                            q++;
                    tmp[m++] = e;
                }
                if (n + (size_t)m > cap) {
                    ApsolveZbCfg *g;
                    while (n + (size_t)m > cap)
                        cap *= 2;
                    if (!(g = realloc(z->cfg, cap * sizeof *g)))
                        goto fail;
                    z->cfg = g;
                }
                memcpy(z->cfg + n, tmp, (size_t)m * sizeof *tmp);
                n += (size_t)m;
            }
    z->at[cells] = n;
    free(tmp);
    free(fv);
    return APSOLVE_OK;
fail:
    free(tmp);
    free(fv);
    apsolve_zb_lists_free(z);
    return APSOLVE_ENOMEM;
}
