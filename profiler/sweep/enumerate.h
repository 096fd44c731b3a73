/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Enumeration of what a sweep profiles, with Alpa's semantics (docs/alpa-semantics.md):
 * the submesh choices of an N x M cluster, the autosharding configs of each
 * submesh, and the ordered list of (layer range, submesh, config) tuples.
 */
#ifndef APPROF_ENUMERATE_H
#define APPROF_ENUMERATE_H

#include <stddef.h>
#include <stdint.h>

#include "variant.h"

#define APPROF_MAX_SUBMESHES 32
#define APPROF_MAX_CONFIGS 256

typedef enum {
    APPROF_SUBMESH_POWER_OF_TWO = 0,
    APPROF_SUBMESH_SMALL_POWER_OF_TWO,
    APPROF_SUBMESH_ALL,
    APPROF_SUBMESH_MANUAL,
} ApprofSubmeshSpace;

typedef enum {
    APPROF_LOGICAL_SINGLE_NODE_MODEL_PARALLEL = 0,
    APPROF_LOGICAL_ALL,
    APPROF_LOGICAL_SAME_AS_PHYSICAL,
    APPROF_LOGICAL_DATA_PARALLEL_ONLY,
    APPROF_LOGICAL_MODEL_PARALLEL_ONLY,
} ApprofLogicalSpace;

typedef struct ApprofMeshShape {
    int n, m;
} ApprofMeshShape;

typedef struct ApprofConfigChoice {
    int logical_a, logical_b;
    int force_batch_dim;        /* -1: {} ; 0: force_batch_dim_to_mesh_dim = 0 */
    CostdbVariant variant;      /* docs/variants.md; plain = Alpa's */
} ApprofConfigChoice;

/* 8 bytes: a sweep holds its whole list (3.5 million tuples for 405B's
 * 126 layers on 32x8 with every variant), so the layers are at most
 * APPROF_TUPLE_MAX_LAYERS (the enumeration refuses more); submesh and
 * config indices are below APPROF_MAX_SUBMESHES and APPROF_MAX_CONFIGS. */
typedef struct ApprofTuple {
    int16_t start, end;         /* inclusive layer range */
    int16_t submesh, config;    /* indices into the sweep's lists */
} ApprofTuple;

#define APPROF_TUPLE_MAX_LAYERS INT16_MAX

/* Parses a submesh space: "power_of_two", "small_power_of_two", "all" or
 * "manual:1x1,1x2,...". Manual shapes go to manual[]/n_manual. 0 or -1 with
 * a message in err. */
int approf_submesh_space_parse(const char *s, ApprofSubmeshSpace *space, ApprofMeshShape *manual,
                               int max_manual, int *n_manual, char *err, size_t errlen);
const char *approf_submesh_space_name(ApprofSubmeshSpace s);
int approf_logical_space_parse(const char *s, ApprofLogicalSpace *out);
const char *approf_logical_space_name(ApprofLogicalSpace s);

/* Alpa's get_submesh_choices. gpus_per_host must be a power of two. Returns
 * the number of choices written (smallest first) or -1 with err set. */
int approf_submesh_choices(int hosts, int gpus_per_host, ApprofSubmeshSpace space,
                           const ApprofMeshShape *manual, int n_manual,
                           ApprofMeshShape *out, int max, char *err, size_t errlen);

/* Alpa's autosharding config choices for submesh (n, m) and a micro-batch
 * size (docs/alpa-semantics.md). node_gpus is the GPUs of one scale-up
 * domain when it spans several hosts (the spec's scaleup_gpus, 0 or m
 * otherwise): single_node_model_parallel then lets mp reach
 * min(n x m, node_gpus), the tensor parallelism NVLink carries across
 * trays (docs/hardware.md), where Alpa stops at one host's m. Returns the
 * count written. */
int approf_config_choices(ApprofMeshShape submesh, ApprofLogicalSpace space,
                          int64_t micro_batch_size, int node_gpus, ApprofConfigChoice *out,
                          int max);

/* Appends the stage variants (docs/variants.md) of the n_base Alpa configs
 * in cfg (of a submesh with `devices` devices): for each base config, every
 * variant of space (resolved: costdb_variant_space_resolve) except the
 * plain (0, none, 0) one, memory level outermost, ZeRO innermost. ZeRO > 0
 * needs devices > 1; selective recomputation needs attention. Returns the
 * new count (may exceed max: then only max are written). */
int approf_config_variants(ApprofConfigChoice *cfg, int n_base, int max, int devices,
                           CostdbVariantSpace space, int has_attention);

/* The tuples to profile, submeshes largest first, then start, end, config
 * (-1 for more than APPROF_TUPLE_MAX_LAYERS layers).
 * layer_flops (n_layers entries) is needed only when imbalance_tol >= 0
 * (the stage-imbalance filter; < 0 disables it). individual: only i == j.
 * *out is malloc'd. */
int approf_enumerate_tuples(int n_layers, const ApprofMeshShape *submeshes, int n_submeshes,
                            const int *configs_per_submesh, int cluster_hosts,
                            int cluster_gpus, int individual, double imbalance_tol,
                            const double *layer_flops, ApprofTuple **out, size_t *n_out);

/* The number of tuples approf_enumerate_tuples returns for the same
 * arguments, without listing them (O(submeshes x layers x log layers)), or
 * -1 on bad arguments or no memory. */
int64_t approf_count_tuples(int n_layers, const ApprofMeshShape *submeshes, int n_submeshes,
                            const int *configs_per_submesh, int cluster_hosts, int cluster_gpus,
                            int individual, double imbalance_tol, const double *layer_flops);

#endif
