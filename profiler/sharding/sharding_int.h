/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal interface of the sharding pass shared by sharding.c (strategies,
 * costs, the ILP) and program.c (the per-device program, memory and
 * placements built from the chosen strategies).
 */
#ifndef APPROF_SHARDING_INT_H
#define APPROF_SHARDING_INT_H

#include "graph.h"
#include "hash.h"
#include "hardware.h"
#include "stage.h"

/* (n_iter + 1)^2 with n_iter <= APPROF_MAX_ITER, rounded up. */
#define SHARD_MAX_STRATS 96

typedef struct ShardMesh {
    int n[2];          /* logical axis sizes */
    int cross[2];      /* a group over the axis spans hosts */
    int cross_both;
    int hosts[2];      /* hosts one group over the axis spans */
    int hosts_both;
    int span_hosts[2]; /* hosts from a group's first rank to its last (ApprofCollective) */
    int span_hosts_both;
} ShardMesh;

/* Loop of the iteration space each logical axis splits (-1: none). */
typedef struct ShardStrat {
    int ax[2];
} ShardStrat;

/* Tensor dimension each logical axis splits (-1: replicated over it). */
typedef struct ShardLayout {
    int d[2];
} ShardLayout;

typedef struct ShardOp {
    int op;
    const ApprofIterSpace *sp;  /* the context's */
    const ShardStrat *s;        /* k strategies: the context's memo, or the stage's block */
    int k;
} ShardOp;

typedef struct ShardStage {
    const ApprofGraph *g;
    const ApprofHardwareSpec *hw;
    int micro_batches;
    int op_begin, op_end, n_ops;
    int force;
    ShardMesh mesh;
    ShardOp *ops;
    ShardStrat *strat_block; /* strategies not memoised (n_ops * SHARD_MAX_STRATS), or NULL */
    int *choice;       /* per op, index into ops[o].s */
    double objective;
    CostdbVariant variant; /* the request's */
    unsigned zero_family; /* ApprofShardRequest.zero_family */
    const struct ApprofShardRequest *req; /* what the stage was asked as */
    /* Per graph tensor (n_tensors entries): consumers inside the stage, the
     * first of them, 1 for a stage output (used after the stage or never),
     * 1 when some op of the stage saves it for the backward pass. */
    int *t_cons, *t_first;
    unsigned char *t_out, *t_saved;
    const int *layer_begin;  /* first op of each layer of the stage (n_layers entries) */
    double *node_costs;      /* the context's table for this mesh, or NULL */
    struct ApprofShardContext *ctx; /* its memos and the program's scratch (NULL: none) */
    int n_layers;
} ShardStage;

/* 1 when tensor t's only consumer inside the stage is op `consumer`, it is
 * not a stage output, and consumer needs it split on axis x while its
 * producer's strategy splits a reduction loop on x: the producer's
 * all-reduce and the consumer's slice fuse into one reduce-scatter
 * (sequence parallelism). */
int shard_fuses_to_reduce_scatter(const ShardStage *st, int t, int x, ShardLayout lp,
                                  ShardLayout lc, int producer_reduce_split);

void shard_mesh_init(ShardMesh *m, int hosts, int gpus, int a, int b);
ShardLayout shard_operand_layout(const ShardStrat *s, const int *map, int ndim);
double shard_local_bytes(const ApprofTensor *t, ShardLayout L, const ShardMesh *m);
double shard_coll_seconds(const ApprofHardwareSpec *hw, const ApprofCollective *c);
/* Forward and backward collectives that turn producer layout lp into
 * consumer layout lc (partial[x]: the consumer's input gradient is a partial
 * sum over axis x). regather: the consumer's backward reads this input, and
 * what is kept is the producer's shard, so the backward repeats the forward
 * gather (Megatron's sequence parallelism: docs/variants.md). At most 2
 * forward and 4 backward collectives; the backward ones that move the
 * gradient have async_wgrad set, the re-gathers not (their async_group is
 * 0: the stage program sets it under the spec's tp_async_grad). */
int shard_reshard(const ShardMesh *m, const ApprofTensor *t, ShardLayout lp, ShardLayout lc,
                  const int partial[2], int regather, ApprofCollective *fwd, int *nf,
                  ApprofCollective *bwd, int *nb);
/* Megatron-LM's asynchronous backward collectives of a linear layer (the
 * spec's tp_async_grad; schemas/hardware-spec.md). The input slot of
 * operator o's weight when o is a linear layer (a MATMUL with a parameter
 * operand: its largest), else -1. */
int shard_linear_weight_slot(const ApprofGraph *g, int o);
/* 1 when backward GEMM k of a linear layer computes the weight gradient:
 * its C holds the weight's local elements (welems), else 0. */
int shard_is_wgrad_gemm(const ApprofKernel *k, double welems);
/* A collective of kind over logical axis x of mesh m (its group size,
 * hosts and whether it crosses them), bytes per device, for operator op
 * (-1: resharding); sharding_mesh.c. */
ApprofCollective shard_coll(const ShardMesh *m, ApprofCollKind kind, int x, double bytes, int op);
/* Strategies of an op (see sharding.h); the count or a negative error. */
int shard_enum_strategies(const ApprofIterSpace *sp, const ShardMesh *m, int force,
                          ShardStrat *out, int max);
void shard_local_sizes(const ApprofIterSpace *sp, const ShardStrat *s, const ShardMesh *m,
                       int64_t *local);
/* Fills kernels, collectives, grad sync, memory, placements and the
 * signature of p from the solved stage. */
int shard_build_program(const ShardStage *st, ApprofStageProgram *p);

/* The 128-bit digest of a kernel as the program signature hashes it
 * (program.c owns the rule; every field but the source operator). */
ApprofHash128 shard_kernel_digest(const ApprofKernel *k);

/* The add kernel that puts elems fresh gradient elements into their
 * accumulation buffer, in the widths of st's spec (program.c,
 * push_grad_accum); the ILP prices the same kernel per strategy. */
void shard_grad_accum_kernel(const ShardStage *st, double elems, ApprofKernel *k);
/* Bytes of the gradient accumulation buffer per byte of a parameter of
 * the model's dtype (program.c, the one owner): the width the gradients
 * are accumulated and reduced in (the spec's grad_reduce_bytes: Megatron's
 * f32 main_grad for 16-bit models, 2 for a bf16 model) over the model's
 * width; 1 when the spec leaves it to the model's dtype. Used for the
 * buffer's memory (program.c, program_zero.c) and the ILP's node memory
 * (sharding.c), so that a level's bytes are those the program keeps. */
double shard_grad_buffer_ratio(const ShardStage *st);

/* Adam's resident bytes a parameter param_bytes wide keeps beyond the
 * weight, and the bytes its step moves over elements parameters, in the
 * widths of the stage's spec (its optimizer_* fields): costdb's one rule
 * (costdb_adam_state_bytes, costdb_adam_bytes; docs/megatron-memory.md). */
double shard_adam_state_bytes(const ShardStage *st, double param_bytes);
double shard_adam_bytes(const ShardStage *st, double elements, double param_bytes);

/* The first op of each checkpoint block of the stage (program.c, the one
 * owner of the rule: docs/variants.md); begin has n_ops entries. Returns
 * the number of blocks. */
int shard_stage_blocks(const ShardStage *st, int *begin);

#endif
