/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The auto search's activation-offload candidates (session_autooffload.c)
 * as one-stage problems (not part of the public API). For each N the step
 * needs the DP's best plan of at most one stage (pp = 1) on the whole
 * table with layers 0 .. L-1 of the whole cluster composed for N offloaded
 * layers and only the pairs Megatron-Core offloads from left (the whole
 * cluster's recompute=none configs). Such a plan reads one option: the
 * range 0 .. L-1 on a submesh of all D devices (a stage of fewer layers or
 * devices leaves a state no one-stage plan ends from: dp_rows.c, "One
 * stage at most"). So the step solves a problem of one layer holding only
 * those pairs' entries of that range (apsolve_subset_range_problem),
 * composed in place per N by activation_offload.h's apsolve_offload_entry:
 * L - 1 solves of a few dozen entries instead of the whole table's
 * hundreds of thousands.
 *
 * The DP picks from that option, at every threshold and apply limit, the
 * first item (in (cost, config) order) within both whose bound lets it be
 * the last stage; the items it leaves out of the whole table (dominated,
 * or of other ranges) never are that item, so the one-layer problem gives
 * the same plan, cost and objective. What differs is only the search's
 * own counts (dp_evaluations, candidates: the whole table's other ranges
 * add thresholds and apply limits), and they are printed only for the plan
 * the step installs: that one, the winner's N, is solved once more on the
 * whole table (apsolve_offload_one_stage_whole), as before, and must give
 * the same objective. Test: solver-offload-view.
 */
#ifndef APSOLVE_OFFLOAD_ONE_STAGE_H
#define APSOLVE_OFFLOAD_ONE_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "activation_offload.h"
#include "apsolve.h"
#include "problem_subset.h"

struct Costdb;

/* Whether pair (s, c) of p is one Megatron-Core core_v0.19.0 offloads
 * from: a valid config of the whole cluster's submesh under recompute
 * none (its TransformerConfig refuses a pipeline and recomputation with
 * --cpu-offloading-num-layers; session_autooffload.c). */
int apsolve_offload_pair(const ApsolveProblem *p, int s, int c);

/* The whole-table problem of one N, the reference: a clone of p with
 * layers 0 .. L-1 of the whole cluster composed for n offloaded layers
 * (apsolve_offload_compose_with, src the sweep's) and every other entry of
 * that range +inf (a one-stage plan uses no other range). 0;
 * APSOLVE_ENOMEM; APSOLVE_EINVAL with why. */
int apsolve_offload_one_stage_whole(const ApsolveOffloadSource *src, const ApsolveProblem *p,
                                    int n, ApsolveProblem **out, char *why, size_t len);

/* The one-layer problem of p's offload pairs and what composes it. */
typedef struct ApsolveOffloadOneStage {
    ApsolveSubset v;                  /* p's offload pairs */
    ApsolveProblem *q;                /* their entries of layers 0 .. L-1, one layer */
    ApsolveOffloadSource src;         /* the host link and the layers' record */
    int layers;                       /* p's L */
} ApsolveOffloadOneStage;

/* Makes x for p with sweep's source. 0; APSOLVE_ENOMEM; APSOLVE_EDB with
 * why (no hardware row or model record: no offload plan);
 * APSOLVE_ENOTFOUND when p has no offload pair (no offload plan). */
int apsolve_offload_one_stage_new(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                                  ApsolveOffloadOneStage *x, char *why, size_t len);
/* The same with src, which x then owns (*src emptied, even on failure). */
int apsolve_offload_one_stage_make(const ApsolveProblem *p, ApsolveOffloadSource *src,
                                   ApsolveOffloadOneStage *x);
/* Composes x->q for n offloaded layers from p's entries. 0;
 * APSOLVE_EINVAL with why (apsolve_offload_entry's). */
int apsolve_offload_one_stage_compose(ApsolveOffloadOneStage *x, const ApsolveProblem *p, int n,
                                      char *why, size_t len);
/* Solves x->q by the auto search's headroom rule
 * (apsolve_solve_keep_headroom, o->search_headroom set as it leaves it);
 * *out the plan as a plan of p (layers 0 .. L-1, p's indices). As
 * apsolve_solve. */
int apsolve_offload_one_stage_solve(const ApsolveOffloadOneStage *x, ApsolveOptions *o,
                                    ApsolvePlan **out);
void apsolve_offload_one_stage_free(ApsolveOffloadOneStage *x);

#endif
