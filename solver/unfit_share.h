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
 * a shared one stays every sharer's.
 */
#ifndef APSOLVE_UNFIT_SHARE_H
#define APSOLVE_UNFIT_SHARE_H

#include <stdint.h>

#include "apsolve.h"

/* An open-addressing index of p's figures by their bytes: each slot 0 or
 * 1 + the place of a figure in p->unfit_table->figs. */
typedef struct ApsolveUnfitShare {
    uint32_t *slot;
    size_t cap, n; /* cap a power of two (0: none yet) */
} ApsolveUnfitShare;

/* Entry k of p gets the figures *u (u->fwd >= 0, finite or not, as
 * apsolve_unfit_put takes them): the held figures with the same bytes
 * where s has any, else a new one (apsolve_unfit_put), indexed in s.
 * Entry k must have none yet. APSOLVE_OK or APSOLVE_ENOMEM (p unchanged).
 * Only figures put through the same s are shared; p must not be given
 * figures otherwise while s is in use. */
int apsolve_unfit_share_put(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k,
                            const ApsolveUnfit *u);
void apsolve_unfit_share_free(ApsolveUnfitShare *s);

#endif
