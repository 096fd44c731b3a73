/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apreport: why a plan was chosen and what it does. Parses Alpa ShardingSpec
 * text back into layouts and gives each parameter and activation a verdict
 * (data parallel, tensor parallel, ...), classifies layout conversions
 * (split->gather, partial-sum->all-reduce, ...), derives the resharding
 * tasks between pipeline stages, simulates the plan under GPipe and 1F1B
 * and checks the blocking send/recv order for deadlock, and writes
 * Alpa-compatible dumps, report.json, report.html, a Chrome trace and
 * paste-able plan code. apreport_compare() matches the entries of two cost
 * databases. Nothing here prints to stdout or exits; writers take a FILE*
 * or a directory. Functions return 0 or a negative APREPORT_E* code.
 */
#ifndef APREPORT_H
#define APREPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "costdb.h"
#include "costdb_text.h"

#ifdef __cplusplus
extern "C" {
#endif

/* apreport's error codes. A costdb failure crosses into them as
 * APREPORT_EDB (message in costdb_errmsg), a solver failure as
 * APREPORT_ESOLVE or a message from apsolve_strerror, never as its own
 * number (the spaces overlap: -2 is COSTDB_ENOTDB and APSOLVE_EINVAL). */
enum {
    APREPORT_OK = 0,
    APREPORT_ENOMEM = -1,
    APREPORT_EINVAL = -2,    /* bad argument */
    APREPORT_EPARSE = -3,    /* malformed ShardingSpec text */
    APREPORT_EDB = -4,       /* a costdb call failed (costdb_errmsg has it) */
    APREPORT_EIO = -5,       /* cannot write an output file */
    APREPORT_ENOTFOUND = -6, /* no such plan / sweep */
    APREPORT_ESOLVE = -7,    /* the solver failed on a database */
    APREPORT_EINFEASIBLE = -8, /* plan code asked of an infeasible plan */
};

const char *apreport_strerror(int err);

/* ---- sharding layouts (reports/spec.c: SBP, conversions, verdicts) -------- */

#define APREPORT_MAX_DIMS COSTDB_MAX_DIMS

/* One tensor's layout on a logical mesh (a, b): per dimension the mesh axis
 * it is split over (-1 none, 0, 1, or 2 = both axes, axis 0 major). The
 * database's type: costdb_text.h formats and parses its ShardingSpec text
 * and shape text. */
typedef CostdbLayout ApreportLayout;

/* SBP of a tensor over one mesh axis (OneFlow's words): split on a
 * dimension, broadcast (replicated) or partial sum. */
typedef enum { APREPORT_SBP_B = 0, APREPORT_SBP_S, APREPORT_SBP_P } ApreportSbpKind;
typedef struct ApreportSbp {
    ApreportSbpKind kind;
    int dim;                          /* for S */
} ApreportSbp;

/* The SBP of l over mesh axis (0 or 1); B for an axis of size 1. */
ApreportSbp apreport_layout_sbp(const ApreportLayout *l, int axis);

typedef enum {
    APREPORT_CONV_NONE = 0,           /* same layout */
    APREPORT_CONV_SPLIT_GATHER,       /* S -> B: all-gather */
    APREPORT_CONV_PSUM_ALLREDUCE,     /* P -> B: all-reduce */
    APREPORT_CONV_PSUM_REDUCE_SCATTER,/* P -> S: reduce-scatter */
    APREPORT_CONV_BCAST_SPLIT,        /* B -> S: local slice */
    APREPORT_CONV_BCAST_PSUM,         /* B -> P: zero all but one replica (unusual) */
    APREPORT_CONV_SPLIT_SPLIT,        /* S(i) -> S(j): all-to-all */
    APREPORT_CONV_SPLIT_PSUM,         /* S -> P: pad with zeros (unusual) */
} ApreportConversion;

/* Classifies the conversion of one mesh axis from src to dst. */
ApreportConversion apreport_classify(ApreportSbp src, ApreportSbp dst);
/* "split->gather", "partial-sum->all-reduce", ... */
const char *apreport_conversion_name(ApreportConversion c);
/* The collective the conversion needs: "all-gather", "all-reduce", ... */
const char *apreport_conversion_collective(ApreportConversion c);
/* Whether converting a tensor of this role ("param", "input", "output") this
 * way is flagged as suspicious: broadcast->partial-sum of a parameter (the
 * conversion behind the LiBai 3-D deadlock report). */
int apreport_conversion_flagged(ApreportConversion c, const char *role);

typedef enum {
    APREPORT_VERDICT_SINGLE = 0,      /* one device: nothing to shard */
    APREPORT_VERDICT_REPLICATED,      /* parameter replicated: data parallel */
    APREPORT_VERDICT_SHARDED_WEIGHT,  /* parameter split: model / tensor parallel */
    APREPORT_VERDICT_SHARDED_OPT,     /* optimizer state split */
    APREPORT_VERDICT_BATCH_SHARDED,   /* activation split on the batch axis only */
    APREPORT_VERDICT_ACT_REPLICATED,  /* activation replicated */
    APREPORT_VERDICT_ACT_SHARDED,     /* activation split on a non-batch dim */
} ApreportVerdict;

/* The verdict for a tensor of role ("param" | "input" | "output") and name
 * (an optimizer-state path contains "opt_state") with layout l. */
ApreportVerdict apreport_verdict(const char *role, const char *name, const ApreportLayout *l);
const char *apreport_verdict_name(ApreportVerdict v);

/* ---- pipeline schedule simulation (reports/schedule.c) ------------------- */

/* The schedules the simulator knows: 1F1B, GPipe, Megatron-LM's
 * interleaved 1F1B with virtual_stages model chunks per device and the
 * zero-bubble ZB-H1, PyTorch's interleaved zero bubble (virtual_stages
 * chunks) and ZB-V (2 chunks in a V) (the names, orders and closed forms
 * are the solver's, schedule.h). */
typedef enum {
    APREPORT_SCHED_1F1B = 0, APREPORT_SCHED_GPIPE, APREPORT_SCHED_INTERLEAVED,
    APREPORT_SCHED_ZB_H1, APREPORT_SCHED_INTERLEAVED_ZB, APREPORT_SCHED_ZBV,
    APREPORT_SCHED_COUNT
} ApreportScheduleKind;
/* "1f1b" | "gpipe" | "interleaved" | "zb-h1" | "interleaved-zb" | "zbv". */
const char *apreport_schedule_name(ApreportScheduleKind k);

/* What the simulator needs: per stage forward and backward seconds of one
 * micro-batch and, per boundary s -> s+1, the transfer seconds of the
 * activation (the gradient back takes as long). xfer may be NULL (zero).
 * virtual_stages is read by the interleaved schedules only (< 2: plain 1F1B
 * or ZB-H1; ZBV always runs 2):
 * each stage is cut into that many model chunks of 1/v of its costs; the
 * hop from the last stage back to the first (chunk c to chunk c + 1) takes
 * the largest boundary transfer. wgrad is read by the zero-bubble
 * schedules only (which need it): the seconds of each stage's backward that compute the weight
 * gradients (0..bwd[s]), run as the deferred W pass; the B pass takes the
 * rest. */
typedef struct ApreportPipeline {
    int n_stages, micro_batches;
    const double *fwd, *bwd;          /* [n_stages] */
    const double *xfer;               /* [n_stages - 1] or NULL */
    int virtual_stages;
    const double *wgrad;              /* [n_stages] or NULL */
} ApreportPipeline;

/* Compute events first (forward, backward, ZB's weight-gradient pass),
 * then the transfers. Under ZB-H1 a BWD event is the B pass alone. */
typedef enum {
    APREPORT_EV_FWD = 0, APREPORT_EV_BWD, APREPORT_EV_WGRAD, APREPORT_EV_SEND_ACT,
    APREPORT_EV_SEND_GRAD,
} ApreportEventKind;

typedef struct ApreportEvent {
    ApreportEventKind kind;
    int stage;                        /* compute: its stage; send: the sender */
    int peer;                         /* send: the receiver; compute: -1 */
    int micro_batch;
    double start, end;                /* seconds from the iteration start */
    int chunk;                        /* model chunk (interleaved; else 0); sends: the sender's */
} ApreportEvent;

typedef struct ApreportSchedule {
    ApreportScheduleKind kind;
    int n_stages, micro_batches;
    ApreportEvent *events;            /* compute events per stage in order, then sends */
    size_t n_events;
    double iteration_time;
    double bubble_fraction;           /* 1 - busy / (stages * iteration time) */
    int *peak_in_flight;              /* [n_stages] micro-batches (interleaved: model chunks)
                                         forwarded, not yet backwarded (ZB-H1: whose W has
                                         not run) */
    double *busy;                     /* [n_stages] compute seconds */
    int virtual_stages;               /* model chunks per stage (1 unless interleaved) */
    double *in_flight;                /* [n_stages] peak_in_flight / virtual_stages: micro-
                                         batches' worth of the stage's activations */
} ApreportSchedule;

/* Simulates one training iteration: each stage runs its forward and
 * backward passes in the schedule's order (GPipe: all forwards, then all
 * backwards; 1F1B: min(S - s - 1, B) warm-up forwards, then one forward one
 * backward; interleaved: Megatron-LM's order over model chunks, warm-up of
 * min(2 (S - s - 1) + (v - 1) S, B v) chunk forwards, then one forward one
 * backward, then the cool-down; ZB-H1: 1F1B's warm-up, then stage s runs
 * its first s backwards as the B pass alone and every later one as B then
 * W, its deferred W last; interleaved ZB and ZBV: the solver's orders,
 * apsolve_schedule_zb_order), each as soon as its input has arrived.
 * Interleaved with v >= 2 needs S >= 2 and B a multiple of S; the
 * zero-bubble schedules need p->wgrad and what apsolve_schedule_valid
 * asks (APREPORT_EINVAL otherwise). The caller owns *out. */
int apreport_simulate(const ApreportPipeline *p, ApreportScheduleKind kind,
                      ApreportSchedule **out);
void apreport_schedule_free(ApreportSchedule **s);

/* A blocking point-to-point program: per stage, its sends and receives in
 * issue order. A send and a receive rendezvous when both are the current op
 * of their stages and name each other with the same tag. */
typedef struct ApreportCommOp {
    int is_send;
    int peer;
    int tag;                          /* micro_batch * 2 + (0 activation, 1 gradient) */
    int chunk;                        /* the sender's model chunk (interleaved; else 0) */
} ApreportCommOp;

typedef struct ApreportCommProgram {
    int n_stages;
    ApreportCommOp **ops;             /* [n_stages][n_ops[s]] */
    size_t *n_ops;
} ApreportCommProgram;

/* The send/recv program of a simulated schedule: each stage issues its
 * transfers in the order of their simulated time (ties by sender, then
 * tag), so every pair of stages sees its messages in one order. The caller
 * owns *out (apreport_comm_program_free). */
int apreport_comm_program(const ApreportSchedule *s, ApreportCommProgram **out);
void apreport_comm_program_free(ApreportCommProgram **p);

#define APREPORT_MAX_CYCLE 64

typedef struct ApreportDeadlock {
    int deadlocked;
    int cycle_len;                    /* 0: no cycle (a stage waits on a finished one) */
    int cycle[APREPORT_MAX_CYCLE];    /* stages, each waiting on the next */
    int pair_src, pair_dst;           /* first pair whose orders disagree, or -1 */
    char message[512];
} ApreportDeadlock;

/* Runs the program with rendezvous semantics (ops match on peer, tag and
 * chunk). When it gets stuck, builds the wait-for graph (each blocked stage waits on the peer of its current op)
 * and reports a cycle of it in *out; also reports the first pair of stages
 * whose programs order their common messages differently. */
int apreport_deadlock_check(const ApreportCommProgram *p, ApreportDeadlock *out);

/* Warnings for B micro-batches on S stages (B < S, then B < 2 S): writes at
 * most one line into buf and returns 1, or returns 0 with buf "". */
int apreport_microbatch_warning(int stages, int micro_batches, char *buf, size_t len);

/* ---- reports from a database (reports/report.c, writers) ----------------- */

typedef struct ApreportReport ApreportReport;

typedef struct ApreportOptions {
    int64_t plan_id;                  /* 0: the newest plan */
    const char *name;                 /* dump file prefix; NULL: "plan<ID>" */
    int store_resharding;             /* store derived tasks (costdb_resharding_put) */
    ApreportScheduleKind schedule;    /* the schedule the plan runs (default 1F1B) */
    int virtual_stages;               /* model chunks per stage for interleaved (>= 2) */
    int schedule_from_plan;           /* 1: the plan's stored schedule (apsolve's options),
                                       * the two fields above being the fallback */
    int allow_infeasible;             /* write plan code for an infeasible plan too */
    unsigned exports;                 /* launch configurations written by apreport_write_all
                                       * (APREPORT_EXPORT_* bits); 0: all three */
} ApreportOptions;

/* The runtimes apreport writes a launch configuration for (reports/export.c). */
enum {
    APREPORT_EXPORT_MEGATRON = 1,     /* <name>_megatron.args */
    APREPORT_EXPORT_DEEPSPEED = 2,    /* <name>_deepspeed.json */
    APREPORT_EXPORT_TORCHTITAN = 4,   /* <name>_torchtitan.toml */
    APREPORT_EXPORT_ALL = 7,
    APREPORT_EXPORT_NONE = 8,         /* none of them */
};
/* Parses "megatron,deepspeed,torchtitan" (any subset, any order), "all" or
 * "none" into *out. APREPORT_EINVAL with the bad name in err otherwise. */
int apreport_export_parse(const char *list, unsigned *out, char *err, size_t errlen);

/* Loads plan opt->plan_id (or the newest) with its sweep, stages,
 * placements and entries; derives resharding tasks (stored when asked and
 * the plan has none yet), conversions and verdicts; simulates 1F1B, GPipe
 * and, when opt->schedule is interleaved, that schedule; checks the
 * selected schedule (opt->schedule) for deadlock and prices its in-flight
 * activations into each stage's memory; the trace, the Gantt chart and the
 * plan code follow it too. APREPORT_EINVAL (with the reason in err) for an
 * interleaved schedule the plan cannot run (schedule.h's rules). The caller
 * owns *out. err gets context. */
int apreport_load(Costdb *db, const ApreportOptions *opt, ApreportReport **out, char *err,
                  size_t errlen);
void apreport_free(ApreportReport **r);

/* Writes every output into dir (created if missing): the Alpa dumps
 * (<name>_input_placement_specs.txt, <name>_output_placement_specs.txt,
 * <name>_resharding_tasks.txt, <name>_stage_<k>.mem_usage.txt,
 * dp_result.txt), report.json, report.html, trace.json, <name>_plan.py and
 * the launch configurations the report was loaded with (<name>_megatron.args,
 * <name>_deepspeed.json, <name>_torchtitan.toml; default all three).
 * Each file is written to a temporary file in dir and renamed into place
 * (solver/outfile.h): a failed write leaves no truncated file, and a
 * symbolic link at an output path is refused (APREPORT_EIO, the path in
 * err). An infeasible plan (plan.feasible 0) is marked in every output;
 * <name>_plan.py and the launch configurations are left out unless
 * opt->allow_infeasible was set, and
 * the HTML page then shows no code. */
int apreport_write_all(const ApreportReport *r, const char *dir, char *err, size_t errlen);

/* The single writers, each to an open stream. */
int apreport_write_input_specs(const ApreportReport *r, FILE *f);
int apreport_write_output_specs(const ApreportReport *r, FILE *f);
int apreport_write_resharding(const ApreportReport *r, FILE *f);
int apreport_write_mem_usage(const ApreportReport *r, int stage, FILE *f);
int apreport_write_dp_result(const ApreportReport *r, FILE *f);
int apreport_write_json(const ApreportReport *r, FILE *f);
int apreport_write_html(const ApreportReport *r, FILE *f);
int apreport_write_trace(const ApreportReport *r, FILE *f);
/* APREPORT_EINFEASIBLE (nothing written) for an infeasible plan unless the
 * report was loaded with allow_infeasible; then the code starts with a
 * comment saying the plan is infeasible. */
int apreport_write_code(const ApreportReport *r, FILE *f);
/* The launch configurations (docs/reports.md "Launch the plan"): Megatron-LM /
 * NeMo arguments (one per line, shell-quoted, # comments), a DeepSpeed JSON
 * config and a torchtitan TOML job config. Where the runtime cannot express
 * the plan, the file starts with a comment (JSON: "_comment") saying why and
 * states the closest plan it can run, with its cost priced by the solver at
 * load time. Same infeasible rule as apreport_write_code. */
int apreport_write_megatron(const ApreportReport *r, FILE *f);
int apreport_write_deepspeed(const ApreportReport *r, FILE *f);
int apreport_write_torchtitan(const ApreportReport *r, FILE *f);
/* Whether the report's plan is feasible (stored feasible and finite). */
int apreport_feasible(const ApreportReport *r);
/* A short human summary (plan, verdict counts, warnings). */
int apreport_write_summary(const ApreportReport *r, FILE *f);

/* ---- comparing two databases (reports/compare.c) ------------------------- */

typedef struct ApreportCompareOptions {
    int64_t sweep_a, sweep_b;         /* 0: the newest sweep of each */
    const char *label_a, *label_b;    /* names shown (the file names) */
    int solve;                        /* run the solver on each side */
} ApreportCompareOptions;

typedef struct ApreportCompare ApreportCompare;

/* Matches the entries of a sweep of a with one of b by model signature,
 * layer range, submesh shape, config (logical shape + force option) and
 * phase; computes ratios b/a, summary statistics and, when asked, the plan
 * the solver yields on each side. The caller owns *out. */
int apreport_compare(Costdb *a, Costdb *b, const ApreportCompareOptions *opt,
                     ApreportCompare **out, char *err, size_t errlen);
void apreport_compare_free(ApreportCompare **c);
/* Writes the comparison as "text", "csv", "json" or "html"; APREPORT_EINVAL
 * for another format. */
int apreport_compare_write(const ApreportCompare *c, const char *format, FILE *f);

/* Summary numbers of a comparison (for tests and callers). */
typedef struct ApreportCompareSummary {
    size_t matched, only_a, only_b;
    size_t ratios;                    /* matched entries with finite positive costs */
    double geomean, min_ratio, max_ratio;      /* compute cost b / a */
    double mean_peak_diff, max_abs_peak_diff;  /* peak_memory b - a, bytes */
    int models_match;                 /* signatures equal (or both imported) */
} ApreportCompareSummary;
void apreport_compare_summary(const ApreportCompare *c, ApreportCompareSummary *out);

#ifdef __cplusplus
}
#endif
#endif
