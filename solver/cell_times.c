/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-cell times table (ApsolveTimesTable, apsolve.h): a cell's
 * forward, backward and weight-gradient seconds held only for the cells
 * that have them, behind one 32-bit slot per cell (docs/performance.md,
 * "apsolve's per-cell fwd/bwd/wgrad behind a slot (issue 38, apsfwd)"), as
 * memory_table.c holds the memory figures. On the 126-layer 405B file
 * 1,231,208 of its 6,912,864 cells have times: 30 MB of them and 28 MB of
 * slots instead of three dense tables of 55 MB each.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "slot_store.h"
#include "solver_int.h"

/* The figures' capacity: one for each cell and figs[0], the most a table
 * can hold (a cell has one own slot at most), so that it never grows.
 * Allocated, not written: on a large problem malloc maps it, and only the
 * pages of the figures put count (1,231,209 of 6,912,865 on the 126-layer
 * file). Grown from a small first capacity instead, each realloc copied
 * the figures and left the old block's pages resident in the heap. */
static size_t full_cap(size_t cells)
{
    return cells + 1;
}

ApsolveTimesTable *apsolve_times_table_new(size_t cells)
{
    ApsolveTimesTable *t = calloc(1, sizeof *t);
    if (!t || !(t->slot = calloc(cells ? cells : 1, sizeof *t->slot)) ||
        !(t->figs = malloc(full_cap(cells) * sizeof *t->figs))) {
        apsolve_times_table_free(t);
        return NULL;
    }
    /* figs[0]: every cell's until put, what the dense tables were filled
     * with (no entry: +inf; weight gradients unknown) */
    t->figs[0] = (ApsolveTimes){INFINITY, INFINITY, -1.0};
    t->n = 1;
    t->cap = full_cap(cells);
    return t;
}

int apsolve_times_table_add(ApsolveProblem *p)
{
    if (!p->times && !(p->times = apsolve_times_table_new(apsolve_problem_cells(p))))
        return APSOLVE_ENOMEM;
    return APSOLVE_OK;
}

ApsolveTimesTable *apsolve_times_table_clone(const ApsolveTimesTable *t, size_t cells)
{
    ApsolveTimesTable *u = calloc(1, sizeof *u);
    size_t cap = t->n > full_cap(cells) ? t->n : full_cap(cells);
    void *figs;
    if (!u ||
        apsolve_slot_copy(t->slot, cells, t->figs, sizeof *t->figs, t->n, cap, &u->slot, &figs)) {
        free(u);
        return NULL;
    }
    u->figs = figs;
    u->n = t->n;
    u->cap = cap;
    return u;
}

void apsolve_times_table_free(ApsolveTimesTable *t)
{
    if (!t)
        return;
    free(t->slot);
    free(t->figs);
    free(t);
}

size_t apsolve_times_table_bytes(const ApsolveTimesTable *t, size_t cells)
{
    return cells * sizeof *t->slot + t->n * sizeof *t->figs;
}

int apsolve_times_room(ApsolveProblem *p, size_t more)
{
    ApsolveTimesTable *t = p->times;
    ApsolveTimes *f = apsolve_slot_room(t->figs, sizeof *f, t->n, &t->cap, more);
    if (!f)
        return APSOLVE_ENOMEM;
    t->figs = f;
    return APSOLVE_OK;
}

ApsolveTimes *apsolve_times_own(ApsolveProblem *p, size_t k)
{
    ApsolveTimesTable *t = p->times;
    if (!t->slot[k]) {
        if (apsolve_times_room(p, 1) != APSOLVE_OK)
            return NULL;
        t->figs[t->n] = t->figs[0];
        t->slot[k] = (uint32_t)t->n++;
    }
    return &t->figs[t->slot[k]];
}

int apsolve_times_put(ApsolveProblem *p, size_t k, const ApsolveTimes *x)
{
    ApsolveTimesTable *t = p->times;
    uint32_t s = t->slot[k];
    const ApsolveTimes *z = &t->figs[0];
    if (s) { /* the cell's own times: no other cell reads them */
        t->figs[s] = *x;
        return APSOLVE_OK;
    }
    /* what the cell reads already: none appended (field by field, as
     * apsolve_memory_put; +inf and -1 have one encoding each, so a value
     * equal to figs[0]'s reads back the same bits) */
    if (x->fwd == z->fwd && x->bwd == z->bwd && x->wgrad == z->wgrad)
        return APSOLVE_OK;
    if (t->n == t->cap && apsolve_times_room(p, 1) != APSOLVE_OK)
        return APSOLVE_ENOMEM;
    t->figs[t->n] = *x;
    t->slot[k] = (uint32_t)t->n++;
    return APSOLVE_OK;
}

void apsolve_times_drop(ApsolveProblem *p, size_t k)
{
    ApsolveTimesTable *t = p->times;
    /* a cell without its own times reads figs[0], whose fwd and bwd are
     * +inf already: only own times are written */
    if (t && t->slot[k])
        t->figs[t->slot[k]].fwd = t->figs[t->slot[k]].bwd = INFINITY;
}
