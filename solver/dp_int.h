/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tables of the exact stage/mesh search (solver/dp.c, docs/solver.md):
 * options and items of each row, the live states, the frontier per state.
 * Private to dp.c and dp_rows.c (one threshold DP's rows).
 */
#ifndef APSOLVE_DP_INT_H
#define APSOLVE_DP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"

typedef struct DpItem {
    double cost;
    int mnss;                         /* clamped to L */
    int config;
    int opt;                          /* index of its DpOpt */
} DpItem;

typedef struct DpOpt {
    int end, submesh, dev;
    int item_off, item_n;
} DpOpt;

typedef struct Dp {
    const ApsolveProblem *p;
    const ApsolveOptions *opt;
    int L, D, NS;                     /* NS = most stages + 1 */
    DpOpt *opts;
    int *opt_off;                     /* [L + 1] */
    DpItem *items;
    int *live;                        /* per row i, the device counts d a plan can hold */
    int *live_off;                    /* [L + 2]: row i is live[live_off[i] .. live_off[i+1]) */
    uint64_t *livebits;               /* [(L + 1) W]: bit d of row i set when (i, d) is live */
    size_t words;                     /* W = D / 64 + 1 */
    int *nz;                          /* per row, the live d with a non-empty frontier in the
                                       * last run, ascending (at live_off[i]; row L: {0}) */
    int *nz_cnt;                      /* [L + 1] */
    double *rb;                       /* scratch of a row: best sum per (d, n) */
    int32_t *rba;                     /* its item */
    unsigned *stamp;                  /* [D + 1]: rb of d was reset for the row of this gen */
    unsigned gen;
    int dense;                        /* every d a state, visited as before (tests' reference) */
    double *cands;
    size_t n_cands;
    double *val;                      /* [(L+1)(D+1)NS] */
    int32_t *arg;
    int16_t *front;                   /* frontier n's per state */
    int16_t *front_cnt;               /* [(L+1)(D+1)] */
    double *best;                     /* [NS] */
    int32_t *best_arg;
    long evals;
    double apply_limit;               /* FULL: only entries with apply_cost <= this */
    int mem_n;                        /* stage count the memory rule assumes */
    int exact_n;                      /* > 0: plans of exactly this many stages */
    /* best plan so far */
    ApsolvePlan *plan;
    double plan_obj, plan_max;
} Dp;

/* Fills the live states of dp (its options made): live, live_off,
 * livebits, nz, nz_cnt, stamp. APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_dp_live(Dp *dp);
/* The rows L-1 .. 0 of one threshold DP at t: frontiers of every live state. */
void apsolve_dp_rows(Dp *dp, double t);

#endif
