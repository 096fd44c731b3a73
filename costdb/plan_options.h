/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A plan's options, the JSON object stored in plan.options: which tool made
 * the plan, its batch, memory budget, objective, schedule and, for a plan
 * given as a framework layout (apsolve --parallel), that layout. This
 * module is the one writer and the one reader of that text: every tool
 * reads the typed struct, never the text.
 */
#ifndef COSTDB_PLAN_OPTIONS_H
#define COSTDB_PLAN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The memory rule a plan was judged by (docs/solver.md, "Memory"). */
typedef enum {
    COSTDB_OBJECTIVE_UNKNOWN = 0,     /* written before the field existed: Alpa's */
    COSTDB_OBJECTIVE_ALPA,
    COSTDB_OBJECTIVE_FULL
} CostdbObjective;

/* The framework layout of a plan given as one (apsolve --parallel). */
typedef struct CostdbPlanLayout {
    int dp, tp, pp, sp, zero, vpp, mbs;
    char recompute[16];               /* none | selective | full | op */
    int cp;                           /* context parallelism; 0 or 1: none (not written) */
    char cp_comm[16];                 /* p2p | a2a | a2a+p2p | all_gather (docs/context-parallel.md) */
    int cp_a2a;                       /* a2a+p2p: the a2a (inner) group of cp; else 0 */
    int ep, etp;                      /* expert parallelism and expert tensor parallel size
                                       * (docs/expert-parallel.md); 0, 0: not given (not
                                       * written) */
    int dp_shard;                     /* HSDP: ZeRO-3's shard group, dp / dp_shard replicas
                                       * (docs/hsdp.md); 0: not given (not written) */
    int raf_off;                      /* FSDP2 reshard_after_forward off ("raf": 0) */
    int recompute_layers;             /* recompute full on the first K layers of each model
                                       * chunk only (docs/variants.md, "Partial
                                       * recomputation"); 0: every layer (not written) */
    int offload;                      /* activation offload: the first N layers of each stage
                                       * (apsolve's offload=N); 0: none (not written) */
    int moe_a2a_overlap;              /* Megatron-Core's MoE all-to-all overlap (apsolve's
                                       * moe_a2a_overlap=1, docs/expert-parallel.md); 0: off
                                       * (not written) */
} CostdbPlanLayout;

typedef struct CostdbPlanOptions {
    char tool[64];                    /* "apsolve VERSION" */
    char stage_option[16];            /* auto | manual | uniform | 3d */
    int micro_batches;
    int64_t global_batch, micro_batch_size, memory_budget;
    int max_stages;
    int inference;
    CostdbObjective objective;
    char schedule[16];                /* 1f1b | gpipe | interleaved | zb-h1 | interleaved-zb |
                                       * zbv; "" unknown */
    int virtual_stages;               /* >= 1 */
    int has_layout;
    CostdbPlanLayout layout;
    /* The memory headroom for allocator fragmentation (apsolve
     * --memory-headroom): headroom_bytes when > 0, else headroom_percent
     * of each device's memory; headroom_kept: the auto search kept it. */
    double headroom_percent;
    int64_t headroom_bytes;
    int headroom_kept;
    /* Which frameworks run the plan as priced (solver/frameworks.h): bit
     * COSTDB_FW_* set; has_frameworks 0 for a plan stored before. */
    int has_frameworks;
    unsigned frameworks;
} CostdbPlanOptions;

/* The frameworks of CostdbPlanOptions.frameworks, stored by these names
 * (solver/frameworks.h numbers them the same way). */
enum { COSTDB_FW_MEGATRON = 0, COSTDB_FW_DEEPSPEED, COSTDB_FW_TORCHTITAN, COSTDB_FW_COUNT };
extern const char *const costdb_framework_keys[COSTDB_FW_COUNT];

/* Writes o as the stored JSON object into out (len bytes, always
 * terminated). Text fields are JSON-escaped. 0, or COSTDB_EINVAL when out
 * is too small. */
int costdb_plan_options_format(const CostdbPlanOptions *o, char *out, size_t len);

/* Reads stored options text into *o (zeroed first; virtual_stages 1 when
 * absent). Unknown keys are skipped (a newer writer), values are range
 * checked. 0; COSTDB_EPARSE with "options: column N: ..." in err (if given)
 * for text that is not a JSON object of the expected types; "" and NULL read
 * as no options. */
int costdb_plan_options_parse(const char *text, CostdbPlanOptions *o, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
