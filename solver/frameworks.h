/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which frameworks run a plan as it was priced (docs/solver.md, "Which
 * frameworks run a plan"): one rule over the plan's layout, per stage its
 * submesh, logical mesh, layers, recomputation, ZeRO stage and the weight
 * matrices its priced sharding keeps whole over the tensor-parallel axis,
 * and the plan's schedule and precision. apsolve prints and stores the
 * verdict (costdb plan options), apreport shows it and its launch files
 * say why a framework cannot run the plan. The frameworks' limits were
 * read at the versions of reports/manifests/ (docs/export-*.md).
 */
#ifndef APSOLVE_FRAMEWORKS_H
#define APSOLVE_FRAMEWORKS_H

#include <stddef.h>
#include <stdint.h>

#include "apsolve.h"
#include "plan_options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stored plan options number them (costdb_framework_keys). */
enum {
    APSOLVE_FW_MEGATRON = COSTDB_FW_MEGATRON,     /* Megatron-LM core_v0.19.0 */
    APSOLVE_FW_DEEPSPEED = COSTDB_FW_DEEPSPEED,   /* DeepSpeed v0.16.4 */
    APSOLVE_FW_TORCHTITAN = COSTDB_FW_TORCHTITAN, /* torchtitan v0.2.2 */
    APSOLVE_FW_COUNT = COSTDB_FW_COUNT
};

/* One stage as the rule sees it. */
typedef struct ApsolveFwStage {
    int layers;                       /* approf layers in the stage */
    int hosts, gpus;                  /* submesh */
    int logical_a, logical_b;         /* dp, tp */
    int force_batch_dim;              /* -1: {} */
    CostdbVariant variant;            /* recompute, zero -1: unknown; the level is not read */
    int tp_whole;                     /* weight matrices whole over the tp axis; -1 unknown */
    int moe;                          /* the stage holds expert weights (costdb_expert_split) */
    int seq_split;                    /* priced with an activation split on the sequence over
                                       * the tp axis (costdb_activation_seq_split) */
    int blocks;                       /* transformer blocks (costdb_stage_blocks); 0: unknown or
                                       * a block cut between stages, the layers are judged;
                                       * APSOLVE_FW_BLOCKS_LATER: not judged (a layout before
                                       * pricing) */
} ApsolveFwStage;
#define APSOLVE_FW_BLOCKS_LATER (-2)

/* The ZeRO-3 schedule a sweep priced (approf sweep --zero3-schedule,
 * recorded in the sweep's options; docs/variants.md "ZeRO-3 overlap"). */
enum {
    APSOLVE_ZERO3_SERIAL = 0,         /* every gather and reduce-scatter adds up (the default) */
    APSOLVE_ZERO3_FSDP2 = 1,          /* PyTorch FSDP2's overlap, as torchtitan runs ZeRO-3 */
    APSOLVE_ZERO3_DEEPSPEED = 2       /* DeepSpeed stage 3's (overlap_comm, prefetching) */
};

typedef struct ApsolveFwPlan {
    const ApsolveFwStage *stages;
    size_t n;
    int schedule, virtual_stages;     /* ApsolveSchedule, chunks per device */
    int fp16;                         /* the sweep's dtype is float16 */
    int zero3_schedule;               /* APSOLVE_ZERO3_*: how the sweep priced ZeRO-3 */
} ApsolveFwPlan;

/* The ZeRO-3 schedule a sweep's options JSON records ("zero3_schedule"):
 * APSOLVE_ZERO3_*; serial when it records none (a default sweep, or one
 * written before the option). */
int apsolve_zero3_schedule_of(const char *sweep_options);
/* "serial", "fsdp2", "deepspeed" (approf sweep --zero3-schedule's names). */
const char *apsolve_zero3_schedule_name(int schedule);

#define APSOLVE_FW_WHY 320
typedef struct ApsolveFwVerdict {
    unsigned runs;                    /* bit f: framework f runs the plan as priced */
    char why[APSOLVE_FW_COUNT][APSOLVE_FW_WHY]; /* why f does not; "" when it does */
} ApsolveFwVerdict;

/* "Megatron-LM", "DeepSpeed", "torchtitan"; NULL out of range. */
const char *apsolve_framework_name(int f);
/* "megatron", "deepspeed", "torchtitan" (the stored and JSON names,
 * costdb_framework_keys). */
const char *apsolve_framework_key(int f);

/* The rule: which frameworks run p as priced, and why the others do not. */
void apsolve_frameworks(const ApsolveFwPlan *p, ApsolveFwVerdict *v);

/* The verdict of a priced plan of sweep (its placements give each tp
 * stage's whole weight matrices; dtype is the sweep's). 0, or -1 when out
 * of memory (v then says no framework, with the reason). */
int apsolve_plan_frameworks(struct Costdb *db, int64_t sweep, const char *dtype,
                            const ApsolvePlan *pl, ApsolveFwVerdict *v);

/* Prices the plan specs (n stages) as the frameworks run it: stages with
 * tp > 1 at the memory level whose stored placements split the weight
 * matrices over the tp axis (tp_layout.c; the next such level while a
 * stage does not fit), else as apsolve_evaluate. specs' memory levels are
 * set. The closest plan of a launch file is priced so. */
int apsolve_evaluate_as_run(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            const ApsolveOptions *opt, ApsolveStageSpec *specs, size_t n,
                            ApsolvePlan **out, char *err, size_t errlen);

/* apsolve_evaluate_as_run under the memory-headroom rule
 * (apsolve_keep_headroom): the memory levels that keep opt's headroom
 * where some do (each tp stage's next splitting level while it leaves
 * less), else as apsolve_evaluate_as_run against the raw capacity;
 * opt->search_headroom says which. Where a search applies the headroom
 * (apsolve --framework) a layout is priced so. */
int apsolve_evaluate_as_run_keep(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                                 ApsolveOptions *opt, ApsolveStageSpec *specs, size_t n,
                                 ApsolvePlan **out, char *err, size_t errlen);

/* The limits a --parallel layout's knobs add to the verdict of its
 * stages (apsolve_frameworks): context parallelism (apsolve_cp_frameworks),
 * expert parallelism (apsolve_ep_frameworks), HSDP and raf=0 of ZeRO-3
 * (apsolve_hsdp_frameworks). apsolve and apreport judge a layout so. */
struct ApsolveParallel;
void apsolve_parallel_frameworks(const struct ApsolveParallel *par, ApsolveFwVerdict *v);

/* Whether a sweep's dtype name is float16 ("f16", "fp16", "float16"). */
int apsolve_fw_dtype_fp16(const char *dtype);

/* The framework whose key (apsolve_framework_key) is s: APSOLVE_FW_*, or
 * -1 when s is none of them. */
int apsolve_framework_parse(const char *s);

/* What apsolve --framework F did (session_framework.c, docs/solver.md "The
 * best plan a framework runs"): the uniform layouts it enumerated, how
 * many an exact prune left out, how many it priced as the framework runs
 * them, how many of those F runs as priced, fit in memory and keep the
 * headroom, and the winner's --parallel text. */
typedef struct ApsolveFwSearch {
    int framework;                    /* APSOLVE_FW_* */
    long layouts;                     /* uniform layouts enumerated */
    long pruned_rule;                 /* F's rules refuse them whatever their pricing */
    long pruned_memory;               /* a stage fits at no memory level */
    long missing;                     /* the sweep has no entry for a stage */
    long pruned_bound;                /* their T alone is no lower than the best's estimate */
    long priced;                      /* priced as run (apsolve_evaluate_as_run) */
    long runs;                        /* of those, F runs as priced */
    long fit;                         /* of those, every stage fits in memory */
    long headroom;                    /* of those, every stage keeps the headroom */
    int headroom_kept;                /* the winner keeps the headroom */
    double price;                     /* the winner's full estimate (its objective without one) */
    double seconds;                   /* the search's time */
    char layout[160];                 /* the winner as --parallel text */
} ApsolveFwSearch;

/* "Megatron-LM, torchtitan" (or "none") of the runs mask, into out. */
void apsolve_frameworks_list(unsigned runs, char *out, size_t len);

#ifdef __cplusplus
}
#endif

#endif
