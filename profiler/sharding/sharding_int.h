/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stage being sharded (sharding.c): its operators with their
 * strategies and the chosen one, the per-tensor facts of the stage, how it
 * is set up from a request, and the rule the ILP and the program share for
 * a reduction that fuses into a reduce-scatter. Read by every file of the
 * pass: the memos (context.h), the program builder (program.h) and the ILP
 * pricing in sharding.c.
 */
#ifndef APPROF_SHARDING_INT_H
#define APPROF_SHARDING_INT_H

#include <stddef.h>

#include "graph.h"
#include "hardware.h"
#include "stage.h"
#include "sharding/sharding.h"
#include "sharding/sharding_mesh.h"

/* The layouts of an op's operands under one of its strategies
 * (shard_operand_layout of each input and output slot), made once for
 * the memo's strategy list of the op (StratEntry.lay, context.h): a
 * function of the list's key, as the strategies are (the op's descriptor
 * holds its tensors' ranks and what its iteration space is made of). */
typedef struct ShardOpLayouts {
    ShardLayout in[APPROF_MAX_INPUTS], out[APPROF_MAX_OUTPUTS];
} ShardOpLayouts;

typedef struct ShardOp {
    int op;
    /* bit i: loop i of sp is a reduction (sp->kind[i], APPROF_MAX_ITER
     * bits; shard_stage_ops): read with the op's other fields, where
     * sp->kind is a load of its own that a build over a long stage
     * mostly misses in cache (shard_strat_reduces) */
    unsigned char reduce_loops;
    const ApprofIterSpace *sp;  /* the context's */
    const ShardStrat *s;        /* k strategies: the context's memo, or the stage's block */
    int k;
    /* the memo's strategies' kernel entries (StratEntry.kern, context.h),
     * k of them; NULL for the stage's own block */
    struct KernelEntry *kern;
    const ShardOpLayouts *lay;  /* k: each strategy's layouts; NULL for the stage's block */
} ShardOp;

typedef struct ShardStage {
    const ApprofGraph *g;
    const ApprofHardwareSpec *hw;
    int micro_batches;
    int op_begin, op_end, n_ops;
    int force;
    ShardMesh mesh;
    ShardOp *ops;
    /* 1: ops is the context's kept list of an earlier request of the same
     * stage (stage_ops.c, KeptOps), lent for this request: read only,
     * never freed with the stage */
    int ops_borrowed;
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
    int t_scratch;           /* 1: the four are the context's (TensorScratch) */
    const int *layer_begin;  /* first op of each layer of the stage (n_layers entries) */
    double *node_costs;      /* the context's table for this mesh, or NULL */
    struct ApprofShardContext *ctx; /* its memos and the program's scratch (NULL: none) */
    int n_layers;
    /* per op of the stage, shard_op_param_bytes with the per-tensor facts
     * param_ti, while a program is ended and its ZeRO variants derived
     * (program.c); NULL: computed at each call */
    const double *op_param;
    const void *param_ti;
    /* with op_param, read once (shard_param_ops_index, program_zero.c):
     * the ops whose parameter bytes are > 0, in order, and the stage's
     * parameter bytes summed over every op in order */
    const int *param_ops;
    int n_param_ops;
    double param_total;
} ShardStage;

/* 1 when tensor t's only consumer inside the stage is op `consumer`, it is
 * not a stage output, and consumer needs it split on axis x while its
 * producer's strategy splits a reduction loop on x: the producer's
 * all-reduce and the consumer's slice fuse into one reduce-scatter
 * (sequence parallelism). */
int shard_fuses_to_reduce_scatter(const ShardStage *st, int t, int x, ShardLayout lp,
                                  ShardLayout lc, int producer_reduce_split);

/* The stage a request names, as 8 ints: its range, mesh, logical mesh,
 * forced batch axis, memory levels and ILP method. */
void shard_stage_key(const ApprofShardRequest *req, int levels, int *key);
/* APPROF_EINVAL when req is not a stage of the context's layering. */
int shard_stage_setup_check(const ApprofShardContext *ctx, const ApprofShardRequest *req);
/* Checks req and fills st's range, mesh and tensor facts (the facts kept
 * from the last set-up of the same op range: context.h, TensorScratch);
 * with_ops: st->ops allocated too, else left NULL (the program key's
 * set-up reads no op's strategies, and shard_stage_ops sets a build's:
 * lent where they were kept, allocated where not). */
int shard_stage_setup(ApprofShardContext *ctx, const ApprofShardRequest *req, ShardStage *st,
                      int with_ops, char *err, size_t errlen);
void shard_stage_free(ShardStage *st);
int shard_tensor_slot(const int *list, int n, int t);

/* Whether strategy s of op so splits a reduction loop over logical axis
 * x: sp->kind[s->ax[x]] is APPROF_ITER_REDUCE, read from the op's mask. */
static inline int shard_strat_reduces(const ShardOp *so, const ShardStrat *s, int x)
{
    return s->ax[x] >= 0 && (so->reduce_loops >> s->ax[x] & 1u);
}

/* The layout of input slot i (output slot j) of stage op o (stage-local)
 * under its chosen strategy: the strategy list's, else worked out. */
static inline ShardLayout shard_in_layout(const ShardStage *st, int o, int i)
{
    const ShardOp *so = &st->ops[o];
    if (so->lay)
        return so->lay[st->choice[o]].in[i];
    return shard_operand_layout(&so->s[st->choice[o]], so->sp->in_map[i],
                                st->g->tensors[st->g->ops[so->op].inputs[i]].ndim);
}

static inline ShardLayout shard_out_layout(const ShardStage *st, int o, int j)
{
    const ShardOp *so = &st->ops[o];
    if (so->lay)
        return so->lay[st->choice[o]].out[j];
    return shard_operand_layout(&so->s[st->choice[o]], so->sp->out_map[j],
                                st->g->tensors[st->g->ops[so->op].outputs[j]].ndim);
}

#endif
