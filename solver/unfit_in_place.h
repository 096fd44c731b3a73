/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The entries a sweep judged out of memory, restored in the problem itself
 * for the auto search's cp and ep steps and put back after (not part of
 * the public API): what apsolve_unfit_open's clone holds (session_int.h:
 * each such entry whose time the sweep kept, through apsolve_unfit_restore),
 * without copying the whole table (142 MB on the 40-layer full space, the
 * cp step's largest copy). Only the entries restored are saved, and put
 * back bit for bit, so the problem is after the step what it was before.
 * The step reads the restored problem only between the two calls, as it
 * read the clone (docs/performance.md, "apsolve: the offload and cp steps
 * without whole-table solves and copies").
 */
#ifndef APSOLVE_UNFIT_IN_PLACE_H
#define APSOLVE_UNFIT_IN_PLACE_H

#include <stddef.h>

#include "apsolve.h"

/* One restored entry's former figures. */
typedef struct ApsolveUnfitSaved {
    size_t idx;
    double cost, fwd, bwd, wgrad, apply;
    ApsolveMemory memory;
    int mnss;
} ApsolveUnfitSaved;

typedef struct ApsolveUnfitUndo {
    ApsolveUnfitSaved *saved;
    size_t n;
} ApsolveUnfitUndo;

/* Restores p's out-of-memory entries in place, each one's former figures
 * into u. APSOLVE_OK (n 0: none, p unchanged) or APSOLVE_ENOMEM (p
 * unchanged). */
int apsolve_unfit_open_in_place(ApsolveProblem *p, ApsolveUnfitUndo *u);
/* Puts u's entries back into p and frees u. */
void apsolve_unfit_close_in_place(ApsolveProblem *p, ApsolveUnfitUndo *u);

#endif
