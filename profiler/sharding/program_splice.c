/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A recompute-full build's kernels and collectives spliced from the none
 * build of the same stage (program_splice.h; docs/performance.md, "Fewer
 * builds in the full space", section 2; docs/perf-recfull.md). Why the
 * splice gives push_ops' arrays, read off program.c and sharding_mesh.c:
 *
 * - the forward (kernels and collectives) is a function of the stage and
 *   its sharding solution: the full build holds the none build's forward
 *   already (program_held.c), and its forward collectives
 *   (push_reduce_colls, the forward halves of shard_reshard) read no
 *   recomputation mode but the op policy's rs_kept (op is not full);
 * - full marks every op recomputed, so push_op_kernels appends per op o
 *   the forward run of o (the same KernelEntry kernels and digests as the
 *   forward's run of o, copied by shard_push_kernels, which sets the op
 *   and clears the async marks) and then o's backward run; none appends
 *   o's backward run alone, in the same order. mark_async_gemms marks
 *   only [bw0, end of o's backward run), and the groups are numbered in
 *   the same call order in both modes (the use entries do not depend on
 *   the mode, only their regather flag): so o's backward run, marks
 *   included, is the none build's;
 * - per reshard and axis shard_reshard pushes [the forward collective's
 *   re-gather copy when regather, the gradient's collective (async_wgrad
 *   1)]; full rereads no input (rereads_inputs), so its backward has no
 *   copies, and after the ops push_ops appends every forward collective
 *   (shard_rerun_forward_coll is 1 for all under full). The none build
 *   notes where it pushed a copy (a copy's async_wgrad is its forward
 *   collective's, 0; the gradient's is 1);
 * - the gradient bytes by axis set come from the consumer layouts and
 *   partial flags alone.
 * Memory, the ends and the signature are then made by the build as
 * before. The none build's end only appends to its backward (no
 * grad_accum_fusion), so the first pre_n kernels of its ended array are
 * the backward before its end.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sharding/program_splice.h"

static atomic_ulong spliced;

unsigned long shard_splice_count(void)
{
    return atomic_load(&spliced);
}

static int forbidden(const ShardStage *st)
{
    return st->hw && (st->hw->fp8 || st->hw->grad_accum_fusion);
}

ShardSplice *shard_splice_start(const ProgBuild *b)
{
    const ShardStage *st = b->st;
    if (!st->ctx || !st->req || !st->choice || st->n_ops <= 0 || !st->ctx->recompute_asked ||
        st->variant.recompute != COSTDB_RECOMPUTE_NONE || b->held || forbidden(st))
        return NULL;
    size_t n = (size_t)st->n_ops + 1;
    ShardSplice *r = calloc(1, sizeof *r + 2 * n * sizeof(size_t));
    if (!r)
        return NULL;
    r->fb = (size_t *)(r + 1);
    r->bb = r->fb + n;
    r->n_ops = st->n_ops;
    r->async = b->async;
    return r;
}

int shard_splice_note_copy(ShardSplice *r, size_t i)
{
    if (r->n_copy == r->copy_cap) {
        size_t cap = r->copy_cap ? 2 * r->copy_cap : 16;
        size_t *c = realloc(r->copy, cap * sizeof *c);
        if (!c)
            return APPROF_ENOMEM;
        r->copy = c;
        r->copy_cap = cap;
    }
    r->copy[r->n_copy++] = i;
    return 0;
}

void shard_splice_free(ShardSplice *r)
{
    if (!r)
        return;
    approf_kernel_share_release(r->bk);
    free(r->bdig);
    free(r->colls[0]);
    free(r->colls[1]);
    free(r->copy);
    free(r);
}

void shard_splice_keep(ProgBuild *b, ShardSplice *r, ApprofKernelShare *pre_share, size_t pre_n,
                       const size_t pre_colls[2])
{
    ApprofStageProgram *p = b->p;
    ApprofShardContext *ctx = b->st->ctx;
    const HeldForward *h = shard_forward_find(b->st);
    /* the kept forward and the backward are the build's own arrays (no
     * head), the backward's share the one its end made */
    if (!h || h->splice || !pre_share || p->n_kernel_head[0] || p->n_kernel_head[1] ||
        p->kernel_share[1] != pre_share || !b->kdig[1] || pre_n > p->n_kernels[1]) {
        shard_splice_free(r);
        return;
    }
    for (int ph = 0; ph < 2; ph++) {
        size_t n = pre_colls[ph];
        if (n && !(r->colls[ph] = malloc(n * sizeof *r->colls[ph]))) {
            shard_splice_free(r);
            return;
        }
        if (n)
            memcpy(r->colls[ph], p->colls[ph], n * sizeof *r->colls[ph]);
        r->n_colls[ph] = n;
    }
    r->bk = approf_kernel_share(p, 1); /* pre_share, one more holder */
    if (!r->bk) {
        shard_splice_free(r);
        return;
    }
    r->bk_k = p->kernels[1]; /* the share's array (p holds it too) */
    r->n_bk = pre_n;
    r->bdig = b->kdig[1];
    b->kdig[1] = NULL;
    memcpy(r->grad_set_bytes, b->grad_set_bytes, sizeof r->grad_set_bytes);
    r->async_groups = b->async_groups;
    ctx->fwd[h - ctx->fwd].splice = r;
}

ShardSplice *shard_splice_take(const ProgBuild *b, const HeldForward *h)
{
    const ShardStage *st = b->st;
    ShardSplice *r = h ? h->splice : NULL;
    if (!r || st->variant.recompute != COSTDB_RECOMPUTE_FULL || forbidden(st) ||
        r->n_ops != st->n_ops || r->async != b->async)
        return NULL;
    st->ctx->fwd[h - st->ctx->fwd].splice = NULL;
    return r;
}

/* Appends n collectives of c to phase ph in one copy (each passed
 * shard_push_coll's test when the none build pushed it). */
static int append_colls(ProgBuild *b, int ph, const ApprofCollective *c, size_t n)
{
    ApprofStageProgram *p = b->p;
    if (!n)
        return 0;
    if (p->n_colls[ph] + n > b->ccap[ph] &&
        shard_colls_room(p, ph, &b->ccap[ph], p->n_colls[ph] + n))
        return APPROF_ENOMEM;
    memcpy(&p->colls[ph][p->n_colls[ph]], c, n * sizeof *c);
    p->n_colls[ph] += n;
    return 0;
}

int shard_splice_push(ProgBuild *b, const ShardSplice *r)
{
    const ShardStage *st = b->st;
    ApprofStageProgram *p = b->p;
    const ApprofKernel *fk = p->kernels[0], *bk = r->bk_k;
    const ApprofHash128 *fd = b->kdig[0];
    int rc = 0;
    for (int o = 0; o < st->n_ops && !rc; o++) {
        size_t f0 = r->fb[o], nf = r->fb[o + 1] - f0;
        size_t b0 = r->bb[o], nb = r->bb[o + 1] - b0;
        /* the rerun forward, as push_op_kernels pushes it */
        rc = shard_push_kernels(p, 1, &b->kcap[1], b->kdig, &fk[f0], &fd[f0], (int)nf,
                                st->ops[o].op);
        if (rc || !nb)
            continue;
        /* o's backward run as the none build ended it: marks included */
        size_t at = p->n_kernels[1];
        if (at + nb > b->kcap[1] && (rc = shard_reserve_kernels(p, 1, &b->kcap[1], b->kdig, nb)))
            continue;
        shard_copy_kernels(&p->kernels[1][at], &bk[b0], nb);
        memcpy(&b->kdig[1][at], &r->bdig[b0], nb * sizeof *r->bdig);
        p->n_kernels[1] = at + nb;
    }
    if (!rc)
        rc = append_colls(b, 0, r->colls[0], r->n_colls[0]);
    /* the none backward's collectives less its re-gather copies */
    size_t from = 0;
    for (size_t i = 0; i <= r->n_copy && !rc; i++) {
        size_t to = i < r->n_copy ? r->copy[i] : r->n_colls[1];
        rc = append_colls(b, 1, &r->colls[1][from], to - from);
        from = to + 1;
    }
    for (size_t i = 0, n0 = p->n_colls[0]; i < n0 && !rc; i++) {
        const ApprofCollective c = p->colls[0][i];
        if (shard_rerun_forward_coll(st, &c, b->recomp))
            rc = shard_push_coll(p, 1, &b->ccap[1], &c);
    }
    if (!rc) {
        memcpy(b->grad_set_bytes, r->grad_set_bytes, sizeof b->grad_set_bytes);
        b->async_groups = r->async_groups;
        atomic_fetch_add(&spliced, 1);
    }
    return rc;
}
