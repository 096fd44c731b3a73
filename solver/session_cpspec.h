/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cp candidates of one micro-batch size searched side by side
 * (session_autocp.c, auto_cp_search, with --threads above 1 and no ep
 * step; docs/performance.md, "apsolve's independent searches on several
 * cores"). Each candidate's table and search (apsolve_cp_auto_table,
 * apsolve_auto_layouts) run ahead on the pool with the plan to beat that
 * the size's first candidate has (the best so far, or the plain plan).
 * The candidates are then taken in the serial order: a candidate's own
 * search is the serial one's exactly while no candidate before it has
 * changed the best so far (its plan to beat is then the same); after one
 * has, the candidate is searched again in the serial order, as before.
 */
#ifndef APSOLVE_SESSION_CPSPEC_H
#define APSOLVE_SESSION_CPSPEC_H

#include "context_parallel.h"
#include "problem_subset.h"
#include "session_int.h"

typedef struct ApsolveCpSpecOne {
    int i, cp, comm, micro_batches;   /* cps index, cp, comm, the candidate's count */
    int64_t micro;                    /* its micro-batch size */
    ApsolveCand c;                    /* base with its table (p, while pl) and options */
    ApsolveSubset v;                  /* the table's map (while pl) */
    ApsolvePlan *pl;
    int h, fail, cut_inexact, taken;
    double bound;
} ApsolveCpSpecOne;

typedef struct ApsolveCpSpec {
    int on, n;
    ApsolveRun *r;
    ApsolveRequest quiet;             /* r->a without messages: a failure is searched
                                       * again in the serial order, which says it */
    const ApsolveCpAuto *cpa;
    const ApsolvePlan *bar;
    int bar_h, threads;
    ApsolveCpSpecOne one[48];
} ApsolveCpSpec;

/* Starts sp (on with threads > 1) for the candidates of r's size whose
 * layers' facts are cpa, each searched with the plan to beat bar (bar_h). */
void apsolve_cp_spec_init(ApsolveCpSpec *sp, ApsolveRun *r, const ApsolveCpAuto *cpa,
                          const ApsolvePlan *bar, int bar_h, int threads);
/* Notes candidate i (cps index) of base c (its p not read) with cp, comm,
 * micro_batches and micro-batch size micro. */
void apsolve_cp_spec_add(ApsolveCpSpec *sp, int i, const ApsolveCand *c, int cp, int comm,
                         int micro_batches, int64_t micro);
/* The pass after pass: after pass 0 (noting) the noted candidates are
 * searched on the pool; 1 then, 2 after pass 1. */
int apsolve_cp_spec_next(ApsolveCpSpec *sp, int pass);
/* Candidate i's search ahead, when it is the serial one's (changed 0: no
 * candidate before it changed the best so far) and did not fail: its
 * candidate, map, plan, headroom and bound, owned by the caller from
 * then, r's cut_inexact counted; 1. Else 0 (the caller searches). */
int apsolve_cp_spec_take(ApsolveCpSpec *sp, int i, int changed, ApsolveCand *c, ApsolveSubset *v,
                         ApsolvePlan **pl, int *h, double *bound);
/* Frees what no candidate took. */
void apsolve_cp_spec_free(ApsolveCpSpec *sp);

#endif
