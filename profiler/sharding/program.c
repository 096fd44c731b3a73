/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-device stage program from a solved sharding (sharding.h): kernels
 * at local loop sizes, forward and backward collectives, the gradient
 * all-reduce, memory per device (ModuleProfileResult fields), the placement
 * of every parameter, stage input and stage output as Alpa ShardingSpec
 * text (program_place.c), and the program's end and signature
 * (program_finish.c). shard_build_program runs these as named steps over one
 * ProgBuild.
 */
#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "costdb.h"
#include "costdb_text.h"
#include "grow.h"
#include "sharding/context.h"
#include "sharding/sharding_int.h"
#include "sharding/program_int.h"
#include "sharding/program_build.h"
#include "sharding/program_splice.h"
#include "sharding/sharding.h"

/* Layout consumer o (stage-local) wants input slot i in, and on which axes
 * its input gradient is a partial sum. */
static ShardLayout consumer_layout(const ShardStage *st, int o, int i, int partial[2])
{
    const ShardStrat *s = &st->ops[o].s[st->choice[o]];
    ShardLayout lc = shard_in_layout(st, o, i);
    for (int x = 0; x < 2; x++)
        partial[x] = s->ax[x] >= 0 && lc.d[x] < 0 && st->mesh.n[x] > 1;
    return lc;
}

/* The use entry of t for layout lc and partial flags, or t->n_use. */
static int find_use(const TInfo *t, ShardLayout lc, const int partial[2])
{
    int u = 0;
    while (u < t->n_use && !(t->use[u].lc.d[0] == lc.d[0] && t->use[u].lc.d[1] == lc.d[1] &&
                             t->use[u].partial[0] == partial[0] &&
                             t->use[u].partial[1] == partial[1]))
        u++;
    return u;
}

/* The input slots i (bits APPROF_SAVED_INPUT(i)) that consumer o's
 * backward reads again from the shard kept in the forward (so a gathered
 * input is gathered again): it saves the input, and the op is not rerun
 * by recomputation, nor inside a block whose forward the backward reruns
 * (full; op, whose recomputation reruns the block's gathers:
 * shard_rerun_forward_coll). */
static unsigned rereads_inputs(const ShardStage *st, int o, const unsigned char *recomp)
{
    if (recomp[o] || st->variant.recompute == COSTDB_RECOMPUTE_FULL ||
        (st->variant.recompute == COSTDB_RECOMPUTE_OP &&
         shard_op_checkpointed(st->g, st->ops[o].op)))
        return 0;
    /* the input bits of the saved mask (APPROF_SAVED_INPUT) */
    return shard_saved_mask(st, st->ops[o].op) & ((1u << APPROF_MAX_INPUTS) - 1);
}

/* Groups the in-stage consumers of each tensor by the layout they want;
 * keeps each input's consumer layout in cl. */
static void group_uses(const ShardStage *st, TInfo *ti, const unsigned char *recomp,
                       ConsumerLayout *cl)
{
    const ApprofGraph *g = st->g;
    for (int o = 0; o < st->n_ops; o++) {
        const ApprofOp *op = &g->ops[st->ops[o].op];
        unsigned rereads = rereads_inputs(st, o, recomp);
        for (int i = 0; i < op->n_inputs; i++) {
            TInfo *t = &ti[op->inputs[i]];
            ConsumerLayout *c = &cl[(size_t)o * APPROF_MAX_INPUTS + (size_t)i];
            c->lc = consumer_layout(st, o, i, c->partial);
            if (!t->in_range)
                continue;
            ShardLayout lc = c->lc;
            const int *partial = c->partial;
            int u = find_use(t, lc, partial);
            if (u == t->n_use) {
                if (t->n_use == 4)
                    continue;  /* a fifth layout: issued by its own consumer */
                t->use[u].lc = lc;
                t->use[u].partial[0] = partial[0];
                t->use[u].partial[1] = partial[1];
                t->use[u].regather = 0;
                t->use[u].async_group = 0;
                t->use[u].op = o;
                t->use[u].slot = i;
                t->n_use++;
            }
            if (rereads & APPROF_SAVED_INPUT(i))
                t->use[u].regather = 1;
        }
    }
}

/* Asynchronous backward collectives of a linear layer (Megatron-LM's
 * LinearWithGradAccumulationAndAsyncCommunication, on by default since
 * 2022): the reduction of the input's gradient runs while the layer
 * computes its weight gradient, and the re-gather of a sharded input
 * while it computes the input gradient. Marks the backward GEMMs
 * [b0, b1) of linear layer o as group g's windows: the weight gradient's
 * (its C has the weight's welems local elements, worked out once per op
 * by push_input_colls) and the others.
 * The collectives of group g are marked where they are issued; the spec's
 * tp_async_grad prices the overlap (hw/cost.c). */
static void mark_async_gemms(ApprofStageProgram *p, double welems, size_t b0, size_t b1,
                             int group)
{
    for (size_t i = b0; i < b1; i++) {
        ApprofKernel *k = &p->kernels[1][i];
        if (k->kind != APPROF_K_GEMM || k->attention)
            continue;
        k->async_group = group;
        k->async_wgrad = shard_is_wgrad_gemm(k, welems);
    }
}

/* Records the facts of each tensor the stage touches: its layout (the
 * producer's inside the stage, else the first consumer's), whether it is
 * produced and used inside, saved for the backward (by an FP8 linear layer,
 * another op, or as a dropout's mask), a stage output (st->t_out: used
 * after the stage or nowhere inside it, as the loss), and its bytes per
 * device. */
static void note_tensors(ProgBuild *b)
{
    const ShardStage *st = b->st;
    const ApprofGraph *g = st->g;
    TInfo *ti = b->ti;
    for (int o = 0; o < st->n_ops; o++) {
        const ShardOp *so = &st->ops[o];
        const ApprofOp *op = &g->ops[so->op];
        for (int j = 0; j < op->n_outputs; j++) {
            TInfo *t = &ti[op->outputs[j]];
            if (!t->set) {
                b->touched[b->n_touched++] = op->outputs[j];
                t->last_use = -1;
            }
            t->L = shard_out_layout(st, o, j);
            t->set = t->in_range = 1;
        }
        unsigned saved = shard_saved_mask(st, so->op);
        int fp8w = shard_fp8_linear(st, so->op);
        for (int i = 0; i < op->n_inputs; i++) {
            TInfo *t = &ti[op->inputs[i]];
            if (!t->set) {
                b->touched[b->n_touched++] = op->inputs[i];
                t->last_use = -1;
                t->L = shard_in_layout(st, o, i);
                t->set = 1;
            }
            t->used = 1;
            t->last_use = so->op;
            if (saved & APPROF_SAVED_INPUT(i)) {
                t->saved = 1;
                if (fp8w >= 0 && i != fp8w)
                    t->fp8_saved = 1;
                else
                    t->nonfp8_saved = 1;
            }
        }
        for (int j = 0; j < op->n_outputs; j++) {
            if (!(saved & APPROF_SAVED_OUTPUT(j)))
                continue;
            ti[op->outputs[j]].saved = 1;
            if (op->kind == APPROF_OP_DROPOUT)
                ti[op->outputs[j]].mask_saved = 1;
            else
                ti[op->outputs[j]].nonfp8_saved = 1;
        }
    }
    for (int k = 0; k < b->n_touched; k++) {
        int t = b->touched[k];
        if (ti[t].in_range && st->t_out[t])
            ti[t].stage_out = 1;
        ti[t].local = shard_local_bytes(&g->tensors[t], ti[t].L, &st->mesh);
    }
}

/* Recomputation: marks the ops the backward reruns, finds the checkpoint
 * blocks, what stays kept from forward to backward and the parameters the
 * backward reads, and groups each tensor's consumers by layout. */
static int plan_recompute(ProgBuild *b)
{
    const ShardStage *st = b->st;
    size_t n = (size_t)(st->n_ops > 0 ? st->n_ops : 1);
    int rc = shard_mark_recompute(st, b->recomp);
    if (rc)
        return rc;
    if (!b->blk) { /* else the held forward's, copied (shard_build_program) */
        b->blk = b->blk_room;
        b->n_blk = shard_stage_blocks(st, b->blk);
        if (b->facts && (b->facts->blk = malloc(n * sizeof(int)))) {
            memcpy(b->facts->blk, b->blk, (size_t)b->n_blk * sizeof(int));
            b->facts->n_blk = b->n_blk;
        }
    }
    shard_mark_kept(st, b->ti, b->touched, b->n_touched, b->recomp, b->blk, b->n_blk);
    shard_mark_param_reads(st, b->ti, b->recomp);
    if (!b->splice) /* read by push_ops alone */
        group_uses(st, b->ti, b->recomp, b->cl);
    return 0;
}

/* Room for two kernels per op and phase (most ops lower to one or two),
 * or as many as the context's earlier programs of this recomputation ended
 * with (kernels_per_op: a recomputing backward holds the forward again, an
 * end appends an add kernel per op), and their digests (the forward held,
 * program_held.c); room for as many collectives as those programs ended
 * with (colls_per_16_ops), which are else grown (copied) push by push;
 * the gradient synchronisation is an all-reduce. */
static int reserve_kernels(ProgBuild *b)
{
    ApprofStageProgram *p = b->p;
    const ApprofShardContext *ctx = b->st->ctx;
    int mode = b->st->variant.recompute;
    for (int ph = 0; ph < 2; ph++) {
        int per = ctx ? ctx->kernels_per_op[mode][ph] : 0;
        if (ph == 0 && b->held) {
            b->kdig[0] = shard_forward_hold(b->st, b->held, p, &b->dig_borrowed);
            b->kcap[0] = p->n_kernels[0];
            continue;
        }
        b->kcap[ph] = (size_t)(per > 2 ? per : 2) * (size_t)(b->st->n_ops > 0 ? b->st->n_ops : 1);
        p->kernels[ph] = approf_block_take(b->kcap[ph] * sizeof *p->kernels[ph]);
        b->kdig[ph] = malloc(b->kcap[ph] * sizeof *b->kdig[ph]);
        if (!p->kernels[ph] || !b->kdig[ph])
            return APPROF_ENOMEM;
    }
    for (int ph = 0; ph < 2 && ctx; ph++) {
        int per16 = ctx->colls_per_16_ops[mode][ph];
        size_t room = (size_t)per16 * (size_t)(b->st->n_ops > 0 ? b->st->n_ops : 1) / 16 + 1;
        if (per16 > 0 && !(p->colls[ph] = approf_block_take(room * sizeof *p->colls[ph])))
            return APPROF_ENOMEM;
        b->ccap[ph] = per16 > 0 ? room : 0;
    }
    p->grad_sync.kind = APPROF_COLL_ALL_REDUCE;
    p->grad_sync.op = -1;
    return 0;
}

/* Appends stage op o's kernels under its strategy s to both phases (FP8
 * GEMMs and casts under the spec's fp8; a recomputed op's forward again in
 * the backward module). *bw0: where o's backward kernels begin. */
static int push_op_kernels(ProgBuild *b, int o, const ShardStrat *s, size_t *bw0)
{
    const ShardStage *st = b->st;
    ApprofStageProgram *p = b->p;
    const ShardOp *so = &st->ops[o];
    int fp8 = st->hw && st->hw->fp8, rc = 0;
    ApprofKernel kbuf[2 * APPROF_MAX_KERNELS];
    ApprofHash128 dbuf[2 * APPROF_MAX_KERNELS];
    KernelEntry own = {.k = kbuf, .dig = dbuf};
    const KernelEntry *ke = shard_op_kernels_at(st->ctx, st, o, (int)(s - so->s), &own, &rc);
    *bw0 = p->n_kernels[1];
    for (int ph = 0, at = 0; ke && ph < 2 && !rc; at += ke->n[ph], ph++) {
        size_t k0 = p->n_kernels[ph], r0 = p->n_kernels[1];
        if (ph == 1)
            *bw0 = p->n_kernels[1];
        if (!(ph == 0 && b->held))
            rc = shard_push_kernels(p, ph, &b->kcap[ph], b->kdig, &ke->k[at], &ke->dig[at],
                                    ke->n[ph], so->op);
        if (fp8 && !rc) /* FP8 GEMMs and their casts (program_fp8.c) */
            rc = shard_fp8_op(st, b->ti, p, ph, k0, so->op, ph == 0, &b->kcap[ph], b->kdig);
        /* the recomputed forward runs inside the backward module */
        if (ph == 0 && b->recomp[o] && !rc)
            rc = shard_push_kernels(p, 1, &b->kcap[1], b->kdig, &ke->k[at], &ke->dig[at],
                                    ke->n[ph], so->op);
        if (fp8 && ph == 0 && b->recomp[o] && !rc)
            rc = shard_fp8_op(st, b->ti, p, 1, r0, so->op, 1, &b->kcap[1], b->kdig);
    }
    return rc;
}

/* The forward all-reduce of each output of stage op o whose strategy s
 * splits a reduction loop over an axis: a reduce-scatter where it fuses
 * with its one consumer's slice (sequence parallelism), whose output the
 * op recompute policy then keeps. */
static int push_reduce_colls(ProgBuild *b, int o, const ShardStrat *s)
{
    const ShardStage *st = b->st;
    const ApprofGraph *g = st->g;
    const ShardMesh *m = &st->mesh;
    const ShardOp *so = &st->ops[o];
    const ApprofOp *op = &g->ops[so->op];
    int rc = 0;
    for (int x = 0; x < 2 && !rc; x++) {
        if (!shard_strat_reduces(so, s, x))
            continue;
        for (int j = 0; j < op->n_outputs && !rc; j++) {
            ApprofCollective c = shard_coll(m, APPROF_COLL_ALL_REDUCE, x,
                                            b->ti[op->outputs[j]].local, so->op);
            int t = op->outputs[j], q = st->t_first[t];
            if (q >= 0) {
                const ApprofOp *cop = &g->ops[q];
                int slot = 0;
                while (slot < cop->n_inputs && cop->inputs[slot] != t)
                    slot++;
                ShardLayout lc = shard_in_layout(st, q - st->op_begin, slot);
                if (shard_fuses_to_reduce_scatter(st, t, x, b->ti[t].L, lc, 1))
                    c.kind = APPROF_COLL_REDUCE_SCATTER;
            }
            /* op: the policy saves the reduce-scatter's output, the
             * shard (shard_rerun_forward_coll) */
            if (c.kind == APPROF_COLL_REDUCE_SCATTER &&
                st->variant.recompute == COSTDB_RECOMPUTE_OP && shard_op_checkpointed(g, so->op))
                b->rs_kept += c.bytes / m->n[x];
            rc = shard_push_coll(b->p, 0, &b->ccap[0], &c);
        }
    }
    return rc;
}

/* Input slot i of stage op o, produced inside the stage, wanted in layout
 * lc: one reshard per distinct layout, issued by its first consumer (its
 * backward collectives in the async group of that layout); the backward
 * GEMMs of linear layer o (weight, of welems local elements, from bw0 on)
 * are marked as the group's windows. */
static int reshard_input(ProgBuild *b, int o, int i, ShardLayout lc, const int partial[2],
                         int weight, double welems, size_t bw0)
{
    const ShardStage *st = b->st;
    const ApprofGraph *g = st->g;
    ApprofStageProgram *p = b->p;
    TInfo *ti = b->ti;
    int tix = g->ops[st->ops[o].op].inputs[i], rc = 0;
    const ApprofTensor *t = &g->tensors[tix];
    const TInfo *inf = &ti[tix];
    int u = find_use(inf, lc, partial), regather, first = 1, group = 0;
    if (u < inf->n_use) {
        first = inf->use[u].op == o && inf->use[u].slot == i;
        regather = inf->use[u].regather;
        if (b->async && !ti[tix].use[u].async_group)
            ti[tix].use[u].async_group = ++b->async_groups;
        group = ti[tix].use[u].async_group;
    } else {
        regather = (rereads_inputs(st, o, b->recomp) & APPROF_SAVED_INPUT(i)) != 0;
        group = b->async ? ++b->async_groups : 0;
    }
    if (weight >= 0 && tix != weight)
        mark_async_gemms(p, welems, bw0, p->n_kernels[1], group);
    if (!first)
        return 0;
    /* the producer's layout of it: an in-range tensor's facts hold it
     * (note_tensors, or the held forward's build of the same solution),
     * which spares loads of the tensor, its producer and its layouts that
     * a long stage's build mostly misses in cache */
    ShardLayout lp = inf->L;
#ifndef NDEBUG
    int j = 0;
    while (j < g->ops[t->producer].n_outputs && g->ops[t->producer].outputs[j] != tix)
        j++;
    ShardLayout lq = shard_out_layout(st, t->producer - st->op_begin, j);
    assert(lq.d[0] == lp.d[0] && lq.d[1] == lp.d[1]);
#endif
    ApprofCollective f[2], bc[4];
    int nf = 0, nb = 0;
    /* most reshards move nothing: not called then */
    if (!shard_reshard_axis_idle(&st->mesh, lp, lc, partial, 0) ||
        !shard_reshard_axis_idle(&st->mesh, lp, lc, partial, 1))
        shard_reshard(&st->mesh, t, lp, lc, partial, regather, f, &nf, bc, &nb);
    for (int q = 0; q < nf && !rc; q++)
        rc = shard_push_coll(p, 0, &b->ccap[0], &f[q]);
    /* a re-gather runs under the group's input-gradient GEMMs, the
     * gradient's collective (async_wgrad, shard_reshard) under its
     * weight-gradient GEMMs */
    for (int q = 0; q < nb && !rc; q++) {
        size_t at = p->n_colls[1];
        bc[q].async_group = group;
        rc = shard_push_coll(p, 1, &b->ccap[1], &bc[q]);
        /* a re-gather copy (async_wgrad 0, its forward collective's; a
         * gradient's is 1: shard_reshard), pushed: noted for the full
         * build's splice, whose backward has none (program_splice.c) */
        if (!rc && b->rec && regather && !bc[q].async_wgrad && p->n_colls[1] > at &&
            shard_splice_note_copy(b->rec, at)) {
            shard_splice_free(b->rec);
            b->rec = NULL;
        }
    }
    return rc;
}

/* shard_local_bytes of tensor tix in layout lc: ti's bytes where lc
 * splits it over the same axes as its own layout does (the same
 * divisions of the same size: the same bits), so mostly not computed
 * again. */
static double local_bytes_in(const ProgBuild *b, int tix, ShardLayout lc)
{
    const TInfo *t = &b->ti[tix];
    if ((lc.d[0] >= 0) == (t->L.d[0] >= 0) && (lc.d[1] >= 0) == (t->L.d[1] >= 0))
        return t->local;
    return shard_local_bytes(&b->st->g->tensors[tix], lc, &b->st->mesh);
}

/* The collectives each input of stage op o needs: a reshard of one
 * produced inside the stage (reshard_input); for a parameter, its
 * gradient's bytes join those of the axis set it is partial over (the
 * gradient synchronisation's); for a stage input, the all-reduce of its
 * gradient over each axis it is partial over, in o's async group. */
static int push_input_colls(ProgBuild *b, int o, size_t bw0)
{
    const ShardStage *st = b->st;
    const ApprofGraph *g = st->g;
    const ShardMesh *m = &st->mesh;
    const ShardOp *so = &st->ops[o];
    const ApprofOp *op = &g->ops[so->op];
    int wslot = b->async ? shard_linear_weight_slot(g, so->op) : -1;
    int weight = wslot >= 0 ? op->inputs[wslot] : -1, rc = 0;
    /* the weight's local elements (mark_async_gemms), once per op */
    double welems = weight >= 0 ? b->ti[weight].local /
                                      (double)approf_dtype_size(g->tensors[weight].dtype)
                                : 0.0;
    for (int i = 0; i < op->n_inputs && !rc; i++) {
        int tix = op->inputs[i];
        const ApprofTensor *t = &g->tensors[tix];
        const ConsumerLayout *cl = &b->cl[(size_t)o * APPROF_MAX_INPUTS + (size_t)i];
        ShardLayout lc = cl->lc;
        const int *partial = cl->partial;
        if (b->ti[tix].in_range) {
            rc = reshard_input(b, o, i, lc, partial, weight, welems, bw0);
            continue;
        }
        if (t->role == APPROF_TENSOR_INPUT)
            continue;
        if (t->role == APPROF_TENSOR_PARAM) {
            /* the gradient is partial over the axes its consumer splits
             * the batch on: it joins the gradient bytes of that axis set */
            int set = (partial[0] ? APPROF_AXIS0 : 0) | (partial[1] ? APPROF_AXIS1 : 0);
            if (set)
                b->grad_set_bytes[set] += local_bytes_in(b, tix, lc);
            continue;
        }
        /* a stage input: its gradient's reduction is this consumer's */
        int group = b->async ? ++b->async_groups : 0;
        if (weight >= 0)
            mark_async_gemms(b->p, welems, bw0, b->p->n_kernels[1], group);
        for (int x = 0; x < 2 && !rc; x++) {
            if (!partial[x])
                continue;
            ApprofCollective c = shard_coll(m, APPROF_COLL_ALL_REDUCE, x,
                                            local_bytes_in(b, tix, lc), so->op);
            c.async_group = group;
            c.async_wgrad = 1;
            rc = shard_push_coll(b->p, 1, &b->ccap[1], &c);
        }
    }
    return rc;
}

/* Kernels and collectives of every op of the stage, then the forward
 * collectives the backward's recomputation reruns. */
static int push_ops(ProgBuild *b)
{
    const ShardStage *st = b->st;
    ApprofStageProgram *p = b->p;
    int rc = 0;
    for (int o = 0; o < st->n_ops && !rc; o++) {
        const ShardStrat *s = &st->ops[o].s[st->choice[o]];
        size_t bw0, f0 = p->n_kernels[0];
        rc = push_op_kernels(b, o, s, &bw0);
        if (b->rec) { /* o's runs, for the full build's splice */
            b->rec->fb[o] = f0;
            b->rec->bb[o] = bw0;
        }
        if (!rc)
            rc = push_reduce_colls(b, o, s);
        if (!rc)
            rc = push_input_colls(b, o, bw0);
    }
    if (b->rec) {
        b->rec->fb[st->n_ops] = p->n_kernels[0];
        b->rec->bb[st->n_ops] = p->n_kernels[1];
    }
    for (size_t i = 0, n0 = p->n_colls[0]; i < n0 && !rc; i++) {
        const ApprofCollective c = p->colls[0][i];
        if (shard_rerun_forward_coll(st, &c, b->recomp))
            rc = shard_push_coll(p, 1, &b->ccap[1], &c);
    }
    return rc;
}

/* One gradient synchronisation, over the group of the axis set that holds
 * most of the gradient bytes. Tensor-parallel weights (split over one
 * axis) are reduced over the other axis alone, while the few replicated
 * parameters (norms, biases) are partial over both: pricing all of them
 * over both axes would give the big weights' ring every GPU of a host, and
 * so every network adapter of the host, where each tensor-parallel rank's
 * data-parallel ring has one (docs/variants.md, "ZeRO", "The group"). */
static void choose_grad_sync(ProgBuild *b)
{
    ApprofCollective *gs = &b->p->grad_sync;
    const ShardMesh *m = &b->st->mesh;
    for (int set = APPROF_AXIS0; set <= (APPROF_AXIS0 | APPROF_AXIS1); set++) {
        gs->bytes += b->grad_set_bytes[set];
        if (b->grad_set_bytes[set] > 0 &&
            (!gs->axes || b->grad_set_bytes[set] > b->grad_set_bytes[gs->axes]))
            gs->axes = set;
    }
    if (gs->axes == (APPROF_AXIS0 | APPROF_AXIS1)) {
        gs->group_size = m->n[0] * m->n[1];
        gs->crosses_hosts = m->cross_both;
        gs->hosts = m->hosts_both;
        gs->span_hosts = m->span_hosts_both;
    } else if (gs->axes) {
        int x = gs->axes == APPROF_AXIS1;
        gs->group_size = m->n[x];
        gs->crosses_hosts = m->cross[x];
        gs->hosts = m->hosts[x];
        gs->span_hosts = m->span_hosts[x];
    } else {
        gs->group_size = 1;
    }
}

/* Memory per device of the two modules as Alpa compiles them for
 * pipeshard training with gradient accumulation (docs/alpa-semantics.md,
 * "The backward module"). Forward: invars are the stage inputs and every
 * parameter, outvars the stage outputs and what the backward reads.
 * Backward: invars are the parameters it reads, one accumulation buffer
 * per parameter (donated: it comes back as an outvar), the saved
 * activations and the incoming gradients; outvars are the input gradients
 * and the accumulation buffers. The buffers are as wide as the gradients
 * are accumulated: Megatron's DDP allocates its contiguous grad buffer
 * (main_grad) in f32 when accumulate_allreduce_grads_in_fp32 is set, which
 * bf16 training sets unless --grad-reduce-in-bf16
 * (megatron/training/arguments.py; grad_reduce_in_fp32 of
 * megatron/core/distributed/distributed_data_parallel_config.py,
 * core_v0.19.0), and its memory estimator counts 4 bytes of gradient per
 * parameter (theoretical_memory_usage.py: 18 bytes a parameter, 6 + 12/dp
 * with the distributed optimizer): docs/megatron-memory.md. */
static void memory_sizes(ProgBuild *b, ShardPlaceSums *s)
{
    const ShardStage *st = b->st;
    ApprofStageProgram *p = b->p;
    const TInfo *ti = b->ti;
    for (int k = 0; k < b->n_touched; k++) {
        int t = b->touched[k];
        if (ti[t].in_range && ti[t].keep && !ti[t].stage_out)
            s->saved_act += ti[t].local;
    }
    shard_saved_storage(st, ti, b->touched, b->n_touched, &s->saved_act, &s->sin_saved);
    shard_fp8_saved(st, ti, b->touched, b->n_touched, &s->saved_act, &s->sin_saved);
    s->saved_act += b->rs_kept;
    double buffers = s->params * shard_grad_buffer_ratio(st);
    p->param_bytes = (int64_t)llround(s->params);
    p->invar_size[0] = (int64_t)llround(s->sin + s->params);
    p->outvar_size[0] = (int64_t)llround(s->sout + s->saved_act);
    double walk[2], fresh = 0.0;
    walk[0] = shard_transient_peak(st, ti, 0, NULL);
    if (b->bwd_set) { /* the held forward's build's: the same facts */
        walk[1] = b->bwd_peak;
        fresh = b->bwd_fresh;
    } else {
        walk[1] = shard_transient_peak(st, ti, 1, &fresh);
        if (b->facts) {
            b->facts->bwd_peak = walk[1];
            b->facts->bwd_fresh = fresh;
            b->facts->bwd_set = 1;
        }
    }
    p->temp_buffer_size[0] = (int64_t)llround(walk[0]);
    p->invar_size[1] = (int64_t)llround(s->params_read + buffers + s->saved_act + s->sin_saved +
                                        s->sout_saved + s->sout);
    p->outvar_size[1] = (int64_t)llround(s->sin_grads + buffers);
    p->donated_size[1] = (int64_t)llround(buffers);
    double rerun = shard_recompute_temp(st, ti, b->blk, b->n_blk);
    p->temp_buffer_size[1] = (int64_t)llround(walk[1] + rerun);
    /* The activation-sized part of each transient (the tensors made
     * inside the stage: per-token buffers, the loss's logits, a rerun
     * block's activations), which a cp GPU holds for its seq / cp tokens;
     * the weight-sized part is the largest fresh parameter gradient of the
     * backward (and ZeRO-3's gathered blocks, program_zero.c). With a the
     * activation part and w = the walk's largest fresh gradient, a cp
     * GPU's backward walk, max over ops of live / cp + fresh, is at most
     * (walk - w) / cp + w: exact where the walk peaks at the op with the
     * largest fresh gradient (docs/context-parallel.md, "The transient's
     * activation-sized part"). */
    p->temp_activation_size[0] = p->temp_buffer_size[0];
    p->temp_activation_size[1] = (int64_t)llround(walk[1] - fresh + rerun);
    p->intermediate_size = (int64_t)llround(s->saved_act + s->sin_saved + s->sout_saved);
    /* Adam: two moments, plus a master copy for 16-bit training, in the
     * spec's optimizer widths (f32 by default: 12 bytes, 8 in f32) */
    double per_elem = shard_adam_state_bytes(st, (double)approf_dtype_size(st->g->dtype));
    p->initial_size = (int64_t)llround(s->param_elems * per_elem);
}

static atomic_ulong builds;

unsigned long shard_build_count(void)
{
    return atomic_load(&builds);
}

/* The program of the solved stage st, step by step: the per-tensor facts,
 * recomputation, kernels and collectives, the gradient synchronisation,
 * placements and memory; then the ZeRO variants the request's family asks
 * for are derived from it, and it is ended (finish_program). */
int shard_build_program(const ShardStage *st, ApprofStageProgram *p)
{
    ProgBuild b = {.st = st, .p = p, .async = st->hw && st->hw->tp_async_grad > 0,
                   .held = st->hw && st->hw->fp8 ? NULL : shard_forward_find(st)};
    ShardPlaceSums sum = {0};
    BackwardEnds ends;
    size_t pre_colls[2] = {0, 0}; /* the collectives before the end */
    memset(&ends, 0, sizeof ends);
    atomic_fetch_add(&builds, 1);
    /* a held forward's list digest, as its build's end made it: this
     * build holds the same kernels and digests (program_finish.c,
     * kernel_list) */
    if (b.held && b.held->list_set) {
        ends.fwd_list = b.held->list;
        ends.fwd_list_set = 1;
    }
    if (st->ctx && st->variant.recompute != COSTDB_RECOMPUTE_NONE)
        st->ctx->recompute_asked = 1;
    /* the steps read each op's saved mask several times a build */
    shard_op_facts_make(st->ctx);
    int rc = shard_build_scratch_take(&b);
    /* a none build records its push_ops for the full build of its held
     * forward, which takes that record instead of pushing its own
     * (program_splice.c) */
    b.rec = shard_splice_start(&b);
    b.splice = shard_splice_take(&b, b.held);
    /* the tensor facts and placements of a held forward's build, where it
     * kept them: the same stage and sharding solution (program_held.c) */
    const ShardFacts *hf = b.held ? b.held->facts : NULL;
    if (!rc && hf && hf->place) {
        rc = shard_forward_facts(st, b.held, b.ti, b.touched, &b.n_touched, p, &b.pdig);
        b.placed = 1;
        if (!rc)
            rc = shard_build_held_extras(&b, hf);
    } else if (!rc) {
        note_tensors(&b);
        /* kept for the other recomputation modes once the context has been
         * asked for one (a sweep of none alone never reads them) */
        if (!b.held && !(st->hw && st->hw->fp8) && st->ctx && st->req &&
            st->ctx->recompute_asked)
            b.facts = shard_facts_take(b.ti, b.touched, b.n_touched);
    }
    if (!rc)
        rc = plan_recompute(&b);
    if (!rc)
        rc = reserve_kernels(&b);
    if (!rc)
        rc = b.splice ? shard_splice_push(&b, b.splice) : push_ops(&b);
    if (!rc) {
        choose_grad_sync(&b);
        if (!b.placed) {
            rc = shard_place_tensors(st, b.ti, b.touched, b.n_touched, p, &b.pdig);
            if (!rc && b.facts && shard_facts_add_places(b.facts, p, b.pdig)) {
                shard_facts_free(b.facts);
                b.facts = NULL;
            }
        }
        if (!rc)
            shard_place_sums(st, b.ti, b.touched, b.n_touched, &sum);
    }
    /* the ZeRO ends below read each op's parameter bytes several times
     * per program (ZeRO's shards and collectives, the accumulation adds)
     * and ti no longer changes: summed once here (shard_op_param_bytes) */
    ShardStage sp = *st;
    double *op_param = b.param_bytes;
    /* then the ops with parameters (shard_param_ops_index) */
    if (!rc && st->n_ops > 0) {
        if (b.op_param)
            memcpy(op_param, b.op_param, (size_t)st->n_ops * sizeof *op_param);
        else
            for (int o = st->op_begin; o < st->op_end; o++)
                op_param[o - st->op_begin] = shard_op_param_bytes_of(st, b.ti, o);
        if (b.facts && !b.op_param &&
            (b.facts->op_param = malloc((size_t)st->n_ops * sizeof *op_param)))
            memcpy(b.facts->op_param, op_param, (size_t)st->n_ops * sizeof *op_param);
        sp.op_param = op_param;
        sp.param_ti = b.ti;
        shard_param_ops_index(&sp, b.param_ops);
        st = &sp;
    }
    if (!rc) {
        memory_sizes(&b, &sum);
        SigShared sig = {{p->n_colls[0], p->n_colls[1]}, {0, 0}, 0, {{0, 0}, {0, 0}}, {0, 0}};
        pre_colls[0] = p->n_colls[0];
        pre_colls[1] = p->n_colls[1];
        ZeroTail tail = {sum.param_elems, sum.params > 0.0 ? sum.params_read / sum.params : 0.0,
                         b.blk, b.n_blk, b.pdig, NULL, &sig};
        int family = st->ctx && st->req && (st->zero_family >> (st->variant.zero + 1));
        /* without grad_accum_fusion (which changes the backward's own
         * GEMMs) the end only appends: the program is ended first and its
         * derived stages hold its forward and, where their accumulation
         * is the same, its backward (zero_family.c) */
        if (family && !(st->hw && st->hw->grad_accum_fusion))
            tail.ends = &ends;
        /* the collectives so far start every program of the build (the
         * ends only append): a price memo resumes after them (stage.h,
         * coll_prefix) */
        for (int ph = 0; ph < 2 && family; ph++) {
            p->coll_prefix[ph] = approf_coll_prefix_id();
            p->n_coll_prefix[ph] = p->n_colls[ph];
        }
        ApprofStageProgram pre = *p;
        if (tail.ends) {
            ends.pre_n = p->n_kernels[1];
            rc = shard_finish_program(st, b.ti, p, &tail, b.kcap, b.ccap, b.kdig);
            ends.pre_k = p->kernels[1];
            ends.pre_dig = b.kdig[1];
            /* held by ends.e[] while the derived programs are made */
            ends.pre_share = rc || p->n_kernel_head[1] ? NULL : p->kernel_share[1];
            /* where the derived programs' heads end: a price memo keeps
             * the sums up to there (approf_phase_seconds_memo) */
            if (ends.pre_share && st->req && st->req->kernel_views)
                approf_kernel_share_set_mark(ends.pre_share, ends.pre_n);
            ends.fwd = rc ? NULL : approf_kernel_share(p, 0);
            /* a failed end derives as before: copies of p before its end */
            tail.ends = ends.fwd && ends.n ? &ends : NULL;
            /* read by the derived programs in place (ZeroTail.colls) */
            for (int ph = 0; ph < 2 && !rc; ph++)
                tail.colls[ph] = approf_coll_share(p, ph);
            pre.colls[0] = p->colls[0];
            pre.colls[1] = p->colls[1];
            pre.kernels[0] = p->kernels[0];
            pre.kernels[1] = p->kernels[1];
            for (int z = st->variant.zero + 1; z <= 3; z++)
                if (st->zero_family & (1u << z))
                    shard_derive_zero(st, b.ti, &pre, b.kdig, &tail, z);
            for (int ph = 0; ph < 2; ph++)
                approf_coll_share_release(tail.colls[ph]);
        } else {
            for (int z = st->variant.zero + 1; z <= 3 && family; z++)
                if (st->zero_family & (1u << z))
                    shard_derive_zero(st, b.ti, p, b.kdig, &tail, z);
            rc = shard_finish_program(st, b.ti, p, &tail, b.kcap, b.ccap, b.kdig);
        }
    }
    for (int ph = 0, *kp; ph < 2 && !rc && st->ctx && st->n_ops > 0; ph++) {
        size_t per = (p->n_kernels[ph] + (size_t)st->n_ops - 1) / (size_t)st->n_ops + 1;
        if (per > (size_t)*(kp = &st->ctx->kernels_per_op[st->variant.recompute][ph]) && per <= 64)
            *kp = (int)per;
        size_t per16 = (p->n_colls[ph] * 16 + (size_t)st->n_ops - 1) / (size_t)st->n_ops + 1;
        if (per16 > (size_t)*(kp = &st->ctx->colls_per_16_ops[st->variant.recompute][ph]) &&
            per16 <= 64 * 16)
            *kp = (int)per16;
    }
    if (!rc && !b.held && !(st->hw && st->hw->fp8)) { /* for the other modes */
        shard_forward_keep(st, p, &b.kdig[0], &b.facts,
                           ends.fwd_list_set ? &ends.fwd_list : NULL);
        if (b.rec)
            shard_splice_keep(&b, b.rec, ends.pre_share, ends.pre_n, pre_colls);
        b.rec = NULL;
    }
    shard_splice_free(b.rec);
    shard_splice_free(b.splice);
    shard_facts_free(b.facts);
    shard_backward_ends_free(&ends);
    if (!b.dig_borrowed)
        free(b.kdig[0]);
    free(b.kdig[1]);
    free(b.pdig);
    shard_build_scratch_release(&b);
    return rc;
}
