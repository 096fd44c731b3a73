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

/* What puts the restored entries back. The loader leaves an out-of-memory
 * entry's cell as apsolve_problem_new made it (its figures go to the unfit
 * table), so the restored entries' former figures are nearly all the same:
 * those of the first one restored (first) are kept once, a bit per cell
 * says which cells were restored, and only an entry whose former figures
 * differ from first's in any bit is saved whole (docs/performance.md,
 * "apsolve: the cp step's undo of the restored entries"). */
typedef struct ApsolveUnfitUndo {
    ApsolveUnfitSaved *saved;         /* [nsaved] those that differ from first's, idx ascending */
    size_t n;                         /* entries restored */
    size_t nsaved;
    unsigned char *restored;          /* bit k: cell k restored (NULL: none) */
    ApsolveUnfitSaved first;          /* the first restored entry's former figures */
} ApsolveUnfitUndo;

/* Restores p's out-of-memory entries in place, each one's former figures
 * into u. APSOLVE_OK (n 0: none, p unchanged) or APSOLVE_ENOMEM (p
 * unchanged). */
int apsolve_unfit_open_in_place(ApsolveProblem *p, ApsolveUnfitUndo *u);
/* Entry k's cost as apsolve_unfit_open_in_place leaves it: the restored
 * cost (the sum of the kept phases) where it restores k, else p's. The
 * same whether or not p is restored already (a restored entry's cost is
 * that sum; one the restore left alone is as it was), so a step that reads
 * only which entries have a time can read it before restoring, and restore
 * only when it reads more (docs/performance.md, "apsolve: the cp step's
 * restore and the stored entries put back only when read"). */
double apsolve_unfit_restored_cost(const ApsolveProblem *p, size_t k);
/* Puts u's entries back into p and frees u. */
void apsolve_unfit_close_in_place(ApsolveProblem *p, ApsolveUnfitUndo *u);

#endif
