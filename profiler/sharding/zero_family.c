/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ZeRO variants of a stage derived from one build (context.h,
 * ZeroDerived): shard_build_program derives them and puts them here, and
 * approf_shard_stage takes one back when the sweep asks for it, instead of
 * setting the stage up, finding its sharding and building its program
 * again (docs/performance.md, "ZeRO variants derived").
 */
#include <stdlib.h>
#include <string.h>

#include "sharding/context.h"

/* Requests for the same stage and variant (zero_family aside). */
static int same_request(const ApprofShardRequest *a, const ApprofShardRequest *b)
{
    return a->start_layer == b->start_layer && a->end_layer == b->end_layer &&
           a->mesh_hosts == b->mesh_hosts && a->mesh_gpus == b->mesh_gpus &&
           a->logical_a == b->logical_a && a->logical_b == b->logical_b &&
           a->force_batch_dim == b->force_batch_dim && a->method == b->method &&
           a->memory_levels == b->memory_levels && costdb_variant_equal(a->variant, b->variant);
}

void shard_zero_family_put(ApprofShardContext *ctx, const ApprofShardRequest *req, int rc,
                           ApprofStageProgram *prog)
{
    if (!ctx->zfam && !(ctx->zfam = calloc(SHARD_ZERO_SLOTS, sizeof *ctx->zfam))) {
        approf_stage_program_clear(prog);
        return;
    }
    ZeroDerived *d = &ctx->zfam[ctx->zfam_next];
    ctx->zfam_next = (ctx->zfam_next + 1) % SHARD_ZERO_SLOTS;
    approf_stage_program_clear(&d->prog);
    d->used = 1;
    d->req = *req;
    d->req.zero_family = 0;
    d->rc = rc;
    d->prog = *prog; /* moved */
    memset(prog, 0, sizeof *prog);
}

int shard_zero_family_take(ApprofShardContext *ctx, const ApprofShardRequest *req,
                           ApprofStageProgram *out, int *rc)
{
    if (!ctx->zfam)
        return 0;
    for (int i = 0; i < SHARD_ZERO_SLOTS; i++) {
        ZeroDerived *d = &ctx->zfam[i];
        if (!d->used || !same_request(&d->req, req))
            continue;
        *rc = d->rc;
        *out = d->prog; /* moved */
        memset(&d->prog, 0, sizeof d->prog);
        d->used = 0;
        return 1;
    }
    return 0;
}

void shard_zero_family_free(ApprofShardContext *ctx)
{
    if (!ctx->zfam)
        return;
    for (int i = 0; i < SHARD_ZERO_SLOTS; i++)
        approf_stage_program_clear(&ctx->zfam[i].prog);
    free(ctx->zfam);
    ctx->zfam = NULL;
}
