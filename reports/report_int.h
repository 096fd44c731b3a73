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
    int64_t memory_implied;           /* peak + initial + in-flight (1F1B) * intermediate */
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
    ApreportSchedule *sched[2];       /* 1F1B, GPipe */
    ApreportDeadlock deadlock;
    char warnings[8][600];
    int n_warnings;
    double *xfer;                     /* [n_stages - 1] task seconds per boundary */
    double bw_intra, lat_intra, bw_inter, lat_inter;
};

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
