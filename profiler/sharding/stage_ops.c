/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operators of a stage with their iteration spaces and strategies
 * (ShardStage.ops), found once per stage and kept for the stage's later
 * requests (context.h, KeptOps). What an op's entry holds is a function of
 * the op, the logical mesh's axis sizes and the forced batch axis alone
 * (memo.c: shard_cached_iter_space by op, shard_op_strategies by the op's
 * descriptor, the mesh's axis sizes and the force flag), never of the
 * variant: the memory levels and recomputation modes of one stage, each
 * asked for as a request of its own, enumerated the same list again. Both
 * memos keep an entry for the context's life (memo_claim refuses past its
 * cap, it never evicts), so a kept entry points at what a new enumeration
 * would return; an op whose strategies were not memoised (the stage's own
 * strat_block) keeps nothing. docs/performance.md, "A stage's strategies
 * enumerated once for its variants".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sharding/context.h"
#include "sharding/sharding_int.h"

static void ops_key(const ShardStage *st, int key[7])
{
    int k[7] = {st->op_begin, st->op_end, st->mesh.n[0], st->mesh.n[1],
                st->req ? st->req->mesh_hosts : 0, st->req ? st->req->mesh_gpus : 0, st->force};
    memcpy(key, k, sizeof k);
}

static const KeptOps *ops_find(const ApprofShardContext *ctx, const int key[7], int n_ops)
{
    for (int i = 0; ctx->kops && i < SHARD_OPS_SLOTS; i++)
        if (ctx->kops[i].ops && ctx->kops[i].n_ops == n_ops &&
            !memcmp(ctx->kops[i].key, key, sizeof ctx->kops[i].key))
            return &ctx->kops[i];
    return NULL;
}

/* Keeps st's ops (all memoised) in the next slot; without memory, none. */
static void ops_keep(ApprofShardContext *ctx, const ShardStage *st, const int key[7], int maxk)
{
    if (!ctx->kops && !(ctx->kops = calloc(SHARD_OPS_SLOTS, sizeof *ctx->kops)))
        return;
    KeptOps *k = &ctx->kops[ctx->kops_next];
    ShardOp *ops = malloc((size_t)st->n_ops * sizeof *ops);
    if (!ops)
        return;
    free(k->ops);
    memcpy(ops, st->ops, (size_t)st->n_ops * sizeof *ops);
    memcpy(k->key, key, sizeof k->key);
    k->ops = ops;
    k->n_ops = st->n_ops;
    k->maxk = maxk;
    ctx->kops_next = (ctx->kops_next + 1) % SHARD_OPS_SLOTS;
}

int shard_stage_ops(ApprofShardContext *ctx, ShardStage *st, int *maxk, char *err, size_t errlen)
{
    int key[7], rc = 0;
    ops_key(st, key);
    const KeptOps *k = st->n_ops > 0 ? ops_find(ctx, key, st->n_ops) : NULL;
    if (k) {
        /* lent, not copied (a copy per memory level and recomputation
         * mode was the full space's: callgrind): nothing writes a stage's
         * ops after this function, and a kept slot is only replaced by
         * ops_keep, in the build of a stage whose ops were not found; the
         * context builds one stage at a time (approf_shard_stage sets it
         * up, builds and frees it), so the list outlives its borrower */
        if (!st->ops_borrowed)
            free(st->ops);
        st->ops = k->ops;
        st->ops_borrowed = 1;
        *maxk = k->maxk;
        return 0;
    }
    if (st->ops_borrowed) { /* never written: an array of its own */
        st->ops = NULL;
        st->ops_borrowed = 0;
    }
    if (!st->ops)
        st->ops = calloc((size_t)(st->n_ops > 0 ? st->n_ops : 1), sizeof *st->ops);
    if (!st->ops) {
        snprintf(err, errlen, "%s", approf_strerror(APPROF_ENOMEM));
        return APPROF_ENOMEM;
    }
    *maxk = 1;
    for (int o = 0; o < st->n_ops; o++) {
        ShardOp *so = &st->ops[o];
        so->op = st->op_begin + o;
        so->sp = shard_cached_iter_space(ctx, so->op, &rc);
        if (!so->sp) {
            snprintf(err, errlen, "op %s: %s", st->g->ops[so->op].name,
                     rc == APPROF_ENOMEM ? approf_strerror(rc) : "no iteration space");
            return rc;
        }
        /* every entry of kind, as the test it stands for reads any */
        _Static_assert(APPROF_MAX_ITER <= 8, "a loop's bit fits reduce_loops");
        so->reduce_loops = 0;
        for (int i = 0; i < APPROF_MAX_ITER; i++)
            if (so->sp->kind[i] == APPROF_ITER_REDUCE)
                so->reduce_loops |= (unsigned char)(1u << i);
        so->s = shard_op_strategies(ctx, st, o, &so->k, &so->kern, &so->lay);
        if (!so->s)
            return so->k;
        if (so->k <= 0) {
            snprintf(err, errlen, "op %s: no sharding strategy", st->g->ops[so->op].name);
            return so->k < 0 ? so->k : APPROF_EINFEASIBLE;
        }
        if (so->k > *maxk)
            *maxk = so->k;
    }
    /* strategies in the stage's own block are freed with the stage; kept
     * where a later request of the stage may come: another memory level,
     * or a recomputation mode once the context was asked for one (a plain
     * sweep builds each stage once) */
    if (st->n_ops > 0 && !st->strat_block &&
        ((st->req && st->req->memory_levels > 1) || ctx->recompute_asked))
        ops_keep(ctx, st, key, *maxk);
    return 0;
}

void shard_stage_ops_free(ApprofShardContext *ctx)
{
    for (int i = 0; ctx->kops && i < SHARD_OPS_SLOTS; i++)
        free(ctx->kops[i].ops);
    free(ctx->kops);
    ctx->kops = NULL;
    ctx->kops_next = 0;
}

/* Whether a reduce-scatter fuses (sharding_int.h; edge_matrix asks). */
int shard_fuses_to_reduce_scatter(const ShardStage *st, int t, int x, ShardLayout lp,
                                  ShardLayout lc, int producer_reduce_split)
{
    return producer_reduce_split && st->mesh.n[x] > 1 && lp.d[x] < 0 && lc.d[x] >= 0 &&
           st->t_cons[t] == 1 && !st->t_out[t];
}
