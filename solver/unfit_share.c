/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Out-of-memory figures kept once per distinct value (unfit_share.h).
 */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "unfit_share.h"

static uint64_t figs_hash(const ApsolveUnfit *u)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0);
    approf_hash128_update(&h, u, sizeof *u); /* no padding: 3 doubles, 4 int64 */
    return h.a ^ h.b;
}

/* Where the figures with u's bytes are indexed in s, or the empty slot
 * they would take. */
static size_t find(const ApsolveUnfitShare *s, const ApsolveUnfitTable *t, const ApsolveUnfit *u,
                   uint64_t h)
{
    size_t mask = s->cap - 1, i = (size_t)h & mask;
    while (s->slot[i] && memcmp(&t->figs[s->slot[i] - 1], u, sizeof *u))
        i = (i + 1) & mask;
    return i;
}

/* Twice the slots (or 4096 at first), every held figure placed again. */
static int rehash(ApsolveUnfitShare *s, const ApsolveUnfitTable *t)
{
    size_t cap = s->cap ? 2 * s->cap : 4096;
    uint32_t *old = s->slot;
    size_t ocap = s->cap;
    if (cap > SIZE_MAX / sizeof *s->slot || !(s->slot = calloc(cap, sizeof *s->slot))) {
        s->slot = old;
        return APSOLVE_ENOMEM;
    }
    s->cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i]) {
            const ApsolveUnfit *f = &t->figs[old[i] - 1];
            s->slot[find(s, t, f, figs_hash(f))] = old[i];
        }
    free(old);
    return APSOLVE_OK;
}

int apsolve_unfit_share_put(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k,
                            const ApsolveUnfit *u)
{
    ApsolveUnfitTable *t;
    uint64_t h;
    size_t i;
    int rc;
    if (!(u->fwd >= 0)) /* none: as apsolve_unfit_put clears it */
        return apsolve_unfit_put(p, k, u);
    if ((rc = apsolve_unfit_table_new(p)) != APSOLVE_OK)
        return rc;
    t = p->unfit_table;
    if (2 * (s->n + 1) > s->cap && (rc = rehash(s, t)) != APSOLVE_OK)
        return rc;
    h = figs_hash(u);
    i = find(s, t, u, h);
    if (s->slot[i]) { /* held: entry k points at them */
        t->slot[k] = s->slot[i];
        return APSOLVE_OK;
    }
    /* new: stored (apsolve_unfit_put writes no figure another entry holds) */
    if ((rc = apsolve_unfit_put(p, k, u)) != APSOLVE_OK)
        return rc;
    s->slot[i] = t->slot[k];
    s->n++;
    return APSOLVE_OK;
}

void apsolve_unfit_share_free(ApsolveUnfitShare *s)
{
    free(s->slot);
    memset(s, 0, sizeof *s);
}
