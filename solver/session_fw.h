/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The apsolve --framework search's state (docs/solver.md "The best plan a
 * framework runs"), shared by the enumeration of the layouts
 * (session_framework.c) and the pricing of one layout as F runs it
 * (session_fw_layout.c).
 */
#ifndef APSOLVE_SESSION_FW_H
#define APSOLVE_SESSION_FW_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"
#include "frameworks.h"
#include "session_int.h"

#define FW_REASONS 4

/* The search in progress: the counts it reports, the best layout so far
 * and what a refusal names. */
typedef struct FwSearch {
    ApsolveRun *r;
    int fw;
    ApsolveFwSearch *st;
    int have, best_headroom;
    double best_price;
    ApsolveParallel best;
    int sched, best_sched;            /* a zero-bubble schedule tried (try_schedules), the
                                       * best's; 0: the layout's own (1F1B or interleaved) */
    struct {
        char why[APSOLVE_FW_WHY];
        long n;
    } rule[FW_REASONS];               /* F's refusals before pricing, distinct reasons */
    int nrule;
    long whole;                       /* tp > 1 layouts priced with weights whole on the tp axis */
    char whole_eg[160], whole_why[APSOLVE_FW_WHY]; /* one of them, F's reason */
    double excess[2];                 /* tp = 1, tp > 1: least memory over the capacity */
    int64_t need[2], avail[2];
    char need_eg[2][160];
    char need_whole[APSOLVE_FW_WHY];  /* the closest tp > 1 layout, memory aside, keeps weights
                                       * whole on the tp axis: F's reason; "" when not */
    int has_none;                     /* the candidate's sweep holds recompute none */
    ApsolveProblem *scratch;          /* Megatron's recompute_layers and offload entries
                                       * (apsolve_fw_partial), for one candidate's layout */
    int twin_only;                    /* the candidate's size does not divide G: cp layouts
                                       * whose m / cp does, only (session_cp.c) */
} FwSearch;

/* "dp=2,tp=4,pp=1,zero=1,recompute=full[,vpp=2][,mbs=1][,recompute_layers=1]":
 * --parallel's text of layout p (session_fw_layout.c). */
void apsolve_fw_layout_text(const ApsolveParallel *p, char *out, size_t len);
/* Counts one layout F's rules refuse, under its reason why (the first
 * FW_REASONS distinct reasons are kept; session_fw_layout.c). */
void apsolve_fw_note_rule(FwSearch *S, const char *why);
/* One layout par on candidate c (whose entries are those of par's cp and
 * ep knobs: apsolve_parallel_knobs): the exact prunes, its price as
 * --parallel prices it, F's verdict, its memory; kept in S when it beats
 * the best. 0, or 1 when memory runs out (session_fw_layout.c). */
int apsolve_fw_try_layout(FwSearch *S, const ApsolveCand *c, const ApsolveParallel *par);

#endif
