/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stage program builder's scratch (program_build.h): the per-tensor
 * facts and the per-op arrays a build takes from the sharding context
 * (kept there across builds, so that a build allocates none of them:
 * issue 38), and the held forward's extras copied into a build.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sharding/program_build.h"

/* Takes the per-tensor facts (the context's scratch, all zero between
 * programs: only the tensors this stage touches are written, and reset at
 * the end, so a program costs its stage's size, not the graph's; without
 * a context the program allocates its own), and the per-op arrays
 * (ProgBuild) with the touched list and recomputation marks (zeroed) in
 * one block: the context's, kept at the largest size a build asked
 * (capacity only: every array is written before it is read), else the
 * build's own. */
int shard_build_scratch_take(ProgBuild *b)
{
    const ShardStage *st = b->st;
    ApprofShardContext *ctx = st->ctx;
    size_t nt = st->g->n_tensors ? st->g->n_tensors : 1;
    size_t n = (size_t)(st->n_ops > 0 ? st->n_ops : 1);
    size_t io = APPROF_MAX_INPUTS + APPROF_MAX_OUTPUTS;
    /* the doubles first, then the ints, the layouts (ints) and the bytes */
    size_t bytes = n * (2 * sizeof(double) + (2 + io) * sizeof(int) +
                        APPROF_MAX_INPUTS * sizeof(ConsumerLayout) + 1);
    char *at;
    if (ctx && ctx->prog_scratch_n < nt) {
        free(ctx->prog_scratch);
        ctx->prog_scratch = calloc(nt, sizeof(TInfo));
        ctx->prog_scratch_n = ctx->prog_scratch ? nt : 0;
    }
    b->ti = ctx ? ctx->prog_scratch : calloc(nt, sizeof(TInfo));
    if (ctx && !ctx->build_arrays_busy && ctx->build_arrays_bytes < bytes) {
        free(ctx->build_arrays);
        ctx->build_arrays = malloc(bytes);
        ctx->build_arrays_bytes = ctx->build_arrays ? bytes : 0;
    }
    if (ctx && !ctx->build_arrays_busy && ctx->build_arrays) {
        at = ctx->build_arrays;
        ctx->build_arrays_busy = 1;
    } else {
        at = b->own = malloc(bytes);
    }
    if (!at)
        return APPROF_ENOMEM;
    b->param_bytes = (double *)at;
    b->held_param = b->param_bytes + n;
    b->param_ops = (int *)(b->held_param + n);
    b->blk_room = b->param_ops + n;
    b->touched = b->blk_room + n;
    b->cl = (ConsumerLayout *)(b->touched + n * io);
    b->recomp = (unsigned char *)(b->cl + n * APPROF_MAX_INPUTS);
    memset(b->recomp, 0, n);
    return b->ti ? 0 : APPROF_ENOMEM;
}

/* Gives the scratch back all zero (or frees the program's own). */
void shard_build_scratch_release(ProgBuild *b)
{
    if (b->st->ctx) {
        for (int k = 0; k < b->n_touched; k++)
            memset(&b->ti[b->touched[k]], 0, offsetof(TInfo, use));
    } else {
        free(b->ti);
    }
    if (b->own)
        free(b->own);
    else if (b->st->ctx && b->touched)
        b->st->ctx->build_arrays_busy = 0;
}

/* With the context's scratch, the program arrays this thread kept for
 * its next build (stage.h, approf_block_take; a worker's own go when its
 * thread exits). */
void shard_build_scratch_free(ApprofShardContext *ctx)
{
    free(ctx->prog_scratch);
    free(ctx->build_arrays);
    approf_block_pool_drain();
}

/* Copies what the held forward's facts hf keep besides the tensor facts
 * (ShardFacts: the blocks, each op's parameter bytes, the backward walk)
 * into b, before a full recomputation empties hf's slot; 0 or
 * APPROF_ENOMEM. */
int shard_build_held_extras(ProgBuild *b, const ShardFacts *hf)
{
    if (hf->blk) {
        b->blk = b->blk_room;
        memcpy(b->blk, hf->blk, (size_t)hf->n_blk * sizeof(int));
        b->n_blk = hf->n_blk;
    }
    if (hf->op_param && b->st->n_ops > 0) {
        b->op_param = b->held_param;
        memcpy(b->op_param, hf->op_param, (size_t)b->st->n_ops * sizeof(double));
    }
    b->bwd_set = hf->bwd_set;
    b->bwd_peak = hf->bwd_peak;
    b->bwd_fresh = hf->bwd_fresh;
    return 0;
}
