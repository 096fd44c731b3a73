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
    return !isfinite(p->cost[k]) && apsolve_unfit_at(p, k) && p->times && p->memory;
}

double apsolve_unfit_restored_cost(const ApsolveProblem *p, size_t k)
{
    /* apsolve_unfit_restore's cost: its sum of the kept phases */
    if (restorable(p, k)) {
        const ApsolveUnfit *u = apsolve_unfit_at(p, k);
        return u->fwd + u->bwd;
    }
    return p->cost[k];
}

/* Entry k's figures as they stand, into x (its padding zero). */
static void read_figures(const ApsolveProblem *p, size_t k, ApsolveUnfitSaved *x)
{
    memset(x, 0, sizeof *x);
    x->idx = k;
    x->cost = p->cost[k];
    x->fwd = apsolve_times_at(p, k)->fwd;
    x->bwd = apsolve_times_at(p, k)->bwd;
    x->wgrad = apsolve_times_at(p, k)->wgrad;
    x->apply = p->apply_cost[k];
    x->memory = *apsolve_memory_at(p, k);
    x->mnss = p->max_n_succ_stages[k];
}

/* Whether x and y hold the same figures bit for bit (a NaN is the same
 * NaN, -0 is not 0), whatever their cells. */
static int same_figures(const ApsolveUnfitSaved *x, const ApsolveUnfitSaved *y)
{
    return !memcmp(&x->cost, &y->cost, sizeof x->cost) &&
           !memcmp(&x->fwd, &y->fwd, sizeof x->fwd) && !memcmp(&x->bwd, &y->bwd, sizeof x->bwd) &&
           !memcmp(&x->wgrad, &y->wgrad, sizeof x->wgrad) &&
           !memcmp(&x->apply, &y->apply, sizeof x->apply) &&
           !memcmp(&x->memory, &y->memory, sizeof x->memory) && x->mnss == y->mnss;
}

int apsolve_unfit_open_in_place(ApsolveProblem *p, ApsolveUnfitUndo *u)
{
    size_t cells = apsolve_problem_cells(p), n = 0, differ = 0;
    memset(u, 0, sizeof *u);
    if (!p->unfit_table)
        return APSOLVE_OK;
    /* how many are restored, and how many of them differ from the first */
    for (size_t k = 0; k < cells; k++) {
        ApsolveUnfitSaved x;
        if (!restorable(p, k))
            continue;
        read_figures(p, k, &x);
        if (!n++)
            u->first = x;
        else
            differ += !same_figures(&x, &u->first);
    }
    if (!n)
        return APSOLVE_OK;
    u->restored = calloc(cells / 8 + 1, 1);
    u->saved = differ ? malloc(differ * sizeof *u->saved) : NULL;
    /* room for every restored entry's memory figures and times: each
     * restore below puts them (apsolve_unfit_restore) */
    if (!u->restored || (differ && !u->saved) || apsolve_memory_room(p, n) != APSOLVE_OK ||
        apsolve_times_room(p, n) != APSOLVE_OK) {
        free(u->restored);
        free(u->saved);
        memset(u, 0, sizeof *u);
        return APSOLVE_ENOMEM;
    }
    for (size_t k = 0; k < cells; k++) {
        ApsolveUnfitSaved x;
        if (!restorable(p, k))
            continue;
        read_figures(p, k, &x);
        if (!same_figures(&x, &u->first))
            u->saved[u->nsaved++] = x;
        u->restored[k / 8] |= (unsigned char)(1u << (k % 8));
        u->n++;
        apsolve_unfit_restore(p, k);
    }
    return APSOLVE_OK;
}

void apsolve_unfit_close_in_place(ApsolveProblem *p, ApsolveUnfitUndo *u)
{
    size_t cells = u->restored ? apsolve_problem_cells(p) : 0, next = 0;
    for (size_t k = 0; k < cells; k++) {
        const ApsolveUnfitSaved *x = &u->first;
        if (!(u->restored[k / 8] & (1u << (k % 8))))
            continue;
        /* saved is in cell order: the next one saved, or first's figures */
        if (next < u->nsaved && u->saved[next].idx == k)
            x = &u->saved[next++];
        p->cost[k] = x->cost;
        p->apply_cost[k] = x->apply;
        /* the cell's own figures and times since the restore, or figs[0]'s:
         * no room taken (apsolve_memory_put, apsolve_times_put) */
        (void)apsolve_times_put(p, k, &(ApsolveTimes){x->fwd, x->bwd, x->wgrad});
        (void)apsolve_memory_put(p, k, &x->memory);
        p->max_n_succ_stages[k] = x->mnss;
    }
    free(u->saved);
    free(u->restored);
    memset(u, 0, sizeof *u);
}
