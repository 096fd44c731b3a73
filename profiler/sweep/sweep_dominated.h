/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dominated variants (docs/variants.md, "Dominated variants"): the entries
 * of a finished sweep that no plan of apsolve or apreport can read in
 * place of another variant of the same (range, submesh, logical mesh,
 * batch option), left out unless `approf sweep --keep-dominated`.
 */
#ifndef APPROF_SWEEP_DOMINATED_H
#define APPROF_SWEEP_DOMINATED_H

#include <stddef.h>
#include <stdint.h>

#include "costdb.h"

/* What apsolve reads of one (i, j, s, c) entry, per phase (0 forward, 1
 * backward), as the stage rows hand them over (costdb_rows.h): seconds
 * (finite and >= 0 in both phases, or the variant is not a candidate),
 * weight-gradient and apply seconds (< 0 unknown), the memory figures. */
typedef struct ApprofVariantFigures {
    int config;
    double cost[2], wgrad[2], apply[2];
    int64_t peak[2], intermediate[2], initial[2], avail[2];
} ApprofVariantFigures;

/* Whether variant x (config xc) may be left out because of d (config dc),
 * both entries of the same range and submesh: the rule of docs/variants.md,
 * "Dominated variants" (the scope no knob of apsolve reads by identity,
 * then d no worse in every figure, and first in every order apsolve breaks
 * ties by). */
int approf_variant_dominated(const CostdbConfig *dc, const ApprofVariantFigures *d,
                             const CostdbConfig *xc, const ApprofVariantFigures *x);

/* Deletes from the sweep's database the entries of every variant some
 * other stored variant of its range and submesh dominates
 * (approf_variant_dominated), with the cost rows left unused; placements
 * and configs stay. *left_out: how many (i, j, s, c) entries went. 0 or a
 * negative COSTDB_E* code (nothing deleted; costdb_errmsg says why). */
int approf_sweep_leave_out_dominated(Costdb *db, int64_t sweep_id, size_t *left_out);

#endif
