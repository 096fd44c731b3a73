/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ZeRO variants of a stage derived from one build (context.h,
 * ZeroDerived): shard_build_program derives them (shard_derive_zero) and
 * puts them here, and approf_shard_stage takes one back when the sweep
 * asks for it, instead of setting the stage up, finding its sharding and
 * building its program again (docs/performance.md, "ZeRO variants
 * derived"). The derived programs hold the build's forward kernels, and
 * the backward of the build's program with the same gradient
 * accumulation, instead of copies (BackwardEnds; docs/performance.md,
 * "Shared kernel arrays and prices kept"); where the request takes kernel
 * views, the others read the build's backward before its end in place,
 * as the head of their own (stage.h, kernel_head; docs/performance.md,
 * "The derived backwards read in place").
 */
#include <stdlib.h>
#include <string.h>

#include "sharding/context.h"
#include "sharding/program_int.h"

void shard_backward_ends_free(BackwardEnds *ends)
{
    for (int i = 0; i < ends->n; i++) {
        approf_kernel_share_release(ends->e[i].k);
        if (ends->e[i].own)
            free(ends->e[i].dig);
    }
    approf_kernel_share_release(ends->fwd);
    memset(ends, 0, sizeof *ends);
}

/* ZeRO's add kernels of gradient accumulation (program_accum.c) are all a
 * stage's end appends to its backward when the spec has no
 * grad_accum_fusion, and they depend on the stage and the accumulation
 * share alone; so two programs of one build with the same share (ZeRO 0
 * and 1: the whole buffers; 2 and 3: the partition) end with the same
 * backward kernels, which the later one holds. A derived program of
 * another share appends its adds to the build's backward before its end:
 * read in place as its head where the request takes kernel views, else
 * copied. */
int shard_end_backward(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                       size_t *cap, ApprofHash128 **dig, const ApprofHash128 **sig_dig,
                       BackwardEnds *ends)
{
    double share = shard_grad_accum_share(st, p);
    int derived = !p->kernels[1], rc;
    /* the adds shard_push_grad_accum makes at most: one per op with
     * parameters (the build's table, shard_param_ops_index), else per op;
     * the room a derived backward gets for them, so that it is seldom
     * given back below */
    size_t adds = (size_t)(shard_op_param_table(st, ti) ? st->n_param_ops : st->n_ops);
    adds = adds > 0 ? adds : 1;
    for (int i = 0; i < ends->n; i++) {
        if (memcmp(&ends->e[i].share, &share, sizeof share))
            continue;
        approf_kernel_share_hold(p, 1, ends->e[i].k);
        *sig_dig = ends->e[i].dig;
        return 0;
    }
    if (derived && ends->pre_share && ends->pre_n && st->req && st->req->kernel_views &&
        approf_kernel_share_head(p, 1, ends->pre_share, ends->pre_n) == 0) {
        /* the build's backward before its end as the head, read in place;
         * the adds are the phase's own kernels (digests: the head's are
         * ends->pre_dig, program_finish.c) */
        size_t room = adds;
        p->kernels[1] = approf_block_take(room * sizeof *p->kernels[1]);
        dig[1] = malloc(room * sizeof *dig[1]);
        if (!p->kernels[1] || !dig[1])
            return APPROF_ENOMEM;
        p->n_kernels[1] = 0;
        *cap = room;
    } else if (derived) { /* a copy of the build's backward before its end, with room for the adds */
        size_t room = ends->pre_n + adds;
        p->kernels[1] = approf_block_take(room * sizeof *p->kernels[1]);
        dig[1] = malloc(room * sizeof *dig[1]);
        if (!p->kernels[1] || !dig[1])
            return APPROF_ENOMEM;
        if (ends->pre_n) {
            memcpy(p->kernels[1], ends->pre_k, ends->pre_n * sizeof *p->kernels[1]);
            memcpy(dig[1], ends->pre_dig, ends->pre_n * sizeof *dig[1]);
        }
        p->n_kernels[1] = ends->pre_n;
        *cap = room;
    }
    rc = shard_push_grad_accum(st, ti, p, cap, dig);
    *sig_dig = dig[1];
    if (rc || ends->n == (int)(sizeof ends->e / sizeof ends->e[0]))
        return rc;
    /* kept until asked for: no room (mostly none left: adds) */
    if (derived && *cap > (p->n_kernels[1] ? p->n_kernels[1] : 1)) {
        ApprofKernel *k = realloc(p->kernels[1], (p->n_kernels[1] ? p->n_kernels[1] : 1) *
                                                     sizeof *p->kernels[1]);
        p->kernels[1] = k ? k : p->kernels[1];
        *cap = k ? (p->n_kernels[1] ? p->n_kernels[1] : 1) : *cap;
    }
    ApprofKernelShare *s = approf_kernel_share(p, 1);
    if (!s)
        return 0; /* not shared: a later program of this share computes its own */
    EndedBackward *e = &ends->e[ends->n++];
    e->share = share;
    e->k = s;
    e->dig = dig[1];
    e->own = derived;
    if (derived)
        dig[1] = NULL;
    return 0;
}

/* ZeRO stage z from the build's program p before its end: the collectives
 * copied, the kernels copied (tl->ends NULL: grad_accum_fusion changes
 * the backward's GEMMs at the end, or the build's own end failed) or held
 * (shard_end_backward), then ended as ZeRO z. Without memory nothing is
 * kept (that request builds it). */
void shard_derive_zero(const ShardStage *st, const TInfo *ti, const ApprofStageProgram *p,
                       ApprofHash128 *const kdig[2], const ZeroTail *tl, int z)
{
    ApprofStageProgram q = *p;
    ApprofHash128 *qdig[2] = {NULL, NULL};
    BackwardEnds *ends = tl->ends;
    /* room for what the end adds (a gradient accumulation kernel per op
     * with parameters in the backward; ZeRO's collectives, a few per op):
     * growing a copy made exactly as long as p's arrays copies them a
     * second time; the room left is given back below */
    size_t ops = (size_t)(st->n_ops > 0 ? st->n_ops : 1);
    size_t kcap[2] = {p->n_kernels[0] + 1, p->n_kernels[1] + ops};
    size_t ccap[2] = {p->n_colls[0] + 2 * ops, p->n_colls[1] + 2 * ops};
    ShardStage sz = *st;
    ApprofShardRequest req = *st->req;
    int rc = 0;
    q.kernels[0] = q.kernels[1] = NULL;
    q.kernel_share[0] = q.kernel_share[1] = NULL;
    q.colls[0] = q.colls[1] = NULL;
    q.coll_share[0] = q.coll_share[1] = NULL;
    for (int ph = 0; ph < 2 && !rc; ph++) {
        size_t nk = p->n_kernels[ph], nc = p->n_colls[ph];
        if (tl->colls[ph]) {
            /* the ended build's, read in place until the end appends
             * (shard_colls_room copies them then): no room */
            approf_coll_share_hold(&q, ph, tl->colls[ph], nc);
            ccap[ph] = nc;
        } else if (!(q.colls[ph] = approf_block_take(ccap[ph] * sizeof *q.colls[ph]))) {
            rc = APPROF_ENOMEM;
            break;
        } else if (nc) {
            memcpy(q.colls[ph], p->colls[ph], nc * sizeof *q.colls[ph]);
        }
        if (ends) /* held: the forward below, the backward at the end */
            continue;
        qdig[ph] = malloc(kcap[ph] * sizeof *qdig[ph]);
        q.kernels[ph] = approf_block_take(kcap[ph] * sizeof *q.kernels[ph]);
        if (!qdig[ph] || !q.kernels[ph]) {
            rc = APPROF_ENOMEM;
            break;
        }
        if (nk) { /* a phase without kernels or collectives may have no array */
            memcpy(qdig[ph], kdig[ph], nk * sizeof *qdig[ph]);
            memcpy(q.kernels[ph], p->kernels[ph], nk * sizeof *q.kernels[ph]);
        }
    }
    ApprofHash128 *dig[2] = {qdig[0], qdig[1]};
    if (ends && !rc) {
        approf_kernel_share_hold(&q, 0, ends->fwd);
        dig[0] = kdig[0]; /* read only */
    }
    sz.variant.zero = req.variant.zero = q.variant.zero = z;
    /* the placements are p's, read by the signature only: a ZeRO variant
     * never owns its sharding group's placements (docs/variants.md,
     * "Storage"), so the derived program keeps none */
    if (!rc)
        rc = shard_finish_program(&sz, ti, &q, tl, kcap, ccap, dig);
    qdig[1] = dig[1]; /* NULL where the ended backwards took it */
    for (int ph = 0; ph < 2 && !rc; ph++) { /* kept until asked for: no room */
        void *c = q.coll_share[ph] ? NULL
                                   : realloc(q.colls[ph], (q.n_colls[ph] ? q.n_colls[ph] : 1) *
                                                              sizeof *q.colls[ph]);
        q.colls[ph] = c ? c : q.colls[ph];
        if (q.kernel_share[ph])
            continue;
        void *k = realloc(q.kernels[ph], (q.n_kernels[ph] ? q.n_kernels[ph] : 1) *
                                             sizeof *q.kernels[ph]);
        q.kernels[ph] = k ? k : q.kernels[ph];
    }
    q.placements = NULL;
    q.n_placements = 0;
    if (rc)
        approf_stage_program_clear(&q);
    if (!rc || rc == APPROF_ENOVARIANT)
        shard_zero_family_put(st->ctx, &req, rc, &q);
    free(qdig[0]);
    free(qdig[1]);
}

/* Requests for the same stage and variant (zero_family and kernel_views
 * aside): context.h. */
int shard_same_request(const ApprofShardRequest *a, const ApprofShardRequest *b)
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
        if (!d->used || !shard_same_request(&d->req, req))
            continue;
        *rc = d->rc;
        *out = d->prog; /* moved */
        memset(&d->prog, 0, sizeof d->prog);
        d->used = 0;
        if (!req->kernel_views && approf_stage_program_flatten(out)) {
            approf_stage_program_clear(out);
            *rc = APPROF_ENOMEM;
        }
        return 1;
    }
    return 0;
}

ApprofStageProgram *shard_zero_family_peek(ApprofShardContext *ctx, const ApprofShardRequest *req,
                                           int *rc)
{
    for (int i = 0; ctx->zfam && i < SHARD_ZERO_SLOTS; i++)
        if (ctx->zfam[i].used && shard_same_request(&ctx->zfam[i].req, req)) {
            *rc = ctx->zfam[i].rc;
            return &ctx->zfam[i].prog;
        }
    return NULL;
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
