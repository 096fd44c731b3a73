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

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void apsolve_zb_lists_free(ApsolveZbLists *z)
{
    free(z->at);
    free(z->cfg);
    free(z->bound);
    memset(z, 0, sizeof *z);
}

/* The count family's fv and bound (dp_prep.c apsolve_dp_family_init, the
 * same steps): 0, or -1 when the memory rule is off for the DP's family
 * (every entry then allowed here). */
static int family_bounds(ApsolveZbLists *z, const ApsolveProblem *p, const ApsolveOptions *opt,
                         int nmax, double **fvp)
{
    int ns[APSOLVE_MAX_LAYERS], count = 0, all, nf = 0, *rank = NULL, top = 0;
    double *fv = NULL;
    if (!p->memory || opt->ignore_memory || opt->inference)
        return -1;
    all = apsolve_dp_valid_counts(p, opt, apsolve_virtual(opt), ns); /* as counts_family */
    for (int q = 0; q < all; q++)
        if (ns[q] <= nmax)
            ns[count++] = ns[q];
    if (count < 1)
        return -1;
    top = ns[count - 1];
    fv = malloc((size_t)top * (size_t)count * sizeof *fv);
    rank = malloc(((size_t)top + 1) * (size_t)top * sizeof *rank);
    if (!fv || !rank)
        goto off;
    for (int q = 0; q < count; q++)
        for (int k = 0; k < ns[q]; k++) {
            double x = apsolve_in_flight(opt, ns[q], k);
            if (isnan(x))
                goto off;
            fv[nf++] = x;
        }
    qsort(fv, (size_t)nf, sizeof *fv, cmp_dbl);
    z->nf = 0;
    for (int k = 0; k < nf; k++)
        if (z->nf == 0 || fv[k] != fv[z->nf - 1])
            fv[z->nf++] = fv[k];
    for (int q = 0; q < count; q++)
        for (int k = 0; k < ns[q]; k++) {
            double x = apsolve_in_flight(opt, ns[q], k);
            const double *hit = bsearch(&x, fv, (size_t)z->nf, sizeof *fv, cmp_dbl);
            rank[(size_t)ns[q] * (size_t)top + (size_t)k] = (int)(hit - fv);
        }
    z->nmax = top;
    z->bound = malloc(((size_t)top + 1) * ((size_t)z->nf + 1) * sizeof *z->bound);
    if (!z->bound)
        goto off;
    for (size_t k = 0; k < ((size_t)top + 1) * ((size_t)z->nf + 1); k++)
        z->bound[k] = APSOLVE_UNBOUNDED; /* not a count: nothing known, all allowed */
    for (int q = 0; q < count; q++) {
        int n = ns[q];
        const int *r = rank + (size_t)n * (size_t)top;
        for (int u = 0; u <= z->nf; u++) {
            int lo = 1, hi = n, m;
            if (r[n - 1] >= u) {
                m = -1;
            } else {
                while (lo < hi) {
                    int mid = lo + (hi - lo + 1) / 2;
                    if (r[n - mid] < u)
                        lo = mid;
                    else
                        hi = mid - 1;
                }
                m = lo == n ? APSOLVE_UNBOUNDED : lo - 1;
            }
            z->bound[(size_t)n * ((size_t)z->nf + 1) + (size_t)u] = m;
        }
    }
    free(rank);
    *fvp = fv;
    return 0;
off:
    free(fv);
    free(rank);
    free(z->bound);
    z->bound = NULL;
    z->nf = 0;
    return -1;
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
