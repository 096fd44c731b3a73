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

#include <pthread.h>

#include "context_parallel.h"
#include "problem_subset.h"
#include "session_int.h"

/* The bytes of the tables the cp candidates searched ahead may hold at
 * once (docs/performance.md, "apsolve's threads with bounded memory"):
 * each candidate running holds its table and its search's buffers, and
 * one finished candidate (the first in the serial order with a plan) keeps
 * them until it is taken; the others that finish free theirs. The
 * candidates ahead at once are as many tables of the size's problem as
 * this holds (a candidate's table is a subset of it), at most --threads;
 * where that is fewer than two, the serial loop runs. */
#ifndef APSOLVE_CP_AHEAD_BYTES
#define APSOLVE_CP_AHEAD_BYTES ((size_t)128 << 20)
#endif

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
    int bar_h, threads, ahead;        /* ahead: the candidates searched at once */
    int kept;                         /* the one finished candidate holding a table and
                                       * plan, -1: none (under lock) */
    pthread_mutex_t lock;
    ApsolveCpSpecOne one[48];
} ApsolveCpSpec;

/* Starts sp (on with threads > 1) for the candidates of r's size whose
 * layers' facts are cpa, each searched with the plan to beat bar (bar_h). */
void apsolve_cp_spec_init(ApsolveCpSpec *sp, ApsolveRun *r, const ApsolveProblem *p,
                          const ApsolveCpAuto *cpa, const ApsolvePlan *bar, int bar_h, int threads);
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
/* Whether submesh s of p can hold a plan of one layout with equal stages
 * (session_autocp.c, apsolve_auto_layouts): its devices d divide p's D
 * and n = D / d stages divide the L layers, n <= L and, max_stages > 0,
 * n <= max_stages. Where it cannot, the layouts of s have no plan (their
 * solves find none), so they are not solved (docs/performance.md, "The
 * cp step's layouts that cannot hold equal stages"). */
int apsolve_layout_stages_open(const ApsolveProblem *p, int s, int max_stages);
/* Frees what no candidate took. */
void apsolve_cp_spec_free(ApsolveCpSpec *sp);

#endif
