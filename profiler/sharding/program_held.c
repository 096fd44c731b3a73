/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One forward for the recomputation modes of a stage (context.h,
 * HeldForward). Recomputation changes what the backward keeps and reruns
 * (program.c, plan_recompute and push_op_kernels), never the forward's
 * kernels: the forward of a stage program is a function of the stage, its
 * sharding solution (the memory level's choice of strategy per op) and,
 * under FP8, the ZeRO stage (the weight operand of its GEMMs). So the
 * none, selective and full builds of one memory level, whose sharding
 * solution is the same (the ILP prices no recomputation: docs/performance.md,
 * "Recomputation variants: what they already share"), hold one forward
 * kernel array (ApprofKernelShare) with its digests: it is pushed,
 * digested and summed by the measurement once (docs/performance.md, "One
 * forward for the recomputation modes"). Without the stage's request, or
 * without memory, a build pushes its own forward as before; a forward is
 * let go once a full recomputation took it or another stage is built.
 * Which forward is held never changes a program: only the work.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sharding/context.h"
#include "sharding/program_int.h"
#include "sharding/program_splice.h"

static int eligible(const ShardStage *st)
{
    return st->ctx && st->req && st->choice && st->n_ops > 0;
}

static void forward_key(const ShardStage *st, int key[10])
{
    shard_stage_key(st->req, st->req->memory_levels, key);
    key[8] = st->variant.zero;
    key[9] = st->n_ops;
}

static void slot_clear(HeldForward *h)
{
    approf_kernel_share_release(h->k);
    shard_facts_free(h->facts);
    shard_splice_free(h->splice);
    free(h->dig);
    free(h->choice);
    memset(h, 0, sizeof *h);
}

const HeldForward *shard_forward_find(const ShardStage *st)
{
    int key[10];
    if (!eligible(st) || !st->ctx->fwd)
        return NULL;
    forward_key(st, key);
    for (int i = 0; i < SHARD_FWD_SLOTS; i++) {
        const HeldForward *h = &st->ctx->fwd[i];
        if (h->used && !memcmp(h->key, key, sizeof key) &&
            !memcmp(h->choice, st->choice, (size_t)st->n_ops * sizeof *st->choice))
            return h;
    }
    return NULL;
}

ApprofHash128 *shard_forward_hold(const ShardStage *st, const HeldForward *h,
                                  ApprofStageProgram *p, int *borrowed)
{
    HeldForward *w = &st->ctx->fwd[h - st->ctx->fwd];
    ApprofHash128 *dig = w->dig;
    approf_kernel_share_hold(p, 0, w->k);
    *borrowed = st->variant.recompute != COSTDB_RECOMPUTE_FULL;
    if (!*borrowed) { /* no later mode of the sweep's order reads it */
        w->dig = NULL;
        slot_clear(w);
    }
    return dig;
}

void shard_forward_keep(const ShardStage *st, ApprofStageProgram *p, ApprofHash128 **dig,
                        ShardFacts **facts, const ApprofHash128 *list)
{
    ApprofShardContext *ctx = st->ctx;
    if (!eligible(st) || !*dig || (!ctx->fwd && !(ctx->fwd = calloc(SHARD_FWD_SLOTS,
                                                                     sizeof *ctx->fwd))))
        return;
    /* the sweep profiles a stage's configs one after another: the
     * forwards of another layer range or submesh are not asked for again */
    for (int i = 0; i < SHARD_FWD_SLOTS; i++)
        if (ctx->fwd[i].used && (ctx->fwd[i].key[0] != st->req->start_layer ||
                                 ctx->fwd[i].key[1] != st->req->end_layer ||
                                 ctx->fwd[i].key[2] != st->req->mesh_hosts ||
                                 ctx->fwd[i].key[3] != st->req->mesh_gpus))
            slot_clear(&ctx->fwd[i]);
    HeldForward *h = &ctx->fwd[ctx->fwd_next];
    int *choice = malloc((size_t)st->n_ops * sizeof *choice);
    if (!choice)
        return;
    ApprofKernelShare *k = approf_kernel_share(p, 0);
    if (!k) {
        free(choice);
        return;
    }
    slot_clear(h);
    ctx->fwd_next = (ctx->fwd_next + 1) % SHARD_FWD_SLOTS;
    memcpy(choice, st->choice, (size_t)st->n_ops * sizeof *choice);
    forward_key(st, h->key);
    h->used = 1;
    h->choice = choice;
    h->k = k;
    h->dig = *dig;
    *dig = NULL;
    h->facts = *facts;
    *facts = NULL;
    if (list) {
        h->list = *list;
        h->list_set = 1;
    }
}

void shard_forward_forget(ApprofShardContext *ctx)
{
    if (!ctx->fwd)
        return;
    for (int i = 0; i < SHARD_FWD_SLOTS; i++)
        slot_clear(&ctx->fwd[i]);
    free(ctx->fwd);
    ctx->fwd = NULL;
    ctx->fwd_next = 0;
}

/* The facts of a build for the other recomputation modes of its held
 * forward: note_tensors (program.c) reads the stage, its sharding solution
 * (the held forward's key and choice) and, under FP8 only (which holds no
 * forward), the spec; shard_place_tensors reads only what note_tensors
 * wrote (each touched tensor's layout, bytes and role). So a build holding
 * the forward takes them as the first build made them. */
#define FACT_BYTES offsetof(TInfo, use)

ShardFacts *shard_facts_take(const TInfo *ti, const int *touched, int n_touched)
{
    size_t n = (size_t)(n_touched > 0 ? n_touched : 1);
    /* one block: the facts, the touched list (ints after the struct's
     * alignment) and the records (bytes, copied as such) */
    ShardFacts *f = malloc(sizeof *f + n * (sizeof *f->touched + FACT_BYTES));
    if (!f)
        return NULL;
    memset(f, 0, sizeof *f);
    f->touched = (int *)(f + 1);
    f->ti = (unsigned char *)(f->touched + n);
    f->n_touched = n_touched;
    memcpy(f->touched, touched, (size_t)n_touched * sizeof *touched);
    for (int k = 0; k < n_touched; k++)
        memcpy(f->ti + (size_t)k * FACT_BYTES, &ti[touched[k]], FACT_BYTES);
    return f;
}

/* Copies placement src into dst up to its spec text's end: the bytes
 * past it are never read (the text is NUL-terminated). */
static void place_copy(ApprofPlacement *dst, const ApprofPlacement *src)
{
    memcpy(dst, src, offsetof(ApprofPlacement, spec) + strlen(src->spec) + 1);
}

int shard_facts_add_places(ShardFacts *f, const ApprofStageProgram *p, const ApprofHash128 *pdig)
{
    size_t n = p->n_placements ? p->n_placements : 1;
    f->place = approf_block_take(n * sizeof *f->place);
    f->pdig = malloc(n * sizeof *f->pdig);
    if (!f->place || !f->pdig) {
        approf_block_give(f->place);
        free(f->pdig);
        f->place = NULL;
        f->pdig = NULL;
        return APPROF_ENOMEM;
    }
    for (size_t i = 0; i < p->n_placements; i++)
        place_copy(&f->place[i], &p->placements[i]);
    memcpy(f->pdig, pdig, p->n_placements * sizeof *f->pdig);
    f->n_place = p->n_placements;
    return 0;
}

int shard_forward_facts(const ShardStage *st, const HeldForward *h, TInfo *ti, int *touched,
                        int *n_touched, ApprofStageProgram *p, ApprofHash128 **pdig)
{
    ShardFacts *f = st->ctx->fwd[h - st->ctx->fwd].facts;
    size_t n = f->n_place ? f->n_place : 1;
    memcpy(touched, f->touched, (size_t)f->n_touched * sizeof *touched);
    for (int k = 0; k < f->n_touched; k++)
        memcpy(&ti[touched[k]], f->ti + (size_t)k * FACT_BYTES, FACT_BYTES);
    *n_touched = f->n_touched;
    p->n_placements = f->n_place;
    /* a full recomputation, the last mode asked in order, empties the
     * slot (shard_forward_hold): it takes the placements as they are */
    if (st->variant.recompute == COSTDB_RECOMPUTE_FULL) {
        p->placements = f->place;
        *pdig = f->pdig;
        f->place = NULL;
        f->pdig = NULL;
        return 0;
    }
    p->placements = approf_block_take(n * sizeof *p->placements);
    *pdig = malloc(n * sizeof **pdig);
    if (!p->placements || !*pdig)
        return APPROF_ENOMEM;
    for (size_t i = 0; i < f->n_place; i++)
        place_copy(&p->placements[i], &f->place[i]);
    memcpy(*pdig, f->pdig, f->n_place * sizeof **pdig);
    return 0;
}

void shard_facts_free(ShardFacts *f)
{
    if (!f)
        return;
    approf_block_give(f->place); /* touched and ti are f's block */
    free(f->pdig);
    free(f->blk);
    free(f->op_param);
    free(f);
}
