/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Out-of-memory entries restored in place and put back (unfit_in_place.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver_int.h"
#include "unfit_in_place.h"

/* Whether apsolve_unfit_restore changes entry k of p (as apsolve_unfit_open
 * restores it in its clone). */
static int restorable(const ApsolveProblem *p, size_t k)
{
    return !isfinite(p->cost[k]) && apsolve_unfit_at(p, k) && p->fwd_cost && p->bwd_cost &&
           p->memory;
}

int apsolve_unfit_open_in_place(ApsolveProblem *p, ApsolveUnfitUndo *u)
{
    size_t cells = apsolve_problem_cells(p), n = 0;
    memset(u, 0, sizeof *u);
    if (!p->unfit_table)
        return APSOLVE_OK;
    for (size_t k = 0; k < cells; k++)
        n += (size_t)restorable(p, k);
    if (!n)
        return APSOLVE_OK;
    if (!(u->saved = malloc(n * sizeof *u->saved)))
        return APSOLVE_ENOMEM;
    for (size_t k = 0; k < cells; k++) {
        ApsolveUnfitSaved *x;
        if (!restorable(p, k))
            continue;
        x = &u->saved[u->n++];
        x->idx = k;
        x->cost = p->cost[k];
        x->fwd = p->fwd_cost[k];
        x->bwd = p->bwd_cost[k];
        x->wgrad = p->wgrad_cost ? p->wgrad_cost[k] : 0;
        x->apply = p->apply_cost[k];
        x->memory = p->memory[k];
        x->mnss = p->max_n_succ_stages[k];
        apsolve_unfit_restore(p, k);
    }
    return APSOLVE_OK;
}

void apsolve_unfit_close_in_place(ApsolveProblem *p, ApsolveUnfitUndo *u)
{
    for (size_t i = 0; i < u->n; i++) {
        const ApsolveUnfitSaved *x = &u->saved[i];
        size_t k = x->idx;
        p->cost[k] = x->cost;
        p->fwd_cost[k] = x->fwd;
        p->bwd_cost[k] = x->bwd;
        if (p->wgrad_cost)
            p->wgrad_cost[k] = x->wgrad;
        p->apply_cost[k] = x->apply;
        p->memory[k] = x->memory;
        p->max_n_succ_stages[k] = x->mnss;
    }
    free(u->saved);
    memset(u, 0, sizeof *u);
}
