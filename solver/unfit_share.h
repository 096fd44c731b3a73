/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Out-of-memory figures kept once per distinct value (not part of the public
 * API). A sweep's entries share their cost rows (stage_cost holds each
 * distinct row once), so many out-of-memory entries have the same figures:
 * the 126-layer 405B file has 1,745,172 of them with 105,948 distinct
 * figures (docs/performance.md, "apsolve's out-of-memory figures held
 * once"). While a problem is filled, ApsolveUnfitShare points every entry
 * with figures already held at them (slot[k] of ApsolveUnfitTable) instead
 * of storing a copy. Readers see the same figures through apsolve_unfit_at;
 * a figure once referenced is never written again (apsolve_unfit_put), so
 * a shared one stays every sharer's. A caller that knows which figures are
 * equal without their bytes (the load: an entry's pair of cost rows) puts
 * them by a key, and an entry whose key was put before gets that put's
 * slot value without figures (apsolve_unfit_share_put_known).
 */
#ifndef APSOLVE_UNFIT_SHARE_H
#define APSOLVE_UNFIT_SHARE_H

#include <stdint.h>

#include "apsolve.h"

/* Puts waiting for apsolve_unfit_share_flush, done a batch at a time so
 * that the index's and the figures' cache misses of a batch overlap (each
 * lookup reads a random slot of the index and, where it holds one, a
 * random figure: two misses an entry, otherwise one after the other). */
#define APSOLVE_UNFIT_SHARE_BATCH 64
typedef struct ApsolveUnfitSharePending {
    size_t k;
    ApsolveUnfit u;
    uint64_t h;
    uint64_t key; /* the caller's key of u (0: none) */
    int known;    /* put_known's: entry k gets slot value v, u unset */
    uint32_t v;
} ApsolveUnfitSharePending;

typedef struct ApsolveUnfitShareKey {
    uint64_t key;
    uint32_t v;
} ApsolveUnfitShareKey;

/* An open-addressing index of p's figures by their bytes: each slot 0 or
 * 1 + the place of a figure in p->unfit_table->figs; and the puts not yet
 * done. Zero-initialised: empty. */
typedef struct ApsolveUnfitShare {
    uint32_t *slot;
    size_t cap, n; /* cap a power of two (0: none yet) */
    /* the caller's keys (apsolve_unfit_share_put_keyed): open addressing,
     * key 0 empty, each with the slot value its figures got (key and
     * value side by side: one cache line a lookup) */
    ApsolveUnfitShareKey *memo;
    size_t mcap, mn;
    ApsolveUnfitSharePending pending[APSOLVE_UNFIT_SHARE_BATCH];
    size_t npending;
} ApsolveUnfitShare;

/* Entry k of p gets the figures *u, as apsolve_unfit_put gives them
 * (u->fwd < 0 or NaN: none), but where s holds figures with the same
 * bytes entry k points at those instead of a copy. The put may wait:
 * p's unfit table is complete only after apsolve_unfit_share_flush; the
 * puts are done in the order given. APSOLVE_OK or APSOLVE_ENOMEM (then the
 * batch's puts not done are dropped). Only figures put through the same s
 * are shared; p must not be given figures otherwise while s is in use. */
int apsolve_unfit_share_put(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k,
                            const ApsolveUnfit *u);
/* apsolve_unfit_share_put with the caller's key of *u: a non-zero number
 * that the caller gives with these same figures only (then
 * apsolve_unfit_share_put_known can put them by their key alone); key 0:
 * none, apsolve_unfit_share_put. */
int apsolve_unfit_share_put_keyed(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k,
                                  uint64_t key, const ApsolveUnfit *u);
/* Entry k gets the figures of key (non-zero) when a flushed put_keyed gave
 * them: the put is queued as apsolve_unfit_share_put's would be, with the
 * same result (the held figures that have those bytes), and 1 is
 * returned; 0 when key is not known yet (the caller puts the figures with
 * put_keyed); APSOLVE_ENOMEM as apsolve_unfit_share_put. */
int apsolve_unfit_share_put_known(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k,
                                  uint64_t key);
/* The waiting puts done; APSOLVE_OK or APSOLVE_ENOMEM (the rest dropped). */
int apsolve_unfit_share_flush(ApsolveUnfitShare *s, ApsolveProblem *p);
/* Frees the index and the keys; puts still waiting are dropped (flush
 * first). */
void apsolve_unfit_share_free(ApsolveUnfitShare *s);

#endif
