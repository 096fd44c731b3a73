/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the loaded report (plan, stages, placements, derived resharding
 * tasks and conversions, schedules) shared by report.c and the writers
 * (dumps.c, json.c, html.c, code.c). Not installed.
 */
#ifndef APREPORT_REPORT_INT_H
#define APREPORT_REPORT_INT_H

#include "apreport.h"
#include "costdb.h"

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
    int first_host, first_gpu;        /* device block: hosts x gpus from here */
    int64_t memory_implied;           /* peak + initial + in-flight (selected schedule) * intermediate */
    int variant_known;                /* the stage's config was found in the sweep */
    int memory_level, recompute, zero;/* its variant (docs/variants.md) */
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

struct ApreportReport {
    char db_label[COSTDB_TEXT_MAX];   /* basename of the database file */
    char name[COSTDB_NAME_MAX];
    CostdbPlan plan;
    CostdbSweep sweep;
    int has_model, has_hw;
    CostdbModel model;
    CostdbHardware hw;
    int num_layers;
    int64_t global_batch;
    RepStage *stages;
    size_t n_stages;
    CostdbReshardingTask *tasks;
    size_t n_tasks;
    int tasks_stored;                 /* stored by this load */
    RepConversion *convs;
    size_t n_convs, cap_convs;
    ApreportSchedule *sched[3];       /* 1F1B, GPipe, interleaved (NULL unless selected) */
    ApreportScheduleKind schedule;    /* the selected one: trace, deadlock check, memory */
    int virtual_stages;               /* chunks per stage of the interleaved schedule */
    ApreportDeadlock deadlock;
    char warnings[8][600];
    int n_warnings;
    double *xfer;                     /* [n_stages - 1] task seconds per boundary */
    double bw_intra, lat_intra, bw_inter, lat_inter;
};

/* The selected schedule (never NULL after apreport_load). */
const ApreportSchedule *rep_schedule(const ApreportReport *r);
/* "1F1B", "GPipe" or "interleaved, v chunks per stage" for a label. */
void rep_schedule_label(const ApreportReport *r, char *out, size_t len);
/* Transformer blocks per stage from the parameter names of its placements
 * (reports/code.c) into blocks[n_stages]; -1 with the reason in why when
 * they cannot be known. */
int rep_stage_blocks(const ApreportReport *r, int *blocks, char *why, size_t whylen);
/* The LiBai / Megatron-LM settings of a uniform plan as comments. */
void rep_write_framework_args(const ApreportReport *r, FILE *f);
/* Byte size of a dtype name ("f32", "float32", "bf16", ...); 4 if unknown. */
int rep_dtype_bytes(const char *dtype);
/* "float32" for "f32" etc. */
const char *rep_dtype_jax(const char *dtype);
/* Writes v as Python tuple/list text of the shape: "(128, 128)" or "[2048,8192]". */
void rep_shape_text(const char *shape, int jax, char *out, size_t len);
/* GB = 2^30 with three decimals, as Alpa prints. */
double rep_gb(int64_t bytes);
/* Escapes s for HTML or JSON into f. */
void rep_html_escape(FILE *f, const char *s);
/* The Python option dict of a config: "{}" or "{'force_batch_dim_to_mesh_dim': 0}". */
void rep_option_dict(int force_batch_dim, char *out, size_t len);

#endif
