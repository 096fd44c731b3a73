/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the solver's source files (not installed, not part of
 * the public API): filling a stage's report fields from the table, pricing
 * a finished plan, and a monotonic clock.
 */
#ifndef APSOLVE_SOLVER_INT_H
#define APSOLVE_SOLVER_INT_H

#include "apsolve.h"
#include "schedule.h"

struct Costdb;
struct CostdbFabric;
struct CostdbPlacement;
/* What pricing a transformed stage of a sweep reads (the cp and ep steps):
 * the fabric of the sweep's hardware row and the placements of entry
 * (start..end, s, c); -1 with why (naming `what`, the thing to price) when
 * either is missing. *pl is the caller's to free. */
int apsolve_stage_inputs(struct Costdb *db, int64_t sweep, int start, int end, int s, int c,
                         const char *what, struct CostdbFabric *f, struct CostdbPlacement **pl,
                         size_t *n, char *why, size_t len);

/* apsolve_solve with every device count a state of the DP (the formulation
 * before the live states of dp.c): the same plans, slower; the tests'
 * reference for the pruning. */
int apsolve_solve_dense(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolvePlan **out);
/* Sanitised cost of an entry: NaN, negative and padding configs -> +inf. */
double apsolve_entry_cost(const ApsolveProblem *p, size_t idx);
/* The config (s, c) may be used under opt: valid, and plain unless the
 * objective is FULL. */
int apsolve_config_allowed(const ApsolveProblem *p, const ApsolveOptions *opt, int s, int c);
/* max_n_succ_stages of entry idx under the schedule of opt for a plan of n
 * stages in all: Alpa's 1F1B rule (the table's value) for 1F1B or without
 * memory figures; GPipe keeps B micro-batches in flight everywhere;
 * interleaved the in-flight count of schedule.h for n stages. */
int apsolve_entry_mnss(const ApsolveProblem *p, const ApsolveOptions *opt, size_t idx, int n);
/* Micro-batches of activations stage k (of n) keeps under opt's schedule;
 * 1F1B: Alpa's n - k. */
double apsolve_in_flight(const ApsolveOptions *opt, int n, int k);
/* The memory rule of the plan's objective (schedule.h): EXACT under full,
 * ALPA under alpa. */
ApsolveMemoryRule apsolve_memory_rule(const ApsolveOptions *opt);
/* Fills cost, fwd/bwd, memory fields of st (whose layers, submesh and config
 * are set; submesh/config may be -1) for a position with succ stages from it
 * to the end of a plan of n stages. */
void apsolve_stage_fill(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolveStage *st,
                        int succ, int n);
/* Sets sum/max/cost/devices/feasible of a plan whose stages are filled. The
 * sum is accumulated from the last stage to the first, the order the DP
 * uses, so equal plans give bit-identical costs everywhere. */
void apsolve_plan_price(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolvePlan *plan);
/* A zero-bubble schedule's saving on the time of the n stages st without
 * it (docs/solver.md, "Schedules"): apsolve_schedule_zb_saving (schedule.h,
 * the one definition of each zero-bubble schedule's price) on the stages'
 * fwd_cost, bwd_cost and wgrad_cost, v the plan's chunks per device. 0
 * for the other schedules; NaN when a stage's weight-gradient seconds are
 * unknown. */
double apsolve_stages_zb_saving(int schedule, int v, int B, const ApsolveStage *st, size_t n);
/* The index of p's submesh of hosts x gpus, or -1 (evaluate.c). */
int apsolve_find_submesh(const ApsolveProblem *p, int hosts, int gpus);
/* What a --parallel knob priced as a transformation of stored entries
 * (expert parallelism, HSDP) adds to an entry: communication of each
 * phase, the apply step's change, the peak's and the initial memory's. */
typedef struct ApsolveEntryDelta {
    double comm_fwd, comm_bwd, apply_delta;
    int64_t peak_delta, initial_delta;
} ApsolveEntryDelta;
/* Adds d to entry idx of q (a finite one): its phases and cost, its apply
 * step (not below 0; unknown stays unknown), its memory (the initial not
 * below 0) and the stage count that memory allows (problem.c). */
void apsolve_entry_add(ApsolveProblem *q, size_t idx, const ApsolveEntryDelta *d);

/* Entry idx of q (one with memory: fwd_cost, bwd_cost, memory) as the
 * sweep computed it before judging it out of memory (q->unfit), its cost
 * and memory in place and its max_n_succ_stages from that memory, for a cp
 * or ep step to transform: the transformed memory then decides fit, as an
 * entry's own does. 1: idx has a finite cost (now or already); 0: none. */
int apsolve_unfit_restore(ApsolveProblem *q, size_t idx);
/* Model chunks per device of opt's schedule: v for interleaved and
 * interleaved ZB with v >= 2, 2 for ZBV, else 1. */
static inline int apsolve_virtual(const ApsolveOptions *opt)
{
    return (int)apsolve_schedule_transfer_factor((ApsolveSchedule)opt->schedule,
                                                 opt->virtual_stages);
}
/* Whether a stage of layers i..j may run under opt: with whole_chunks, its
 * layers split into the interleaved schedule's chunks of whole layers
 * (Megatron-LM's layers per virtual stage; docs/solver.md, "Schedules");
 * always under 1F1B and GPipe. */
static inline int apsolve_chunks_whole(const ApsolveOptions *opt, int i, int j)
{
    return !opt->whole_chunks || (j - i + 1) % apsolve_virtual(opt) == 0;
}

#endif
