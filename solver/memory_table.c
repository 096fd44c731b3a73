/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory statistics table (ApsolveMemoryTable, apsolve.h): figures
 * held only for the cells that have them, behind one 32-bit slot per cell
 * (docs/performance.md, "apsolve's memory table sparse (issue 38)"). On the
 * 126-layer 405B file 1,231,208 of its 6,912,864 cells have figures: 39 MB
 * of them and 28 MB of slots instead of 221 MB, one figure per cell.
 */
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "slot_store.h"
#include "solver_int.h"

/* The figures' capacity: one for each cell and figs[0], the most a table
 * can hold (a cell has one own slot at most), so that it never grows, as
 * the times table's (cell_times.c). Allocated, not written: only the pages
 * of the figures put count. Grown by doubling from 1,024 instead, on the
 * 126-layer file the load's reallocations copied the figures into fresh
 * blocks whose pages the load's populate-ahead (dbload.c, populate_figs)
 * had not reached: some 2,700 faults (docs/perf-apsdense.md). */
static size_t full_cap(size_t cells)
{
    return cells + 1;
}

ApsolveMemoryTable *apsolve_memory_table_new(size_t cells)
{
    ApsolveMemoryTable *t = calloc(1, sizeof *t);
    if (!t || !(t->slot = calloc(cells ? cells : 1, sizeof *t->slot)) ||
        !(t->figs = malloc(full_cap(cells) * sizeof *t->figs))) {
        apsolve_memory_table_free(t);
        return NULL;
    }
    t->figs[0] = (ApsolveMemory){0}; /* every cell's until put, all 0 */
    t->n = 1;
    t->cap = full_cap(cells);
    return t;
}

int apsolve_memory_table_add(ApsolveProblem *p)
{
    if (!p->memory && !(p->memory = apsolve_memory_table_new(apsolve_problem_cells(p))))
        return APSOLVE_ENOMEM;
    return APSOLVE_OK;
}

ApsolveMemoryTable *apsolve_memory_table_clone(const ApsolveMemoryTable *t, size_t cells)
{
    ApsolveMemoryTable *u = calloc(1, sizeof *u);
    void *figs;
    if (!u || apsolve_slot_copy(t->slot, cells, t->figs, sizeof *t->figs, t->n, t->n, &u->slot,
                                &figs)) {
        free(u);
        return NULL;
    }
    u->figs = figs;
    u->n = u->cap = t->n;
    return u;
}

void apsolve_memory_table_free(ApsolveMemoryTable *t)
{
    if (!t)
        return;
    free(t->slot);
    free(t->figs);
    free(t);
}

size_t apsolve_memory_table_bytes(const ApsolveMemoryTable *t, size_t cells)
{
    return cells * sizeof *t->slot + t->n * sizeof *t->figs;
}

int apsolve_memory_room(ApsolveProblem *p, size_t more)
{
    ApsolveMemoryTable *t = p->memory;
    ApsolveMemory *f = apsolve_slot_room(t->figs, sizeof *f, t->n, &t->cap, more);
    if (!f)
        return APSOLVE_ENOMEM;
    t->figs = f;
    return APSOLVE_OK;
}

ApsolveMemory *apsolve_memory_own(ApsolveProblem *p, size_t k)
{
    ApsolveMemoryTable *t = p->memory;
    if (!t->slot[k]) {
        if (apsolve_memory_room(p, 1) != APSOLVE_OK)
            return NULL;
        t->figs[t->n] = t->figs[0];
        t->slot[k] = (uint32_t)t->n++;
    }
    return &t->figs[t->slot[k]];
}

int apsolve_memory_put(ApsolveProblem *p, size_t k, const ApsolveMemory *m)
{
    ApsolveMemoryTable *t = p->memory;
    uint32_t s = t->slot[k];
    const ApsolveMemory *z = &t->figs[0];
    if (s) { /* the cell's own figures: no other cell reads them */
        t->figs[s] = *m;
        return APSOLVE_OK;
    }
    /* what the cell reads already (field by field: the load puts 1.2 M
     * figures on the 126-layer file, a memcmp call each was 1/3 of this) */
    if (m->peak == z->peak && m->intermediate == z->intermediate && m->initial == z->initial &&
        m->avail == z->avail)
        return APSOLVE_OK;
    if (t->n == t->cap && apsolve_memory_room(p, 1) != APSOLVE_OK)
        return APSOLVE_ENOMEM;
    t->figs[t->n] = *m;
    t->slot[k] = (uint32_t)t->n++;
    return APSOLVE_OK;
}
