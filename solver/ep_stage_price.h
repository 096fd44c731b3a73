/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An ep stage's price, inside the solver (ep_stage_price.c): an entry's
 * facts read once and priced under each layout, for expert_parallel.c's
 * problems (apsolve_ep_stage, in expert_parallel.h, is the whole of it
 * for one stage).
 */
#ifndef APSOLVE_EP_STAGE_PRICE_H
#define APSOLVE_EP_STAGE_PRICE_H

#include <stddef.h>
#include <stdint.h>

#include "collective.h"
#include "costdb.h"
#include "expert_parallel.h"

/* What an entry's placements say of its experts, whatever the layout
 * (logical (a, b) the entry's mesh), into *x. */
void apsolve_ep_facts(const CostdbPlacement *pl, size_t n, int a, int b, ApsolveEpFacts *x);
/* The sweep's FP8 facts (x's fp8_*) and the spec's moe_drop_pad; 0, or -1
 * when the sweep or its hardware row cannot be read. */
int apsolve_ep_fp8(struct Costdb *db, int64_t sweep, ApsolveEpFacts *x);
/* Entry facts x under layout l on hosts of M GPUs with fabric fab into
 * *out. */
void apsolve_ep_price(const ApsolveEpFacts *x, const CostdbFabric *fab, int M,
                      const ApsolveEpLayout *l, ApsolveEpStage *out);

#endif
