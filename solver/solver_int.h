/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the solver's source files (not installed, not part of
 * the public API): filling a stage's report fields from the table, pricing
 * a finished plan, and a monotonic clock.
 */
#ifndef APSOLVE_SOLVER_INT_H
#define APSOLVE_SOLVER_INT_H

#include <math.h>

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

/* full_estimate.c: 1 when no full estimate of the sweep's plans has a
 * straddle term (no hardware row the estimate reads, or no scale-up domain
 * of several hosts): their full estimate is then at least their
 * total_cost where every stage's apply_cost is known, and the search bars
 * (search_bar.c) drop the apply term (straddle_free). */
int apsolve_sweep_straddle_free(struct Costdb *db, int64_t sweep_id);

/* apsolve_solve with every device count a state of the DP (the formulation
 * before the live states of dp.c): the same plans, slower; the tests'
 * reference for the pruning. */
int apsolve_solve_dense(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolvePlan **out);
/* The stage options of one problem that no schedule, chunk count or
 * stage count changes (solver/dp_prep.c): built by the first search given
 * it, reused by the next ones on the same problem and objective class.
 * try_chunks (session_search.c) shares one across its chunk counts. */
typedef struct ApsolveDpShared ApsolveDpShared;
ApsolveDpShared *apsolve_dp_shared_new(void);
void apsolve_dp_shared_free(ApsolveDpShared *sh);
/* Whether sh's table holds only the ranges of whole chunks (a cut search's
 * under options that split stages into chunks; apsolve_solve_below_kept). */
int apsolve_dp_shared_whole_only(const ApsolveDpShared *sh);
/* sh (new, not built) takes from's table as its own where from holds a
 * built table of every range (not whole_only): the one a search would
 * build on sh for the same problem and objective class, since the table
 * reads nothing else (dp_prep.c, shared_build). Only the table is lent:
 * sh's apply limits, preps and chains stay its own, so threads may each
 * read the lent table beside one another while from is left alone and
 * outlives sh. A search on sh for another problem or objective builds a
 * table of its own as before. Returns whether it was lent. */
int apsolve_dp_shared_borrow(ApsolveDpShared *sh, const ApsolveDpShared *from);
/* apsolve_solve reading and filling sh (NULL: a table of its own); the
 * same plan, counts and errors. The problem must not change while sh
 * holds its table. */
int apsolve_solve_shared(const ApsolveProblem *p, const ApsolveOptions *opt,
                         ApsolveDpShared *sh, ApsolvePlan **out);
/* apsolve_solve_shared (sh not NULL) whose exact-count searches (chunked
 * schedules and ZB-H1) leave out each stage count n with skip[n] nonzero
 * (skip: NULL or indices 0 .. the most stages); without them its plan and
 * counts may differ from the whole search's (session_search.c,
 * try_chunks, re-runs a candidate whole before it keeps it). */
int apsolve_solve_shared_skip(const ApsolveProblem *p, const ApsolveOptions *opt,
                              ApsolveDpShared *sh, const unsigned char *skip, ApsolvePlan **out);
/* apsolve_solve_shared_skip cut at bar as apsolve_solve_below with first
 * (its contract, over the stage counts searched): its plan and counts are
 * not the search's; a caller that keeps a plan solves again. */
int apsolve_solve_shared_below(const ApsolveProblem *p, const ApsolveOptions *opt,
                               ApsolveDpShared *sh, const unsigned char *skip, double bar,
                               ApsolvePlan **out);
/* Whether opt's search is one exact-count search per stage count (the
 * chunked schedules and ZB-H1; not in inference). */
int apsolve_solve_by_count(const ApsolveOptions *opt);
/* The searches of each stage count of such a search, one at a time
 * (dp_counts.c): run[n] 0 not searched, 1 searched whole, 2 cut; plan[n]
 * its plan (NULL: infeasible, which a cut search answers as the whole one
 * does), evals[n] and cands[n] its threshold DPs and distinct costs. */
typedef struct ApsolveCounts {
    int nmax;                         /* indices 0 .. nmax */
    ApsolvePlan **plan;
    long *evals, *cands;
    double *secs;
    unsigned char *run;
    /* This run's id (drawn anew by init and clear): from one clear to the
     * next, every apsolve_solve_counts and apsolve_counts_whole of cs takes
     * the same p (its tables unchanged), opt and sh, as the results it
     * combines already assume; a count's options built by one of its
     * searches are then read again by the next search of that count
     * (dp_int.h, ApsolveDpShared.prep_id), and the stage counts' family
     * (fam, dp_counts.c counts_family) made once. */
    unsigned long id;
    struct DpFamily *fam;             /* NULL until the run's first search */
} ApsolveCounts;
int apsolve_counts_init(ApsolveCounts *cs, int nmax);
void apsolve_counts_clear(ApsolveCounts *cs); /* every count not searched */
void apsolve_counts_free(ApsolveCounts *cs);
/* Searches each count n the schedule allows with want[n] nonzero (want
 * NULL: every one) that is not yet searched whole, in ascending order:
 * bar +inf: whole (run 1); else cut at bar as apsolve_solve_shared_below
 * (run 2), stopping after the first whose plan is below bar. Each count's
 * search is the one apsolve_solve_shared makes of it. APSOLVE_OK or an
 * error other than infeasibility (sh: the table, as for
 * apsolve_solve_shared_skip). */
int apsolve_solve_counts(const ApsolveProblem *p, const ApsolveOptions *opt,
                         ApsolveDpShared *sh, const unsigned char *want, double bar,
                         ApsolveCounts *cs);
/* The count whose plan solve_all would keep among those searched whole
 * (the least total_cost, then cost, the first on a tie), -1 if none. */
int apsolve_counts_best(const ApsolveCounts *cs);
/* After a cut apsolve_solve_counts at bar: leaves out of want (indices 0
 * .. cs->nmax) each count whose cut search answered above bar or
 * infeasible (its whole search has no plan at or below bar, under the
 * schedules apsolve_solve_below's contract names; under the zero-bubble
 * ones, no plan its cut search visits); whether a count answered at or
 * below it. */
int apsolve_counts_narrow(const ApsolveCounts *cs, unsigned char *want, double bar);
/* apsolve_solve_shared's plan and counts (threshold DPs, distinct costs)
 * from cs, searching whole first every count not yet searched whole; the
 * plan is taken out of cs. */
int apsolve_counts_whole(const ApsolveProblem *p, const ApsolveOptions *opt,
                         ApsolveDpShared *sh, ApsolveCounts *cs, ApsolvePlan **out);
/* apsolve_solve that leaves out, after the first apply limit of each stage
 * count and the first threshold DP of each apply limit, every apply limit
 * and threshold whose lower bound (T + the limit, or dp.c's dp_bound of
 * T, which total_cost is at or above) is above bar, and with first
 * everything after its first plan below bar. What it leaves out holds
 * only plans whose total_cost is above bar, by the bounds apsolve_solve's
 * own pruning rests on, so, apsolve_solve's plan being the least: the
 * same feasibility (APSOLVE_EINFEASIBLE exactly when apsolve_solve gives
 * it); apsolve_solve's total_cost when that is at or below bar (with
 * first and below bar: a plan below bar); never a total_cost below
 * apsolve_solve's. "apsolve_solve's plan being the least" holds for
 * 1F1B, GPipe, interleaved 1F1B and every schedule in inference. Under
 * the zero-bubble schedules in training (ZB-H1, interleaved ZB, ZB-V) it
 * does not: their saving is outside the DP's sum, so apsolve_solve's plan
 * is the best of the candidates its thresholds and limits visit, not the
 * least its bounds cover (docs/solver.md), and a cut search, visiting
 * fewer, may answer above bar where apsolve_solve is at or below it
 * (docs/performance.md, "The cut searches under the zero-bubble
 * schedules: found, not changed"). Its plan and counts are not apsolve_solve's: a caller
 * that keeps a plan solves again with apsolve_solve (session_autostep.c,
 * apsolve_solve_to_beat). bar +inf: apsolve_solve; -inf: the first DPs
 * alone. APSOLVE_EINVAL for a NaN bar. */
int apsolve_solve_below(const ApsolveProblem *p, const ApsolveOptions *opt, double bar,
                        int first, ApsolvePlan **out);
/* apsolve_solve_below in sh's table, built by the first call and kept (its
 * ranges those of whole chunks when bar < +inf and the options split a
 * stage into chunks; else the whole table, the same as
 * apsolve_solve_shared's): the 1F1B searches of one problem, cut or whole,
 * and its chunked searches under the same objective read one table
 * (session_search.c, plain_search; no table reads search_headroom or the
 * schedule but through apsolve_chunks_whole). The same plan and counts as
 * apsolve_solve_below, which a search of the other kind than sh's builder
 * runs in a table of its own. APSOLVE_EINVAL for a NaN bar or sh NULL. */
int apsolve_solve_below_kept(const ApsolveProblem *p, const ApsolveOptions *opt,
                             ApsolveDpShared *sh, double bar, int first, ApsolvePlan **out);
/* The cheapest cost and work (cost x devices) of each stage i..j over its
 * submeshes and configs, and scratch (solver/chunk_floor.c). root: NULL, or
 * the square root of the least devices x (fwd + bwd - wgrad) of stage i..j
 * (ZB-V's fill floor; NULL when some entry's split does not allow it). */
typedef struct ApsolveStageFloor {
    int L, D;
    double *cost, *work;              /* [i L + j] */
    double *root;                     /* [i L + j] or NULL */
    /* ZB-V's path floors (chunk_floor.c): NULL, or per (i, j, submesh s)
     * over its entries of cost <= tau the least fwd + bwd - wgrad, then
     * (L L S on) the least fwd, bwd - wgrad, wgrad and cost */
    double *x;                        /* [q L L S + (i L + j) S + s], q = 0 .. 4: q = 4
                                       * the least cost (interleaved ZB's sum floor) */
    double tau;                       /* the last apsolve_stage_floor_under's (+inf) */
    double fill;                      /* the largest zb fill / cost of those entries */
    const ApsolveProblem *p;
    double *g;                        /* scratch, 3 (L + 1) */
    int roots;                        /* root and x made (apsolve_stage_floor_roots) */
    /* NULL, or the options of the search the floor is for (session_search.c
     * try_chunks): ZB-V's device paths then take the memory rule and one
     * config per stage (chunk_floor_mem.c) */
    const ApsolveOptions *opt;
} ApsolveStageFloor;
/* chunk_floor_mem.c: one kept config of a range on a submesh, its f, b - w,
 * w, f + b - w and fit count u (over the count family's in-flight values) */
typedef struct ApsolveZbCfg {
    double f, bw, w, x;
    int u;
} ApsolveZbCfg;
/* Per (i, j, submesh s) of whole chunks, the configs of cost <= f->tau a
 * count's DP may use, dominated ones left out: cfg[at[c] .. at[c + 1]) for
 * c = (i L + j) S + s; config of fit u allowed at stage r (0-based from
 * layer 0) of n stages iff !on or n - r - 1 <= bound[n (nf + 1) + u]. */
typedef struct ApsolveZbLists {
    size_t *at;
    ApsolveZbCfg *cfg;
    int *bound;
    int nf, nmax, on;
} ApsolveZbLists;
int apsolve_zb_lists_build(ApsolveZbLists *z, const ApsolveStageFloor *f,
                           const ApsolveOptions *opt, int v, int nmax);
void apsolve_zb_lists_free(ApsolveZbLists *z);
static inline int apsolve_zb_allowed(const ApsolveZbLists *z, int u, int n, int r)
{
    return !z->on || n > z->nmax ||
           (long)n - r - 1 <= (long)z->bound[(size_t)n * ((size_t)z->nf + 1) + (size_t)u];
}
/* search_bar.c: apsolve_chunk_bar (session_int.h) with f (NULL, or a
 * floor of p) to skip the ranges none of whose entries is cheap enough. */
double apsolve_chunk_bar_floor(const ApsolveProblem *p, const ApsolveOptions *o, double best,
                               const int *ns, int count, int straddle_free,
                               const ApsolveStageFloor *f);
int apsolve_stage_floor_init(ApsolveStageFloor *f, const ApsolveProblem *p);
/* apsolve_stage_floor_init's cost and work alone: root and x (the
 * zero-bubble floors', which the interleaved floor never reads) wait for
 * apsolve_stage_floor_roots, which makes them as init does, once; so one
 * floor serves the auto search's interleaved, interleaved ZB and ZB-V
 * searches of one problem in turn (session_search.c). */
int apsolve_stage_floor_init_plain(ApsolveStageFloor *f, const ApsolveProblem *p);
void apsolve_stage_floor_roots(ApsolveStageFloor *f);
void apsolve_stage_floor_free(ApsolveStageFloor *f);
/* f->root over the entries of cost at most tau alone (initially +inf):
 * then each[n] of ZB-V bounds only the plans whose full estimate and
 * objective are below B tau; those above are not bounded (chunk_floor.c:
 * with tau = best / B, B x each[n] >= best still leaves n out exactly). */
void apsolve_stage_floor_under(ApsolveStageFloor *f, double tau);
/* A floor of the largest stage cost of every plan the search under the
 * chunked schedule kind with v chunks per device (stages of whole chunks)
 * can return, over its stage counts n <= nmax that kind allows with B
 * micro-batches: B x it bounds each such plan's objective and full
 * estimate from below (chunk_floor.c has the proof). +inf: no plan. */
double apsolve_chunk_floor(const ApsolveStageFloor *f, int kind, int v, int B, int nmax);
/* The same floor per stage count: each[n] (n = 0 .. nmax) bounds, as
 * above, the plans of exactly n stages (B x each[n] bounds their objective
 * and full estimate); +inf where kind does not allow n or no cut has n
 * stages (each[0] is +inf). Under ZB-V with f->root, each[n] is at least
 * the fill floor / B and the path floor / B (chunk_floor.c), which may
 * exceed the largest stage, and +inf where its device paths show that no
 * plan of n stages is below B tau (apsolve_stage_floor_under's tau); under
 * interleaved ZB at least its sum floor / B (chunk_floor.c), under tau. */
void apsolve_chunk_floor_each(const ApsolveStageFloor *f, int kind, int v, int B, int nmax,
                              double *each);
/* Whether B x floor reaches best with a margin of 1e-9 of it (a plan's
 * time is summed in a different order than B x its largest stage, so it
 * may round a few ulps below): then no plan of that v can beat best. */
int apsolve_chunk_skip(double floor, int B, double best);
/* Sanitised cost of an entry: NaN, negative and padding configs -> +inf. */
double apsolve_entry_cost(const ApsolveProblem *p, size_t idx);
/* The same where the caller knows the entry's config, cfg = s * C + c
 * (idx modulo S * C, apsolve_index): no division (the DP's prep and the
 * composed stages read it per cell). */
static inline double apsolve_cell_cost(const ApsolveProblem *p, size_t idx, size_t cfg)
{
    double c = p->cost[idx];
    if (!p->configs[cfg].valid || isnan(c) || c < 0)
        return INFINITY;
    return c;
}
/* The config (s, c) may be used under opt: valid, and plain unless the
 * objective is FULL. */
int apsolve_config_allowed(const ApsolveProblem *p, const ApsolveOptions *opt, int s, int c);
/* max_n_succ_stages of entry idx under the schedule of opt for a plan of n
 * stages in all: Alpa's 1F1B rule (the table's value) for 1F1B or without
 * memory figures; GPipe keeps B micro-batches in flight everywhere;
 * interleaved the in-flight count of schedule.h for n stages. */
int apsolve_entry_mnss(const ApsolveProblem *p, const ApsolveOptions *opt, size_t idx, int n);
/* The number of leading counts of f[0..nf) (ascending) an entry with
 * memory figures m (apsolve_memory_at, read once by the caller) fits under
 * opt, by bisection: the test
 * apsolve_entry_mnss makes per count, budget being
 * apsolve_search_budget(opt, the entry's avail).
 * The counts it fits are a prefix when the entry's intermediate is >= 0
 * (the need is then non-decreasing in f), which dp_prep.c's per-entry
 * threshold uses. */
int apsolve_entry_fit_prefix(const ApsolveMemory *m, const ApsolveOptions *opt, int64_t budget,
                             const double *f, int nf);
/* The memory a stage with avail may need under opt: avail less the
 * headroom when the search keeps it (opt->search_headroom). */
int64_t apsolve_search_budget(const ApsolveOptions *opt, int64_t avail);
/* apsolve_entry_mnss with budget = apsolve_search_budget(opt, the entry's
 * avail) given (0 without memory figures): a caller testing many entries
 * works it out once per distinct avail. */
int apsolve_entry_mnss_within(const ApsolveProblem *p, const ApsolveOptions *opt, size_t idx,
                              int n, int64_t budget);
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

/* Whether apsolve_problem_new takes these sizes (else it says
 * APSOLVE_EINVAL before allocating anything). */
int apsolve_problem_shape_ok(int num_layers, int hosts, int gpus, int num_submeshes,
                             int num_configs);

/* Entry idx of q (one with memory: fwd_cost, bwd_cost, memory) as the
 * sweep computed it before judging it out of memory (apsolve_unfit_at), its cost
 * and memory in place and its max_n_succ_stages from that memory, for a cp
 * or ep step to transform: the transformed memory then decides fit, as an
 * entry's own does. 1: idx has a finite cost (now or already); 0: none. */
int apsolve_unfit_restore(ApsolveProblem *q, size_t idx);
/* Entry idx of q back to +inf when it holds exactly the figures
 * apsolve_unfit_restore put there from u (no cp or ep step made a stage of
 * it); u is q's unfit entry or, for a subset that holds none, its
 * source's. One entry of apsolve_unfit_settle (session_int.h). */
void apsolve_unfit_settle_entry(ApsolveProblem *q, size_t idx, const ApsolveUnfit *u);
/* The memory table (memory_table.c): an empty one of cells slots (NULL
 * when out of memory), a deep copy, its release (NULL is fine), and the
 * bytes it holds. */
ApsolveMemoryTable *apsolve_memory_table_new(size_t cells);
ApsolveMemoryTable *apsolve_memory_table_clone(const ApsolveMemoryTable *t, size_t cells);
void apsolve_memory_table_free(ApsolveMemoryTable *t);
size_t apsolve_memory_table_bytes(const ApsolveMemoryTable *t, size_t cells);
/* Room in p's memory table for more figures: the next `more`
 * apsolve_memory_put on p cannot fail. APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_memory_room(ApsolveProblem *p, size_t more);
/* The times table (cell_times.c), as the memory table's four above. */
ApsolveTimesTable *apsolve_times_table_new(size_t cells);
ApsolveTimesTable *apsolve_times_table_clone(const ApsolveTimesTable *t, size_t cells);
void apsolve_times_table_free(ApsolveTimesTable *t);
size_t apsolve_times_table_bytes(const ApsolveTimesTable *t, size_t cells);
/* Room in p's times table for more: the next `more` apsolve_times_put on
 * p cannot fail. APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_times_room(ApsolveProblem *p, size_t more);
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
