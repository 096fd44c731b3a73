/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the cp price needs from a stage's placements (docs/context-parallel.md):
 * its attention layers, the sequence and the projections' widths, read from
 * one range's placements or folded from its single layers' (a range with no
 * placements of its own: composed from single layers, profile mode
 * individual). Shared by --parallel's cp stage and the auto search's tables.
 */
#ifndef APSOLVE_CP_FACTS_H
#define APSOLVE_CP_FACTS_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"
#include "collective.h"

struct Costdb;

/* What a stage's placements show that the cp price needs (the same at
 * every config of the stage: the shapes are the global ones). */
typedef struct CpFacts {
    int known, layers;
    int64_t seq, batch;
    double qw, kvw, dsize;
    CostdbFabric f;
} CpFacts;

/* Reads stage (start..end, submesh s, config c)'s facts from its own
 * placements (none: known, no layers, no sequence). 0; -1 with why. */
int apsolve_cp_read_facts(struct Costdb *db, int64_t sweep, int start, int end, int s, int c,
                          CpFacts *x, char *why, size_t len);

/* Range i..j's facts summed from its layers' in cache (no reads): unknown
 * (known 0) from its first layer without facts on. */
void apsolve_cp_fold_facts(const CpFacts *cache, int i, int j, CpFacts *x);

/* Range i..j's facts: each layer's read once into cache[0..L) (its first
 * finite entry of the single layer) up to the first without them, then
 * folded. as_restored: an entry counts as finite when it is finite in p
 * with its out-of-memory entries restored (apsolve_unfit_restored_cost),
 * whether or not they are yet. 0; -1 with why. */
int apsolve_cp_range_facts(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                           int as_restored, CpFacts *cache, int i, int j, CpFacts *x, char *why,
                           size_t len);

#endif
