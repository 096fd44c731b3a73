/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the loaded report (plan, stages, placements, derived resharding
 * tasks and conversions, schedules) shared by report.c (loading), export.c
 * (the closest expressible plan), compare.c, util.c (the shared writers of
 * literals) and the output writers (dumps.c, json.c, html.c, code.c). Not
 * installed.
 */
#ifndef APREPORT_REPORT_INT_H
#define APREPORT_REPORT_INT_H

#include "activation_offload.h"
#include "apreport.h"
#include "costdb.h"
#include "frameworks.h"
#include "headline.h"
#include "json_write.h"
#include "plan_options.h"

typedef struct RepTensor {
    CostdbPlacement pl;
    ApreportLayout layout;
    int layout_ok;                    /* the spec parsed */
    ApreportVerdict verdict;
    int64_t bytes;                    /* whole tensor */
    int64_t local_bytes;              /* per device */
} RepTensor;

typedef struct RepStage {
    CostdbPlanStage st;
    RepTensor *tensors;               /* params, inputs, outputs (costdb order) */
    size_t n_tensors;
    int have_entries;                 /* fwd and bwd entries found */
    int64_t intermediate, initial;
    double wgrad;                     /* the backward entry's weight-gradient seconds (schema
                                       * 12; a cp plan's / cp), ZB-H1's W; < 0 unknown */
    int first_host, first_gpu;        /* device block: hosts x gpus from here */
    int domains, priced_domains;      /* NCCL nodes it covers there, and those its profile
                                       * priced (costdb_stage_layout) */
    int64_t memory_implied;           /* apsolve's memory rule (schedule.h) under the selected schedule */
    double mem_in_flight;             /* micro-batches in flight that rule counts */
    int variant_known;                /* the stage's config was found in the sweep */
    CostdbVariant variant;            /* its variant (docs/variants.md) */
    /* tp > 1 (logical axis 1): weight matrices, and those the priced
     * sharding keeps whole on that axis (costdb_weight_whole_on_axis1);
     * counted once at load, read by the warnings and the launch files */
    size_t tp_weights, tp_whole;
    /* a recompute_layers plan (report_rlayers.c): the first rl_k layers of
     * each of rl_chunks chunks of rl_chunk_layers layers recomputed, as
     * apsolve composed the stage; rl_chunks 0: a full stage's stored
     * entry, every layer recomputed */
    int rl_k, rl_chunks, rl_chunk_layers;
    /* an offload plan (report_offload.c): what apsolve priced for the
     * stage (solver/activation_offload.h), or why it could not be */
    int have_offload;
    ApsolveOffloadStage offload;
    char offload_why[256];
} RepStage;

typedef struct RepConversion {
    int stage;                        /* where it happens (dst stage for resharding) */
    int src_stage;                    /* -1: inside the stage */
    char tensor[COSTDB_NAME_MAX * 2];
    char role[8];
    int axis;                         /* mesh axis (of the dst mesh) */
    ApreportConversion kind;
    int flagged;
    char why[96];
} RepConversion;

/* The closest plan a runtime can express (reports/export.c): uniform stages
 * with the layout most stages of the plan have, priced at load time with
 * the solver (apsolve_evaluate) for the schedule as reported ([0]) or
 * 1F1B ([1]), each recomputation and each ZeRO stage. */
typedef struct RepClosest {
    int have;                         /* a layout that uses every device was found */
    int hosts, gpus, logical_a, logical_b, force_batch_dim, pp;
    int priced[2][COSTDB_RECOMPUTE_COUNT][4];              /* 1: evaluated (cost may be +inf: not profiled) */
    double cost[2][COSTDB_RECOMPUTE_COUNT][4];             /* the pipeline time T */
    double total[2][COSTDB_RECOMPUTE_COUNT][4];            /* the objective (T + apply-grad under full) */
    int feasible[2][COSTDB_RECOMPUTE_COUNT][4];
    ApsolveFwVerdict fw[2][COSTDB_RECOMPUTE_COUNT][4];     /* which frameworks run that plan as priced */
    char why[240];                    /* no layout / not priced: why */
} RepClosest;

struct ApreportReport {
    char db_label[COSTDB_TEXT_MAX];   /* basename of the database file */
    char name[COSTDB_NAME_MAX];
    CostdbPlan plan;
    CostdbPlanOptions opts;           /* plan.options, decoded (costdb/plan_options.h) */
    CostdbSweep sweep;
    int has_model, has_hw;
    CostdbModel model;
    CostdbHardware hw;
    int num_layers;
    int64_t global_batch;
    double flops_per_sample;          /* forward + backward model FLOPs of one sample; 0 unknown */
    RepStage *stages;
    size_t n_stages;
    CostdbReshardingTask *tasks;
    size_t n_tasks;
    int tasks_stored;                 /* stored by this load */
    RepConversion *convs;
    size_t n_convs, cap_convs;
    ApreportSchedule *sched[APREPORT_SCHED_COUNT]; /* by kind: 1F1B, GPipe, interleaved, ZB-H1,
                                       * interleaved ZB, ZBV (all but the first two NULL
                                       * unless selected) */
    ApreportScheduleKind schedule;    /* the selected one: trace, deadlock check, memory */
    int virtual_stages;               /* chunks per stage of the interleaved schedule */
    ApreportDeadlock deadlock;
    char warnings[8][600];
    int n_warnings;
    double *xfer;                     /* [n_stages - 1] task seconds per boundary */
    double bw_intra, lat_intra, bw_inter, lat_inter;
    int allow_infeasible;             /* plan code for an infeasible plan too */
    unsigned exports;                 /* APREPORT_EXPORT_* bits written by apreport_write_all */
    RepClosest closest;
    /* which frameworks run the plan as priced: apsolve's stored verdict,
     * the reasons from the same rule (rep_frameworks, reports/launch_closest.c) */
    ApsolveFwVerdict frameworks;
    RepHeadline headline;             /* what the report answers first (headline.h) */
};

/* Whether every stage has the same submesh, logical mesh and option and
 * the layer counts differ by at most one (reports/dumps.c). */
int rep_plan_uniform(const ApreportReport *r);
/* Finds and prices r->closest from the plan's sweep in db (reports/launch_closest.c);
 * never fails the load: what cannot be priced is said in closest.why. */
void rep_closest_price(Costdb *db, ApreportReport *r);
/* Which frameworks run the loaded plan as priced (solver/frameworks.h's
 * rule over its stages, stored schedule and dtype), into v; the stored
 * verdict (plan options) decides where it is present. */
void rep_frameworks(const ApreportReport *r, ApsolveFwVerdict *v);

/* A plan priced with recompute_layers: each composed stage's saved
 * activations, optimizer state and W seconds as apsolve priced them
 * (reports/report_rlayers.c); 0, or APREPORT_EDB when the sweep cannot be
 * loaded. */
int rep_recompute_layers_stages(Costdb *db, ApreportReport *r);
/* An offload plan (apsolve --parallel ...,offload=N): each stage's
 * offload figures as apsolve priced them (apsolve_offload_stage over the
 * sweep's profiled entry, its hardware's host link and the model's
 * per-layer record; reports/report_offload.c) and its intermediate less
 * the bytes freed; 0, or APREPORT_EDB when the sweep cannot be loaded. */
int rep_offload_stages(Costdb *db, ApreportReport *r);
/* The layer ranges a stage recomputes (first..last, inclusive) into
 * first[]/last[] (max entries); their count. */
int rep_recomputed_ranges(const RepStage *s, int *first, int *last, int max);

/* The selected schedule (never NULL after apreport_load). */
const ApreportSchedule *rep_schedule(const ApreportReport *r);
/* "1F1B", "GPipe" or "interleaved, v chunks per stage" for a label. */
void rep_schedule_label(const ApreportReport *r, char *out, size_t len);
/* Transformer blocks per stage from the parameter names of its placements
 * (reports/code.c, costdb_stage_blocks: apsolve's verdict counts them so)
 * into blocks[n_stages]; -1 with the reason in why when they cannot be
 * known (a block split between stages among them). */
int rep_stage_blocks(const ApreportReport *r, int *blocks, char *why, size_t whylen);
/* The model's transformer blocks over all stages (distinct block keys, as
 * rep_stage_blocks finds them, a block split between stages counted once);
 * -1 when the parameter names show none. */
int rep_total_blocks(const ApreportReport *r);
/* The LiBai / Megatron-LM settings of a uniform plan as comments. */
void rep_write_framework_args(const ApreportReport *r, FILE *f);
/* "float32" for "f32" etc. */
const char *rep_dtype_jax(const char *dtype);
/* Writes v as Python tuple/list text of the shape: "(128, 128)" or "[2048,8192]". */
void rep_shape_text(const char *shape, int jax, char *out, size_t len);
/* GB = 2^30 with three decimals, as Alpa prints. */
double rep_gb(int64_t bytes);
/* The first line of every output of an infeasible plan, naming why: the
 * search found no plan, or the plan given by hand does not fit. */
const char *rep_infeasible_text(const ApreportReport *r);

/* Bounds of the outputs (docs/reports.md "Bounded outputs"): what a plan
 * of 2^20 micro-batches or a cluster of 2^20 devices would make gigabytes
 * of is summarised or cut, and the output says so. trace.json and the HTML
 * timeline draw the first and the last REP_SHOWN_MICRO micro-batches in
 * full and one summary per stage for those between; the HTML mesh draws
 * at most REP_MESH_MAX hosts and GPUs per host; an HTML table at most
 * REP_HTML_MAX_ROWS rows. report.json and the dumps keep everything. */
#define REP_SHOWN_MICRO 32
/* Stage x micro-batch x chunk passes apreport simulates at most (each
 * schedule holds all of them: about 300 bytes a pass for 1F1B and GPipe
 * together); a larger plan is refused before the simulation. */
#define REP_MAX_PASSES (1 << 22)
#define REP_MAX_PASSES_TEXT "4194304"
#define REP_MESH_MAX 64
#define REP_HTML_MAX_ROWS 1000

/* The summarised events of one stage and thread (0 compute, 1 send). */
typedef struct RepSummary {
    size_t events;
    double start, end;                /* earliest start, latest end */
} RepSummary;

/* Whether micro-batch mb of schedule s is drawn in full. */
int rep_micro_shown(const ApreportSchedule *s, int mb);
/* The micro-batches summarised, first..last; 0 when none is (*first and
 * *last untouched). */
int rep_micro_summarised(const ApreportSchedule *s, int *first, int *last);
/* Per stage and thread, the summarised events of s: *out malloc'd
 * [n_stages][2] (the caller frees it), NULL when nothing is summarised.
 * 0 or APREPORT_ENOMEM. */
int rep_summaries(const ApreportSchedule *s, RepSummary **out);
/* The HTML writer (reports/html.c): writes fmt to f as printf would, the
 * format being markup and every %s / %c argument escaped (< > & " '); a
 * non-finite %f / %g prints "n/a". Conversions: d i u x c s f g e with
 * flags, width, precision and l / ll / z; no '*'. Every HTML output goes
 * through it, so text from a database is escaped at this one place. */
void rep_html(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes the n bytes of s (or up to its NUL) as a Python string literal in
 * single quotes into out (always NUL-terminated and closed when len >= 3;
 * the text is cut before an escape that does not fit): backslash, quotes
 * and control characters escaped, valid UTF-8 outside ASCII as \uXXXX /
 * \UXXXXXXXX, other bytes as \xNN. The one writer of Python literals:
 * the <name>_plan.py output, the Alpa dumps and every comment that quotes
 * database text.
 * Needs 4 n + 3 bytes at most. */
void rep_py_quote(const char *s, size_t n, char *out, size_t len);
/* s as a JSON string (costdb_json_string) that is valid UTF-8: bytes that
 * are not UTF-8 (database text can hold anything) become U+FFFD. */
void rep_json_string(FILE *f, const char *s);
/* rep_py_quote of the whole of s (NULL: '') into f. */
void rep_py_string(FILE *f, const char *s);
/* s into a Python comment or dump line: as it is when every byte is
 * printable ASCII (no newline can end the comment), else rep_py_string. */
void rep_py_text(FILE *f, const char *s);
/* s as one POSIX shell word (the one shell-quoting writer: the Megatron-LM
 * args file): as it is when every byte is in [A-Za-z0-9_@%+=:,./-], else in
 * single quotes with each ' written as '\'' (so "" is ''). */
void rep_sh_word(FILE *f, const char *s);
/* s as a TOML basic string ("..."; the one TOML string writer): quote,
 * backslash and control characters escaped, valid UTF-8 kept, other bytes
 * U+FFFD (a TOML file must be UTF-8). */
void rep_toml_string(FILE *f, const char *s);
/* A sharding spec for a dump: the canonical text of its layout on the
 * logical mesh (a, b) when it parses, else a Python string literal. */
void rep_spec_text(const char *spec, int logical_a, int logical_b, char *out, size_t len);
/* The Python option dict of a config: "{}" or "{'force_batch_dim_to_mesh_dim': 0}". */
void rep_option_dict(int force_batch_dim, char *out, size_t len);

#endif
