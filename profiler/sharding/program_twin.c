/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A forced-batch build's program taken by its unforced twin (context.h,
 * TwinBuild; docs/performance.md, "A level-0 build taken by its unforced
 * twin"). Alpa's logical-mesh space gives the (n m, 1) mesh twice, with
 * the batch loop forced onto axis 0 (force_batch_dim 0) and without
 * (-1; sweep/enumerate.c, approf_config_choices), and where the unforced
 * ILP's optimum splits the batch on axis 0 anyway its solution is the
 * forced one, strategy for strategy. A stage program is a function of the
 * stage, the variant and each op's chosen strategy (the loops its two
 * axes split: program.c reads st->ops[o].s[st->choice[o]] and nothing of
 * the force flag), so the unforced request's program is the forced one's
 * but for the request fields it carries (force_batch_dim, and the
 * objective its own ILP reports): those are set and the program signed
 * again from its body (stage.h, signature_body; program_finish.c,
 * shard_sign_program), which gives the text a fresh build would have.
 * The same holds for the ZeRO stages derived with the build
 * (zero_family.c): they are kept with it and put in the context for the
 * twin's family. The twin's own ILP is still solved (its solution is what
 * is compared), so the ILP counts do not change; only the build, and the
 * pricing of kernel arrays the measurement priced for the forced program
 * (they are shared: hw/phase_cost.c keeps sums by array), are saved.
 * Which builds are kept never changes a program: only the work.
 */
#include <stdlib.h>
#include <string.h>

#include "sharding/context.h"
#include "sharding/program_int.h"

/* The ZeRO stages a request's family derives with its build (program.c:
 * those above the request's own, of bits 1 to 3). */
static unsigned family_of(const ApprofShardRequest *req)
{
    return req->zero_family & 0xEu & ~((2u << req->variant.zero) - 1u);
}

static void twin_clear(TwinBuild *t)
{
    free(t->strat);
    approf_stage_program_clear(&t->prog);
    for (int z = 0; z < 4; z++)
        approf_stage_program_clear(&t->dprog[z]);
    memset(t, 0, sizeof *t);
}

/* q: a copy of p that holds p's kernel and collective arrays (made
 * shared, if they were not: ApprofKernelShare, ApprofCollShare, read-only
 * from now on), with placements of its own; 0, or APPROF_ENOMEM with q
 * cleared. */
static int share_copy(ApprofStageProgram *q, ApprofStageProgram *p)
{
    int rc = 0;
    *q = *p;
    for (int ph = 0; ph < 2; ph++) {
        q->kernels[ph] = NULL;
        q->kernel_share[ph] = q->head_share[ph] = NULL;
        q->kernel_head[ph] = NULL;
        q->n_kernels[ph] = q->n_kernel_head[ph] = 0;
        q->colls[ph] = NULL;
        q->coll_share[ph] = NULL;
        q->n_colls[ph] = 0;
    }
    q->placements = NULL;
    for (int ph = 0; ph < 2 && !rc; ph++) {
        ApprofKernelShare *s = approf_kernel_share(p, ph);
        if (!s) {
            rc = APPROF_ENOMEM;
            break;
        }
        approf_kernel_share_hold(q, ph, s);
        approf_kernel_share_release(s);
        if (!p->n_colls[ph])
            continue;
        ApprofCollShare *cs = approf_coll_share(p, ph);
        if (!cs) {
            rc = APPROF_ENOMEM;
            break;
        }
        approf_coll_share_hold(q, ph, cs, p->n_colls[ph]);
        approf_coll_share_release(cs);
    }
    if (!rc && p->n_placements &&
        !(q->placements = approf_block_take(p->n_placements * sizeof *q->placements)))
        rc = APPROF_ENOMEM;
    else if (!rc && p->n_placements)
        memcpy(q->placements, p->placements, p->n_placements * sizeof *q->placements);
    if (rc)
        approf_stage_program_clear(q);
    return rc;
}

void shard_twin_keep(ApprofShardContext *ctx, const ShardStage *st,
                     const ApprofShardRequest *req, ApprofStageProgram *prog)
{
    /* only the (n m, 1) mesh has an unforced twin in Alpa's space; only
     * memory level 0 was seen to repeat (docs/performance.md, "The memory
     * levels: where their work is") */
    if (req->force_batch_dim != 0 || req->variant.memory_level != 0 || req->logical_b != 1 ||
        st->n_ops <= 0 || !st->choice)
        return;
    if (!ctx->twin && !(ctx->twin = calloc(SHARD_TWIN_SLOTS, sizeof *ctx->twin)))
        return;
    /* the sweep profiles a range's configs on a submesh one after another:
     * the twins of another range or submesh are not asked for again, and
     * one of this very request is replaced */
    for (int i = 0; i < SHARD_TWIN_SLOTS; i++) {
        const ApprofShardRequest *r = &ctx->twin[i].req;
        if (ctx->twin[i].used &&
            (r->start_layer != req->start_layer || r->end_layer != req->end_layer ||
             r->mesh_hosts != req->mesh_hosts || r->mesh_gpus != req->mesh_gpus ||
             (shard_same_request(r, req) && r->kernel_views == req->kernel_views)))
            twin_clear(&ctx->twin[i]);
    }
    TwinBuild *t = &ctx->twin[ctx->twin_next];
    twin_clear(t);
    ctx->twin_next = (ctx->twin_next + 1) % SHARD_TWIN_SLOTS;
    if (!(t->strat = malloc((size_t)st->n_ops * sizeof *t->strat)) || share_copy(&t->prog, prog)) {
        twin_clear(t);
        return;
    }
    for (int o = 0; o < st->n_ops; o++)
        t->strat[o] = st->ops[o].s[st->choice[o]];
    unsigned fam = family_of(req);
    for (int z = 1; z <= 3; z++) {
        ApprofShardRequest rz = *req;
        rz.variant.zero = z;
        ApprofStageProgram *d = fam & (1u << z) ? shard_zero_family_peek(ctx, &rz, &t->drc[z])
                                                : NULL;
        if (d && (t->drc[z] || share_copy(&t->dprog[z], d) == 0))
            t->derived |= 1u << z;
    }
    t->req = *req;
    t->n_ops = st->n_ops;
    t->used = 1;
}

/* p as its unforced twin's request (of ILP objective objective) would
 * have it, signed again. */
static void as_unforced(ApprofStageProgram *p, double objective)
{
    p->force_batch_dim = -1;
    p->ilp_objective = objective;
    shard_sign_program(p);
}

int shard_twin_take(ApprofShardContext *ctx, const ShardStage *st, const ApprofShardRequest *req,
                    ApprofStageProgram *out)
{
    if (!ctx->twin || req->force_batch_dim != -1 || req->variant.memory_level != 0 ||
        !st->choice)
        return 0;
    ApprofShardRequest f = *req;
    f.force_batch_dim = 0;
    for (int i = 0; i < SHARD_TWIN_SLOTS; i++) {
        TwinBuild *t = &ctx->twin[i];
        if (!t->used || !shard_same_request(&t->req, &f) || t->req.kernel_views != req->kernel_views)
            continue;
        int same = t->n_ops == st->n_ops;
        for (int o = 0; o < st->n_ops && same; o++) {
            const ShardStrat *s = &st->ops[o].s[st->choice[o]];
            same = s->ax[0] == t->strat[o].ax[0] && s->ax[1] == t->strat[o].ax[1];
        }
        unsigned fam = family_of(req);
        if (!same || (fam & ~t->derived)) { /* built: no later request is its twin */
            twin_clear(t);
            return 0;
        }
        *out = t->prog; /* moved */
        memset(&t->prog, 0, sizeof t->prog);
        as_unforced(out, st->objective);
        for (int z = 1; z <= 3; z++) {
            if (!(fam & (1u << z)))
                continue;
            ApprofShardRequest rz = *req;
            rz.variant.zero = z;
            if (!t->drc[z])
                as_unforced(&t->dprog[z], st->objective);
            shard_zero_family_put(ctx, &rz, t->drc[z], &t->dprog[z]);
        }
        twin_clear(t);
        return 1;
    }
    return 0;
}

void shard_twin_forget(ApprofShardContext *ctx)
{
    for (int i = 0; ctx->twin && i < SHARD_TWIN_SLOTS; i++)
        twin_clear(&ctx->twin[i]);
    free(ctx->twin);
    ctx->twin = NULL;
    ctx->twin_next = 0;
}
