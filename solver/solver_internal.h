/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the solver's source files (not installed, not part of
 * the public API): filling a stage's report fields from the table, pricing
 * a finished plan, and a monotonic clock.
 */
#ifndef APSOLVE_SOLVER_INTERNAL_H
#define APSOLVE_SOLVER_INTERNAL_H

#include "apsolve.h"

/* Sanitised cost of an entry: NaN, negative and padding configs -> +inf. */
double apsolve_entry_cost(const ApsolveProblem *p, size_t idx);
/* Fills cost, fwd/bwd, memory fields of st (whose layers, submesh and config
 * are set; submesh/config may be -1) for a position with succ stages from it
 * to the end. */
void apsolve_stage_fill(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolveStage *st,
                        int succ);
/* Sets sum/max/cost/devices/feasible of a plan whose stages are filled. The
 * sum is accumulated from the last stage to the first, the order the DP
 * uses, so equal plans give bit-identical costs everywhere. */
void apsolve_plan_price(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolvePlan *plan);
/* Seconds from a monotonic clock. */
double apsolve_now(void);

#endif
