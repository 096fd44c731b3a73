/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apsolve: exact pipeline-stage and submesh planning over a cost table.
 * An ApsolveProblem holds, for L layers on an N x M cluster, the cost of
 * every stage candidate (layer range i..j, submesh s, autosharding config c)
 * and its memory limit max_n_succ_stages; apsolve_solve() returns the plan
 * that minimises Alpa's training objective T = sum of stage costs +
 * (B - 1) * max stage cost (or the inference objective stages * max stage
 * cost) using all N * M devices exactly, the same optimum as Alpa's
 * training_dp. apsolve_evaluate() prices a given plan (manual, uniform,
 * 3-D). The algorithm and its proof are in docs/solver.md. Nothing here
 * prints to stdout or exits; writers take a FILE*.
 */
#ifndef APSOLVE_H
#define APSOLVE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "variant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* apsolve's error codes. A costdb failure crosses into them as APSOLVE_EDB
 * (its message stays in costdb_errmsg), never as its own number: the two
 * spaces overlap (-2 is COSTDB_ENOTDB). Exit statuses are util/
 * exit_status.h's (APPROF_EXIT_*, apsolve_error_exit in session.h). */
enum {
    APSOLVE_OK = 0,
    APSOLVE_ENOMEM = -1,
    APSOLVE_EINVAL = -2,      /* bad argument or malformed problem */
    APSOLVE_EINFEASIBLE = -3, /* no plan satisfies the constraints */
    APSOLVE_EDB = -4,         /* a costdb call failed (see costdb_errmsg) */
    APSOLVE_EPARSE = -5,      /* malformed plan text (manual option) */
    APSOLVE_ENOTFOUND = -6,   /* a shape/config is not in the sweep */
};

/* max_n_succ_stages of an entry without memory limit. */
#define APSOLVE_UNBOUNDED INT_MAX
/* Largest L and device count the solver accepts. */
#define APSOLVE_MAX_LAYERS 4096
#define APSOLVE_MAX_DEVICES 65536
/* Most submeshes and configs per submesh (Alpa's configs and their variants,
 * docs/variants.md). */
#define APSOLVE_MAX_SUBMESHES 64
#define APSOLVE_MAX_CONFIGS 1024

/* What the search minimises for training (docs/solver.md "Objectives").
 * ALPA: Alpa's T over the plain configs only (memory level 0, recompute
 * none, zero 0); FULL: T + the largest apply_cost of the plan's stages over
 * every config and variant. */
typedef enum {
    APSOLVE_OBJECTIVE_ALPA = 0,
    APSOLVE_OBJECTIVE_FULL = 1,
} ApsolveObjective;

typedef struct ApsolveSubmesh {
    int hosts, gpus;                  /* (n, m); uses n * m devices */
} ApsolveSubmesh;

typedef struct ApsolveConfig {
    int valid;                        /* 0: padding (no such config) */
    int logical_a, logical_b;
    int force_batch_dim;              /* -1: {} ; else the mesh axis */
    CostdbVariant variant;            /* plain (costdb_variant_is_plain): Alpa's config */
} ApsolveConfig;

/* Memory statistics of one (i, j, s, c), bytes (all 0 when unknown). */
typedef struct ApsolveMemory {
    int64_t peak, intermediate, initial, avail;
} ApsolveMemory;

/* A problem's memory statistics, held only for the cells that have them
 * (docs/performance.md, "apsolve's memory table sparse (issue 38)"): cell
 * k's figures are figs[slot[k]]; slot 0 is figs[0], the figures of every
 * cell never put (all 0, unknown, as a zeroed table of one per cell read).
 * Read with apsolve_memory_at, written with apsolve_memory_put
 * (memory_table.c, its one owner). */
typedef struct ApsolveMemoryTable {
    uint32_t *slot;                   /* [cells] */
    ApsolveMemory *figs;              /* [n]: figs[0] the cells' never put */
    size_t n, cap;
} ApsolveMemoryTable;

/* Seconds of one (i, j, s, c): its forward, its backward and, of the
 * backward, the weight gradients' (ZB-H1's W pass; < 0 unknown,
 * CostdbEntry). A cell never put reads {+inf, +inf, -1}. */
typedef struct ApsolveTimes {
    double fwd, bwd, wgrad;
} ApsolveTimes;

/* A problem's per-cell times, held only for the cells that have them
 * (docs/performance.md, "apsolve's per-cell fwd/bwd/wgrad behind a slot
 * (issue 38, apsfwd)"): cell k's times are figs[slot[k]]; slot 0 is
 * figs[0], {+inf, +inf, -1}, what every cell of the dense tables read
 * before the load. Read with apsolve_times_at, written with
 * apsolve_times_put or apsolve_times_own (cell_times.c, its one owner),
 * as the memory table. */
typedef struct ApsolveTimesTable {
    uint32_t *slot;                   /* [cells] */
    ApsolveTimes *figs;               /* [n]: figs[0] the cells' never put */
    size_t n, cap;
} ApsolveTimesTable;

/* An entry the sweep judged out of memory (status oom, cost +inf), as the
 * sweep computed it (CostdbEntry.unfit_cost): what a cp or ep stage is
 * priced from when its twin does not fit (apsolve_unfit_restore). fwd < 0:
 * none. */
typedef struct ApsolveUnfit {
    double fwd, bwd, apply;
    ApsolveMemory memory;
} ApsolveUnfit;

/* A problem's out-of-memory figures, held only for the entries that have
 * them (docs/performance.md, "apsolve: a triangular cost table"): slot[k] (one per cell) is 0 for none, else 1 +
 * the entry's place in figs (entries with the same figures may share one).
 * Read with apsolve_unfit_at, written with apsolve_unfit_put (problem.c). */
typedef struct ApsolveUnfitTable {
    uint32_t *slot;
    ApsolveUnfit *figs;
    size_t n, cap;
} ApsolveUnfitTable;

/* The cost table. Arrays of apsolve_problem_cells() entries, one per layer
 * range i..j (i <= j; ranges j < i are not stored), submesh s and config c,
 * indexed by apsolve_index(). cost is fwd + bwd seconds, +inf for
 * a missing or failed entry (NaN and negative values are treated as +inf).
 * max_n_succ_stages: the stage may sit where (stages from it to the end,
 * itself included) - 1 <= value; -1 never fits; APSOLVE_UNBOUNDED always.
 * apply_cost (always allocated, 0 by default): seconds spent once per
 * iteration after the pipeline (gradient sync + optimizer step); < 0
 * unknown (read as 0 by the full objective).
 * times (fwd, bwd, wgrad) and memory are optional (NULL) and only reported. */
typedef struct ApsolveProblem {
    int num_layers;                   /* L */
    int cluster_hosts, cluster_gpus;  /* N x M */
    int num_devices;                  /* D = N * M */
    int num_submeshes, num_configs;   /* S, C (C = most configs of a submesh) */
    ApsolveSubmesh *submeshes;        /* [S] */
    ApsolveConfig *configs;           /* [S * C], index s * C + c */
    double *cost;
    int *max_n_succ_stages;
    double *apply_cost;
    ApsolveTimesTable *times;         /* optional (apsolve_times_at) */
    ApsolveMemoryTable *memory;       /* optional (apsolve_memory_at) */
    ApsolveUnfitTable *unfit_table;   /* optional: the out-of-memory entries' own figures; their
                                       * cost stays +inf (apsolve_unfit_restore) */
    int64_t sweep_id;                 /* 0 for in-memory problems */
} ApsolveProblem;

typedef struct ApsolveOptions {
    int micro_batches;                /* B >= 1 */
    int max_stages;                   /* 0: no limit */
    int64_t memory_budget;            /* bytes; 0: the entries' available_memory */
    int inference;                    /* minimise stages * max stage cost */
    int ignore_memory;                /* treat every entry as memory-feasible */
    int objective;                    /* ApsolveObjective (0: alpa) */
    int schedule;                     /* ApsolveSchedule (schedule.h; 0: 1F1B) */
    int virtual_stages;               /* interleaved: model chunks per device (< 2: 1) */
    int moe_a2a_overlap;              /* Megatron-Core's MoE all-to-all overlap: one more
                                       * micro-batch in flight (apsolve_stage_in_flight_a2a) */
    int whole_chunks;                 /* interleaved: only stages whose layers split into
                                       * virtual_stages chunks of whole layers (the auto
                                       * search's own interleaving; a layer may hold several
                                       * transformer blocks, so a given plan is not held to it) */
    /* Memory left free on each device for the allocator's fragmentation
     * (docs/solver.md, "Memory headroom"): headroom_bytes when > 0, else
     * headroom_percent of the stage's available memory (0: none). With
     * search_headroom a stage fits only when its need (the one figure of
     * apsolve_stage_memory_need) leaves that much free: the auto search's
     * budget. Without it the headroom is only reported (stage
     * memory_reserve) and a given plan is judged by the raw capacity. */
    double headroom_percent;
    int64_t headroom_bytes;
    int search_headroom;
    /* Threads apsolve_problem_from_db may use (<= 1: the calling thread
     * alone): with two or more the problem's tables are made, and the
     * entries that fit written, on a second thread while the sweep's cost
     * rows are read and its entries walked (dbload.c, LoadJob); the
     * problem is the same at any count. The DP's table of stage options
     * of a large problem is built in two parts side by side too
     * (dp_shared.c): the same table. */
    int load_threads;
} ApsolveOptions;

/* The auto search's default headroom: 5 % of each device's memory. */
#define APSOLVE_DEFAULT_HEADROOM_PERCENT 5.0
/* The headroom (bytes) opt keeps free of avail bytes: 0 when avail is
 * unknown (<= 0) or no headroom is set, never more than avail. */
int64_t apsolve_memory_reserve(const ApsolveOptions *opt, int64_t avail);

typedef struct ApsolveStage {
    int start_layer, end_layer;       /* inclusive */
    int submesh, config;              /* indices in the problem, -1 if none */
    int hosts, gpus;                  /* submesh shape */
    int logical_a, logical_b;
    int force_batch_dim;              /* -1: {} */
    CostdbVariant variant;            /* the config's (none when config < 0) */
    double cost, fwd_cost, bwd_cost;  /* cost = fwd + bwd (+inf if no entry) */
    double wgrad_cost;                /* of bwd_cost, the weight gradients' (ZB-H1's W pass);
                                       * < 0 unknown */
    double apply_cost;                /* once per iteration; < 0 unknown */
    double in_flight;                 /* micro-batches of activations kept (schedule) */
    int max_n_succ_stages;
    int succ_stages;                  /* stages from this one to the end */
    int memory_ok;                    /* succ_stages - 1 <= max_n_succ_stages */
    int64_t memory_needed;            /* peak + initial + in_flight * intermediate; 0 unknown */
    int64_t available_memory;         /* 0 unknown */
    int64_t memory_reserve;           /* the headroom for fragmentation (apsolve_memory_reserve) */
} ApsolveStage;

typedef struct ApsolvePlan {
    int feasible;                     /* finite costs, memory ok, D devices */
    int inference;
    int micro_batches;
    double cost;                      /* the pipeline time T of the schedule */
    double sum_cost, max_stage_cost;
    int objective;                    /* ApsolveObjective the plan was priced with */
    double apply_cost;                /* FULL: the largest stage apply_cost, else 0 */
    double total_cost;                /* the objective: cost + apply_cost */
    int schedule, virtual_stages;     /* ApsolveSchedule, chunks per device */
    int64_t global_batch;             /* samples per iteration; 0 unknown (set by callers) */
    int64_t micro_batch_size;         /* global_batch / micro_batches; 0 unknown */
    int devices_used;
    size_t n_stages;
    ApsolveStage *stages;
    double solve_seconds;
    long dp_evaluations;              /* threshold DPs run (auto plans) */
    long candidates;                  /* distinct stage costs considered */
    double full_cost;                 /* full estimate (full_estimate.c) */
    int has_full_cost;                /* 0: not estimated (stored as NULL) */
    unsigned frameworks;              /* bit f: framework f runs it as priced (frameworks.h) */
    int has_frameworks;               /* 0: not judged */
    int cp;                           /* context parallelism its entries were priced with by
                                       * the auto search (session_autocp.c); 0: none */
    int cp_comm;                      /* its communication (ApsolveCpComm: 0 the ring, p2p) */
    int ep, etp;                      /* expert parallelism likewise (session_autoep.c); 0: none */
    int moe_a2a_overlap;              /* its all-to-alls under Megatron-Core's MoE all-to-all
                                       * overlap (expert_parallel.h); 0: off */
    int recompute_layers;             /* recompute full on the first K layers of each chunk only
                                       * (--parallel recompute_layers, recompute_layers.h); 0:
                                       * every layer of a full stage */
    int offload;                      /* activation offload: layers of each stage whose
                                       * saved activations go to host memory (0: none;
                                       * activation_offload.h), and of its first stage: */
    int64_t offload_freed;            /* bytes off the peak and intermediate */
    double offload_saved;             /* bytes copied each way per micro-batch */
    double offload_exposed;           /* copy seconds per micro-batch not hidden */
    double offload_bandwidth;         /* the host link, bytes/s one direction */
    double boundary_devices;          /* the full estimate's stage-boundary activation split
                                       * over this many devices (a framework's p2p shard:
                                       * session_price.c); 0: the receiving placement's */
} ApsolvePlan;

/* The tables' layout (docs/performance.md, "apsolve: a triangular cost
 * table"): the ranges i..j with i <= j row by row (i, then j = i .. L - 1),
 * each range's S * C cells together (s, then c). Row i starts after the
 * L + (L - 1) + .. + (L - i + 1) ranges of the rows before it, so a row's
 * ranges are contiguous and an index modulo S * C is still s * C + c
 * (i (2L + 1 - i) is even: one of its factors is). */
static inline size_t apsolve_range_index(int num_layers, int i, int j)
{
    return (size_t)i * (size_t)(2 * num_layers + 1 - i) / 2 + (size_t)(j - i);
}

/* Cells of each table of a problem of L layers, S submeshes and C configs:
 * L (L + 1) / 2 ranges x S x C. */
static inline size_t apsolve_table_cells(int num_layers, int num_submeshes, int num_configs)
{
    return (size_t)num_layers * (size_t)(num_layers + 1) / 2 * (size_t)num_submeshes *
           (size_t)num_configs;
}

static inline size_t apsolve_problem_cells(const ApsolveProblem *p)
{
    return apsolve_table_cells(p->num_layers, p->num_submeshes, p->num_configs);
}

/* Entry index of (i, j, s, c), 0 <= i <= j < L: no cell for j < i. */
static inline size_t apsolve_index(const ApsolveProblem *p, int i, int j, int s, int c)
{
    return (apsolve_range_index(p->num_layers, i, j) * (size_t)p->num_submeshes + (size_t)s) *
               (size_t)p->num_configs + (size_t)c;
}

/* Entry k's out-of-memory figures (their fwd >= 0), or NULL: none, or no
 * table. */
static inline const ApsolveUnfit *apsolve_unfit_at(const ApsolveProblem *p, size_t k)
{
    uint32_t slot = p->unfit_table ? p->unfit_table->slot[k] : 0;
    return slot ? &p->unfit_table->figs[slot - 1] : NULL;
}

/* Cell k's memory statistics (p->memory not NULL): all 0 where none were
 * put. The pointer is good until the next apsolve_memory_put on p. */
static inline const ApsolveMemory *apsolve_memory_at(const ApsolveProblem *p, size_t k)
{
    return &p->memory->figs[p->memory->slot[k]];
}

/* Cell k's times (p->times not NULL): {+inf, +inf, -1} where none were
 * put. The pointer is good until the next apsolve_times_put or _own on p. */
static inline const ApsolveTimes *apsolve_times_at(const ApsolveProblem *p, size_t k)
{
    return &p->times->figs[p->times->slot[k]];
}

const char *apsolve_strerror(int err);

/* ---- problems ------------------------------------------------------------ */

/* Allocates a problem for L layers on an N x M cluster with S submeshes of
 * at most C configs each: costs +inf, max_n_succ_stages unbounded, configs
 * invalid, submeshes zero (the caller fills them). fwd/bwd/memory arrays are
 * allocated when with_details is set. The caller owns *out. */
int apsolve_problem_new(int num_layers, int hosts, int gpus, int num_submeshes,
                        int num_configs, int with_details, ApsolveProblem **out);
/* A deep copy of p (every table, its submeshes, configs and sweep id) into
 * *out, which the caller owns. APSOLVE_OK, APSOLVE_EINVAL or
 * APSOLVE_ENOMEM. */
int apsolve_problem_clone(const ApsolveProblem *p, ApsolveProblem **out);
/* The bytes of p's per-cell arrays (cost, max_n_succ_stages, apply_cost,
 * and the optional fwd, bwd, wgrad and memory it has): what a clone of it
 * allocates, less its submeshes, configs and out-of-memory figures. */
size_t apsolve_problem_bytes(const ApsolveProblem *p);
/* Gives p an empty table of out-of-memory figures if it has none. */
int apsolve_unfit_table_new(ApsolveProblem *p);
/* Entry k's out-of-memory figures become *u (made with the table where p
 * has none); u->fwd < 0 or NaN: entry k has none. APSOLVE_OK or APSOLVE_ENOMEM
 * (p unchanged). Figures already referenced are never written: entries may
 * share them (the loader's, unfit_share.h), so new figures are appended. */
int apsolve_unfit_put(ApsolveProblem *p, size_t k, const ApsolveUnfit *u);
/* Gives p an empty memory table (every cell's figures 0) if it has none.
 * APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_memory_table_add(ApsolveProblem *p);
/* Cell k's memory statistics become *m (p->memory not NULL): written over
 * the cell's own figures, or appended for a cell that has none (none
 * appended when *m is what it reads already). APSOLVE_OK or APSOLVE_ENOMEM
 * (p unchanged). */
int apsolve_memory_put(ApsolveProblem *p, size_t k, const ApsolveMemory *m);
/* Cell k's own figures, to write in place (p->memory not NULL): a copy of
 * what it reads appended where it has none. NULL when out of memory. The
 * pointer is good until the next apsolve_memory_put or _own on p. */
ApsolveMemory *apsolve_memory_own(ApsolveProblem *p, size_t k);
/* Gives p an empty times table (every cell's {+inf, +inf, -1}) if it has
 * none. APSOLVE_OK or APSOLVE_ENOMEM. */
int apsolve_times_table_add(ApsolveProblem *p);
/* Cell k's times become *t (p->times not NULL): written over the cell's
 * own, or appended for a cell that has none (none appended when *t is what
 * it reads already). APSOLVE_OK or APSOLVE_ENOMEM (p unchanged). */
int apsolve_times_put(ApsolveProblem *p, size_t k, const ApsolveTimes *t);
/* Cell k's own times, to write in place (p->times not NULL): a copy of
 * what it reads appended where it has none. NULL when out of memory. The
 * pointer is good until the next apsolve_times_put or _own on p. */
ApsolveTimes *apsolve_times_own(ApsolveProblem *p, size_t k);
/* Cell k's fwd and bwd +inf (no stage; p->times may be NULL), its wgrad
 * kept: written only over the cell's own times, never appended. */
void apsolve_times_drop(ApsolveProblem *p, size_t k);
/* Frees the problem and sets *p to NULL; NULL is fine. */
void apsolve_problem_free(ApsolveProblem **p);
/* Alpa's submesh list for N x M (M a power of two): (1,1), (1,2) .. (1,M),
 * then (2,M), (4,M) .. <= N ("power_of_two"). Writes up to cap entries into
 * out and returns how many there are (may exceed cap). */
int apsolve_default_submeshes(int hosts, int gpus, ApsolveSubmesh *out, int cap);
/* Alpa's max_n_succ_stages = floor((avail - peak - initial) / intermediate)
 * - 1, clamped to >= -1; intermediate 0 gives APSOLVE_UNBOUNDED when the
 * stage fits (avail >= peak + initial), else -1. */
int apsolve_max_n_succ_stages(int64_t avail, int64_t peak, int64_t initial,
                              int64_t intermediate);
/* An entry's max_n_succ_stages from its memory: apsolve_max_n_succ_stages
 * where the available memory is known (avail > 0), else APSOLVE_UNBOUNDED. */
int apsolve_memory_mnss(const ApsolveMemory *m);

/* ---- auto plan ----------------------------------------------------------- */

/* Finds the optimal plan (docs/solver.md). On success *out (caller owns, free
 * with apsolve_plan_free) holds a feasible plan. APSOLVE_EINFEASIBLE when no
 * plan exists; then apsolve_explain() names the tightest constraint. */
int apsolve_solve(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolvePlan **out);
/* The auto search's memory-headroom rule (docs/solver.md, "Memory
 * headroom"), the one every auto plan is made by: apsolve_solve keeping
 * opt's headroom when it sets one, and when no plan keeps it, against the
 * raw capacity. opt->search_headroom says which one *out was made under
 * (1: it keeps the headroom). Returns as apsolve_solve. */
int apsolve_solve_keep_headroom(const ApsolveProblem *p, ApsolveOptions *opt,
                                ApsolvePlan **out);
/* The same rule for any way of making a plan (the one owner of it):
 * make(ctx, opt) keeping opt's headroom when it sets one, and when that
 * finds no plan (APSOLVE_EINFEASIBLE) or an infeasible one, make again
 * against the raw capacity. A maker that chooses memory levels (the
 * solver, apsolve_evaluate, the as-run pricing) so takes the cheapest
 * level that keeps the headroom where one does, else the cheapest that
 * fits. opt->search_headroom says which one *out was made under. Returns
 * as make. */
typedef int (*ApsolvePlanMaker)(void *ctx, const ApsolveOptions *opt, ApsolvePlan **out);
int apsolve_keep_headroom(ApsolveOptions *opt, ApsolvePlanMaker make, void *ctx,
                          ApsolvePlan **out);
/* Writes into buf a one-line reason why p has no feasible plan under opt:
 * layers without a finite entry, the device count, --max-stages, or the
 * stage whose memory need exceeds the memory available. */
void apsolve_explain(const ApsolveProblem *p, const ApsolveOptions *opt, char *buf, size_t len);

/* ---- evaluating a given plan --------------------------------------------- */

/* A plan described by shapes, as Alpa's ManualStageOption gives it. */
typedef struct ApsolveStageSpec {
    int start_layer, end_layer;       /* inclusive */
    int hosts, gpus;                  /* submesh shape */
    int logical_a, logical_b;         /* 0, 0: the cheapest config of the submesh */
    int force_batch_dim;              /* -1: {}; -2: any (cheapest matching) */
    /* The variant, a pattern (costdb_variant_matches): a field -1 is any;
     * 0 (the default of a positional initialiser) is the plain config.
     * With several matching configs the evaluation takes the cheapest one
     * that fits in memory at its position (objective full) or the cheapest
     * one (objective alpa, plain configs only). */
    CostdbVariant variant;
} ApsolveStageSpec;

/* Prices the plan from the table: per stage cost and memory headroom, T (or
 * the inference objective) and feasibility. A stage whose shape or config
 * is not in the problem gets cost +inf (submesh/config -1). Layers must be
 * contiguous from 0 to L - 1 (else APSOLVE_EINVAL with a message in errbuf).
 * *out is owned by the caller. */
int apsolve_evaluate(const ApsolveProblem *p, const ApsolveOptions *opt,
                     const ApsolveStageSpec *specs, size_t n, ApsolvePlan **out,
                     char *errbuf, size_t errlen);
/* Uniform stages: layers split into k contiguous runs (the first L mod k
 * runs get one layer more). Writes k specs into out (caller provides k). */
int apsolve_uniform_specs(int num_layers, int k, int hosts, int gpus, int logical_a,
                          int logical_b, int force_batch_dim, ApsolveStageSpec *out);
/* Megatron/LiBai 3-D: pp uniform stages on (1, dp*tp) (or (dp*tp/M, M) when
 * dp*tp > M), logical (dp, tp), batch forced on axis 0, recompute none,
 * zero 0, any memory level (the cheapest that fits). apsolve_uniform_specs
 * leaves every variant field at -1 (any). */
int apsolve_3d_specs(int num_layers, int cluster_gpus, int dp, int tp, int pp,
                     ApsolveStageSpec *out);

void apsolve_plan_free(ApsolvePlan **plan);

/* ---- the cost database (solver/dbload.c) --------------------------------- */

struct Costdb;
/* Builds the problem of a sweep: cost = compute_cost(fwd) + compute_cost(bwd)
 * (opt->inference: compute_cost(fwd) only, the forward module, bwd 0),
 * peak = max of the two peaks, intermediate and initial the max of the two
 * phases, avail = available_memory or opt->memory_budget when > 0 (an entry
 * with available_memory 0 and no budget is treated as unlimited). Missing
 * entries, a non-ok status or a non-finite cost give +inf. The caller owns
 * *out. APSOLVE_EDB on a database error (costdb_errmsg has the detail). */
/* apsolve_problem_from_db that also says, in err, which limit a sweep
 * breaks when it returns APSOLVE_EINVAL (layers, devices, submeshes or
 * configs beyond the solver's maxima); err is "" otherwise. */
int apsolve_problem_from_db_msg(struct Costdb *db, int64_t sweep_id, const ApsolveOptions *opt,
                                ApsolveProblem **out, char *err, size_t errlen);
int apsolve_problem_from_db(struct Costdb *db, int64_t sweep_id, const ApsolveOptions *opt,
                            ApsolveProblem **out);
/* Stores the plan (kind: auto | manual | uniform | 3d) with its stages and
 * sets *plan_id. options_json: the inputs as a JSON object (may be NULL). */
int apsolve_plan_store(struct Costdb *db, const ApsolveProblem *p, const ApsolveOptions *opt,
                       const ApsolvePlan *plan, const char *kind, const char *options_json,
                       int64_t *plan_id);

/* ---- plan text (Python-ish lists, as Alpa's options take them) ---------- */

/* Parses "[[0, 1], [2, 3]]" into ranges: starts and ends malloc'd, *n set.
 * Each inner list must be consecutive integers. errbuf gets the column. */
int apsolve_parse_layer_ids(const char *s, int **starts, int **ends, size_t *n,
                            char *errbuf, size_t errlen);
/* Parses "[(1, 4), (1, 4)]" into pairs; a and b malloc'd. */
int apsolve_parse_shapes(const char *s, int **a, int **b, size_t *n, char *errbuf,
                         size_t errlen);
/* Parses "[{}, {'force_batch_dim_to_mesh_dim': 0}]" (single or double quotes):
 * *force malloc'd, -1 for {}. */
int apsolve_parse_option_dicts(const char *s, int **force, size_t *n, char *errbuf,
                               size_t errlen);

/* ---- output -------------------------------------------------------------- */

/* Alpa's four "Result ..." lines for the plan. */
void apsolve_print_alpa(const ApsolvePlan *plan, FILE *out);

/* Beyond Alpa's T (full_estimate.c, model in docs/solver.md "Beyond Alpa's
 * objective"): cross-stage transfers, the gradient all-reduce and the
 * optimizer step, from the sweep's placements and hardware row. available
 * is 0 (with why) when either is missing, or the plan is not a feasible
 * training plan. */
typedef struct ApsolveFullEstimate {
    int available;
    char why[160];
    double transfers;                 /* Σ over stage pairs, fwd + bwd, one micro-batch */
    double transfer_bytes;            /* per device, one direction, all pairs */
    double pipeline;                  /* T with the transfers (1F1B: in every stage's period) */
    double grad_sync, optimizer;      /* of the slowest stage's apply-grad (placements) */
    double apply;                     /* the apply-grad term of total */
    int apply_from_entries;           /* 1: apply = the largest stage apply_cost of the
                                       * entries; 0: grad_sync + optimizer from placements */
    double total;                     /* pipeline + apply */
    int apply_stage;                  /* the stage whose apply-grad is slowest, -1 none */
    double p2p_exposed;               /* interleaved (Megatron-Core): the exchanges its
                                       * warm-up, cool-down and steady state leave exposed,
                                       * in pipeline instead of the stages' periods; else 0 */
} ApsolveFullEstimate;

/* One stage's part of the full estimate (seconds; bytes per device). */
typedef struct ApsolveStageEstimate {
    double compute;                   /* the stage's Alpa cost (fwd + bwd) */
    double send_fwd_bytes, send_fwd;  /* activations to later stages, per micro-batch */
    double send_bwd_bytes, send_bwd;  /* their gradients back to earlier stages */
    int send_inter;                   /* some send of this stage crosses hosts */
    double period;                    /* compute + send_fwd + send_bwd */
    double param_bytes;               /* local parameter bytes */
    double grad_bytes;                /* local gradient bytes that are all-reduced */
    int replicas;                     /* largest all-reduce group, 1: none */
    int grad_inter;                   /* some all-reduce crosses hosts */
    double grad_sync, optimizer;      /* once per iteration, from the placements */
    double apply;                     /* the entry's apply_cost (+ straddle), or grad_sync +
                                       * optimizer */
    int first_device;                 /* where the stage sits (costdb_stage_layout, host-major
                                       * device number); -1: no place */
    int domains, priced_domains;      /* NCCL nodes its hosts cover there, and those its
                                       * profile priced (more: it straddles a scale-up
                                       * domain's edge) */
    double straddle;                  /* the straddle's price: its gradient all-reduces over
                                       * the network less over NVLink (in grad_sync and
                                       * apply) */
} ApsolveStageEstimate;

/* The full estimate of plan, priced with the placements and hardware of
 * sweep_id. The plan's stage costs are used as they are. */
int apsolve_full_estimate(struct Costdb *db, int64_t sweep_id, const ApsolvePlan *plan,
                          ApsolveFullEstimate *out);
/* The same with activation bytes (cross-stage transfers) multiplied by
 * activation_scale (> 0; the micro-batch ratio of a re-evaluation) and, when
 * stages is not NULL, each stage's part written into stages[plan->n_stages]
 * (caller-provided). APSOLVE_EDB on a database error. */
int apsolve_full_estimate_ex(struct Costdb *db, int64_t sweep_id, const ApsolvePlan *plan,
                             double activation_scale, ApsolveFullEstimate *out,
                             ApsolveStageEstimate *stages);

/* A plan re-evaluated at another micro-batch size without a new search
 * (rebatch.c): either scaled (compute costs and activation memory scale with
 * the micro-batch, parameters and optimizer state do not: an estimate) or
 * exact, from the entries of a sweep of the same model, hardware and
 * cluster profiled at that micro-batch. valid is 0 when a forced
 * data-parallel config's dp no longer divides the micro-batch (the failure
 * of the Alpa seed: the last, smaller batch of an epoch), or the exact
 * sweep has no such config. */
typedef struct ApsolveRebatch {
    int64_t global_batch;
    double ratio;                     /* new / old micro-batch size */
    double cost, sum_cost, max_stage_cost;
    int fits;                         /* every stage's memory still fits */
    int valid;                        /* every config still divides the micro-batch */
    int first_invalid_stage;          /* 1-based, 0: none */
    int worst_stage;                  /* least memory headroom, -1 unknown */
    double worst_need, worst_avail;
    int64_t old_micro, new_micro;     /* micro-batch sizes (samples) */
    int64_t exact_sweep;              /* sweep whose entries were used; 0: scaled */
    int missing_stage;                /* 1-based: no finite entry in the exact sweep; 0 none */
    int invalid_dp;                   /* dp of the first invalid stage (0: config missing) */
} ApsolveRebatch;

/* Scaled re-evaluation: summary only (kept for callers that need no plan). */
int apsolve_rebatch(const ApsolveProblem *p, const ApsolvePlan *plan, int64_t old_micro,
                    int64_t new_micro, ApsolveRebatch *out);
/* Scaled re-evaluation as a plan: a copy of plan whose stage costs are
 * multiplied by new/old, memory_needed recomputed (activations scaled) and
 * memory_ok / feasible set from it and from the dp rule. *out is the
 * caller's (apsolve_plan_free). */
int apsolve_rebatch_plan(const ApsolveProblem *p, const ApsolvePlan *plan, int64_t old_micro,
                         int64_t new_micro, ApsolvePlan **out);
/* Summary of a re-evaluated plan (scaled, or priced on an exact sweep's
 * problem): costs, memory fit, the dp rule and stages without an entry. */
void apsolve_rebatch_summary(const ApsolvePlan *np, int64_t old_micro, int64_t new_micro,
                             ApsolveRebatch *out);
/* A sweep profiled at micro-batch size new_micro of sweep_id's micro-batch
 * family (the same setup but for the batch: costdb_setup_diff with
 * COSTDB_SETUP_IGNORE_FAMILY), finished: the newest such, sweep_id itself
 * when its micro-batch is new_micro. *found is 0 when there is none. */
int apsolve_find_batch_sweep(struct Costdb *db, int64_t sweep_id, int64_t new_micro,
                             int64_t *found);

/* A sweep usable for another micro-batch size (apsolve_batch_sweeps). */
typedef struct ApsolveBatchSweep {
    int64_t sweep_id;
    int64_t micro_batch_size;         /* the sweep's stored micro-batch size */
    int64_t global_batch;             /* the sweep's own global batch */
} ApsolveBatchSweep;

/* sweep_id's micro-batch family (itself included; the same setup but for
 * the batch, as apsolve_find_batch_sweep), one finished sweep per
 * micro-batch size (the newest; sweep_id for its own size), by ascending
 * micro-batch size.
 * *out malloc'd (free()); an imported table lists only itself. */
int apsolve_batch_sweeps(struct Costdb *db, int64_t sweep_id, ApsolveBatchSweep **out,
                         size_t *n);
/* 1 when every finite entry of p has a known apply_cost (>= 0) and there is
 * at least one: the full objective is then the default. */
int apsolve_problem_apply_known(const ApsolveProblem *p);
/* 1 when every finite entry of p has its backward's weight-gradient
 * seconds (wgrad_cost >= 0, schema 12) and there is at least one: ZB-H1
 * can then be priced (docs/solver.md, "Schedules"). */
int apsolve_problem_wgrad_known(const ApsolveProblem *p);

/* One plan to write, with how it was made. */
typedef struct ApsolveOutput {
    const char *label;                /* "auto", "3-D dp=2,tp=2,pp=2", ... */
    const char *kind;                 /* auto | manual | uniform | 3d */
    const ApsolvePlan *plan;
    int64_t plan_id;                  /* 0: not stored */
    const ApsolveFullEstimate *full;  /* NULL: not computed */
    const ApsolveRebatch *rebatch;    /* NULL: no --batch */
    const ApsolveStageEstimate *full_stages; /* [plan->n_stages] or NULL */
    const ApsolvePlan *rebatch_plan;  /* the plan re-priced at --batch, or NULL */
    const ApsolveFullEstimate *rebatch_full; /* its full estimate, or NULL */
    const struct ApsolveFwVerdict *frameworks; /* which frameworks run it as priced, or NULL */
    const struct ApsolveFwSearch *fw_search; /* --framework: the search that chose it, or NULL */
} ApsolveOutput;

/* Writes n plans side by side in format "text" (Alpa's lines, latency,
 * stage table) or "json" (one object, or {"plans": [...]} when n > 1).
 * APSOLVE_EINVAL for an unknown format or a write error. */
int apsolve_write(FILE *out, const char *format, const ApsolveOutput *plans, size_t n);

#ifdef __cplusplus
}
#endif
#endif
