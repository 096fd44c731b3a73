/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sharding context's private state, shared by sharding.c (stages, the
 * ILP, the program's inputs) and memo.c (what it keeps across the stages
 * of a sweep: iteration spaces, node costs per mesh, Pareto sets by stage
 * structure, program keys; docs/architecture.md "No rework per tuple").
 */
#ifndef APPROF_SHARDING_CONTEXT_H
#define APPROF_SHARDING_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"
#include "sharding/internal.h"
#include "sharding/sharding.h"

/* Most memory levels a request may ask for. */
#define SHARD_MAX_LEVELS 8

/* The Pareto set of the last stage solved, kept for its other variants
 * (the sweep profiles every variant of a (range, mesh, config) in a row). */
typedef struct ParetoMemo {
    int valid;
    int key[8];
    int n_ops, n_points;
    int *choices;                 /* n_points * n_ops */
    double times[SHARD_MAX_LEVELS];
} ParetoMemo;

/* Range-independent work kept across the stages of a sweep: each op's
 * iteration space, and per logical mesh the compute part of every op's
 * node cost (kernels and the all-reduce of a split reduction), which does
 * not depend on the layer range (docs/architecture.md). */
#define SHARD_COST_SLOTS ((APPROF_MAX_ITER + 1) * (APPROF_MAX_ITER + 1))
#define SHARD_COST_TABLES 64

typedef struct NodeCostTable {
    ShardMesh mesh;
    double *cost;                 /* n_ops * SHARD_COST_SLOTS, NaN: not computed */
} NodeCostTable;

/* Pareto sets by stage structure: two stages whose ops, shapes, in-stage
 * edges, boundary facts (stage inputs and outputs, first consumers of
 * parameters, saved tensors) and mesh are alike have the same sharding ILP,
 * term for term, so the same Pareto set (a transformer's interior ranges
 * [i, j] and [i+1, j+1]). The key is computed in one pass over the stage's
 * ops; a hit skips the node costs, the edge matrices and the ILP. */
/* The head of an entry of an open-addressing table keyed by a 128-bit
 * hash (memo.c's shard_memo_slot). */
typedef struct MemoSlot {
    ApprofHash128 key;
    int used;
} MemoSlot;

typedef struct StructEntry {
    MemoSlot s;
    int n_ops, n_points;
    double times[SHARD_MAX_LEVELS];
    unsigned char *choices;       /* n_points * n_ops strategy indices */
} StructEntry;

typedef struct StructMemo {
    StructEntry *e;
    size_t n, cap;                /* open addressing, cap a power of two */
    size_t bytes;                 /* held by choices; inserts stop at the cap */
} StructMemo;

#define SHARD_STRUCT_MEMO_BYTES ((size_t)256 << 20)

/* Edge matrices by what they depend on: the descriptors of the producer
 * and the consumer (shapes, iteration spaces, saved inputs), the slots,
 * the mesh, the forced batch axis and whether the producer's all-reduce
 * may fuse into a reduce-scatter (the tensor's one consumer in the stage,
 * not a stage output). The same edge of every layer of a transformer, on
 * one mesh, is computed once for all the ranges that hold it. */
typedef struct EdgeEntry {
    MemoSlot s;
    int kp, kc;
    double *r;                    /* kp * kc seconds */
} EdgeEntry;

typedef struct EdgeMemo {
    EdgeEntry *e;
    size_t n, cap;                /* open addressing, cap a power of two */
    size_t bytes;                 /* held by the matrices; inserts stop at the cap */
} EdgeMemo;

#define SHARD_EDGE_MEMO_BYTES ((size_t)64 << 20)

struct ApprofShardContext {
    const ApprofGraph *g;
    const ApprofLayering *l;
    const ApprofHardwareSpec *hw;
    int micro_batches;
    ApprofIlpCache *cache;
    ApprofShardStats st;
    ParetoMemo memo;
    ApprofIterSpace *spaces;      /* per graph op */
    unsigned char *space_state;   /* 0 not computed, 1 ok, 2 error */
    NodeCostTable tables[SHARD_COST_TABLES];
    int n_tables, next_victim;
    uint64_t *op_desc;            /* per graph op: hash of what its costs depend on */
    int *last_reader;             /* per tensor: the last op that reads it, -1 none */
    void *prog_scratch;           /* program.c's per-tensor scratch, all zero at rest */
    size_t prog_scratch_n;
    StructMemo smemo;
    EdgeMemo ememo;
};

/* memo.c */
double *shard_cost_table(ApprofShardContext *ctx, const ShardMesh *m);
int shard_cached_iter_space(ApprofShardContext *ctx, int op, ApprofIterSpace *out);
ApprofHash128 shard_struct_key(ApprofShardContext *ctx, const ShardStage *st, int levels,
                               int method);
StructEntry *shard_smemo_slot(StructMemo *m, ApprofHash128 key, int insert);
void shard_remember_structure(ApprofShardContext *ctx, ApprofHash128 k, const ParetoMemo *memo,
                              int maxk);
ApprofHash128 shard_edge_key(ApprofShardContext *ctx, const ShardStage *st, int op_p, int op_c,
                             int in_slot);
const double *shard_edge_find(const ApprofShardContext *ctx, ApprofHash128 k, int kp, int kc);
void shard_edge_remember(ApprofShardContext *ctx, ApprofHash128 k, int kp, int kc,
                         const double *r);
void shard_edge_memo_free(EdgeMemo *m);

/* sharding.c */
int shard_stage_setup(ApprofShardContext *ctx, const ApprofShardRequest *req, ShardStage *st,
                      char *err, size_t errlen);
void shard_stage_free(ShardStage *st);
int shard_tensor_slot(const int *list, int n, int t);

#endif
