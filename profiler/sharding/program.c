/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-device stage program from a solved sharding (sharding.h): kernels
 * at local loop sizes, forward and backward collectives, the gradient
 * all-reduce, memory per device (ModuleProfileResult fields), the placement
 * of every parameter, stage input and stage output as Alpa ShardingSpec
 * text, and the program signature (a hash of everything but layer and
 * operator ids, so identical stages at different depths share it).
 */
#include <math.h>
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
#include "sharding/sharding.h"

/* Layout consumer o (stage-local) wants input slot i in, and on which axes
 * its input gradient is a partial sum. */
static ShardLayout consumer_layout(const ShardStage *st, int o, int i, int partial[2])
{
    const ShardOp *so = &st->ops[o];
    const ShardStrat *s = &so->s[st->choice[o]];
    int t = st->g->ops[so->op].inputs[i];
    ShardLayout lc = shard_operand_layout(s, so->sp->in_map[i], st->g->tensors[t].ndim);
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

/* Consumer o's backward reads input slot i again from the shard kept in
 * the forward (so a gathered input is gathered again): it saves the input,
 * and the op is not rerun by recomputation, nor inside a block whose
 * forward the backward reruns (full; op, whose recomputation reruns the
 * block's gathers: shard_rerun_forward_coll). */
static int rereads_input(const ShardStage *st, int o, int i, const unsigned char *recomp)
{
    return (approf_op_saved_mask(st->g, st->ops[o].op) & APPROF_SAVED_INPUT(i)) && !recomp[o] &&
           st->variant.recompute != COSTDB_RECOMPUTE_FULL &&
           !(st->variant.recompute == COSTDB_RECOMPUTE_OP &&
             shard_op_checkpointed(st->g, st->ops[o].op));
}

/* Groups the in-stage consumers of each tensor by the layout they want. */
static void group_uses(const ShardStage *st, TInfo *ti, const unsigned char *recomp)
{
    const ApprofGraph *g = st->g;
    for (int o = 0; o < st->n_ops; o++) {
        const ApprofOp *op = &g->ops[st->ops[o].op];
        for (int i = 0; i < op->n_inputs; i++) {
            TInfo *t = &ti[op->inputs[i]];
            if (!t->in_range)
                continue;
            int partial[2];
            ShardLayout lc = consumer_layout(st, o, i, partial);
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
            if (rereads_input(st, o, i, recomp))
                t->use[u].regather = 1;
        }
    }
}

/* Appends kernel k of op to phase ph, and its digest to dig[ph] (the
 * signature's, same length). */
int shard_push_kernel(ApprofStageProgram *p, int ph, size_t *cap, ApprofHash128 **dig,
                      const ApprofKernel *k, ApprofHash128 d, int op)
{
    size_t ck = *cap, cd = *cap; /* the two arrays share one capacity */
    if (UTIL_GROW(p->kernels[ph], ck, p->n_kernels[ph] + 1) < 0 ||
        UTIL_GROW(dig[ph], cd, p->n_kernels[ph] + 1) < 0)
        return APPROF_ENOMEM;
    *cap = ck < cd ? ck : cd;
    dig[ph][p->n_kernels[ph]] = d;
    ApprofKernel *to = &p->kernels[ph][p->n_kernels[ph]++];
    *to = *k;
    to->op = op;
    to->async_group = to->async_wgrad = 0;
    return 0;
}

/* Asynchronous backward collectives of a linear layer (Megatron-LM's
 * LinearWithGradAccumulationAndAsyncCommunication, on by default since
 * 2022): the reduction of the input's gradient runs while the layer
 * computes its weight gradient, and the re-gather of a sharded input
 * while it computes the input gradient. Marks the backward GEMMs
 * [b0, b1) of linear layer o (weight w) as group g's windows: the weight
 * gradient's (its C has the weight's local elements) and the others.
 * The collectives of group g are marked where they are issued; the spec's
 * tp_async_grad prices the overlap (hw/cost.c). */
static void mark_async_gemms(ApprofStageProgram *p, const TInfo *ti, const ApprofGraph *g, int w,
                             size_t b0, size_t b1, int group)
{
    double welems = ti[w].local / (double)approf_dtype_size(g->tensors[w].dtype);
    for (size_t i = b0; i < b1; i++) {
        ApprofKernel *k = &p->kernels[1][i];
        if (k->kind != APPROF_K_GEMM || k->attention)
            continue;
        k->async_group = group;
        k->async_wgrad = shard_is_wgrad_gemm(k, welems);
    }
}

ApprofHash128 shard_kernel_digest(const ApprofKernel *k)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0x6b);
    int64_t w[15] = {k->kind, 0, 0, k->batch, k->m, k->n, k->k, k->conv_n, k->conv_c,
                     k->conv_h, k->conv_w, k->conv_k, k->conv_r, k->conv_s, k->elements};
    memcpy(&w[1], &k->flops, sizeof(double));
    memcpy(&w[2], &k->bytes, sizeof(double));
    approf_hash128_update(&h, w, sizeof(w));
    return h;
}

int shard_push_coll(ApprofStageProgram *p, int ph, size_t *cap, const ApprofCollective *c)
{
    if (c->group_size <= 1 || !(c->bytes > 0))
        return 0;
    if (UTIL_GROW(p->colls[ph], *cap, p->n_colls[ph] + 1) < 0)
        return APPROF_ENOMEM;
    p->colls[ph][p->n_colls[ph]++] = *c;
    return 0;
}

static void layout_axes(ShardLayout L, int ndim, int *axis_of_dim)
{
    for (int d = 0; d < APPROF_MAX_DIMS; d++)
        axis_of_dim[d] = -1;
    for (int d = 0; d < ndim; d++) {
        if (L.d[0] == d && L.d[1] == d)
            axis_of_dim[d] = 2;
        else if (L.d[0] == d)
            axis_of_dim[d] = 0;
        else if (L.d[1] == d)
            axis_of_dim[d] = 1;
    }
}

/* Appends the placement of tensor t (room for it reserved), and its spec
 * text's digest to dig (the signature's). */
static void add_placement(const ShardStage *st, ApprofStageProgram *p, ApprofHash128 *dig, int t,
                          ApprofRole role, const TInfo *ti)
{
    const ApprofGraph *g = st->g;
    ApprofPlacement *pl = &p->placements[p->n_placements];
    memset(pl, 0, offsetof(ApprofPlacement, spec));
    pl->tensor = t;
    pl->role = role;
    layout_axes(ti->L, g->tensors[t].ndim, pl->mesh_axis_of_dim);
    pl->local_bytes = (int64_t)llround(ti->local);
    CostdbLayout cl = {g->tensors[t].ndim, {0}, st->mesh.n[0], st->mesh.n[1]};
    _Static_assert(APPROF_MAX_DIMS <= COSTDB_MAX_DIMS, "a tensor's rank fits a stored layout");
    memcpy(cl.mesh_axis_of_dim, pl->mesh_axis_of_dim, sizeof pl->mesh_axis_of_dim);
    size_t len;
    const char *text = shard_spec_text(st->ctx, &cl, pl->spec, sizeof pl->spec, &len,
                                       &dig[p->n_placements]);
    if (text != pl->spec)
        memcpy(pl->spec, text, len + 1);
    p->n_placements++;
}

/* dig: per phase, the digest of each kernel (shard_kernel_digest); pdig:
 * of each placement's spec text. */
static void signature(ApprofStageProgram *p, ApprofHash128 *const dig[2],
                      const ApprofHash128 *pdig)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0);
    int64_t hdr[6] = {p->mesh_hosts, p->mesh_gpus, p->logical_a, p->logical_b,
                      p->force_batch_dim, (int)p->dtype};
    approf_hash128_update(&h, hdr, sizeof(hdr));
    for (int ph = 0; ph < 2; ph++) {
        approf_hash128_word(&h, p->n_kernels[ph]);
        for (size_t i = 0; i < p->n_kernels[ph]; i++) {
            approf_hash128_word(&h, dig[ph][i].a);
            approf_hash128_word(&h, dig[ph][i].b);
            if (p->kernels[ph][i].async_group)
                approf_hash128_word(&h, (uint64_t)p->kernels[ph][i].async_group * 2 +
                                            (uint64_t)p->kernels[ph][i].async_wgrad);
        }
        approf_hash128_word(&h, p->n_colls[ph]);
        for (size_t i = 0; i < p->n_colls[ph]; i++) {
            const ApprofCollective *c = &p->colls[ph][i];
            int64_t w[5] = {c->kind, c->axes, c->group_size, c->crosses_hosts, 0};
            memcpy(&w[4], &c->bytes, sizeof(double));
            approf_hash128_update(&h, w, sizeof(w));
            if (c->async_group)
                approf_hash128_word(&h, (uint64_t)c->async_group * 2 + (uint64_t)c->async_wgrad);
            if (c->zero3_unit) { /* an overlapping ZeRO-3 schedule (program_zero.c) */
                int64_t z[3] = {c->zero3_unit, c->zero3_issue, c->op - p->op_begin};
                approf_hash128_update(&h, z, sizeof(z));
            }
        }
        int64_t mem[4] = {p->invar_size[ph], p->outvar_size[ph], p->temp_buffer_size[ph],
                          p->peak_memory[ph]};
        approf_hash128_update(&h, mem, sizeof(mem));
    }
    int64_t more[8] = {p->intermediate_size, p->initial_size, p->param_bytes, p->variant.recompute,
                       p->variant.zero, p->grad_sync.axes, 0, 0};
    memcpy(&more[6], &p->grad_sync.bytes, sizeof(double));
    memcpy(&more[7], &p->ilp_objective, sizeof(double));
    approf_hash128_update(&h, more, sizeof(more));
    /* what a measuring backend's Adam step runs over (its measurement is
     * reused with the phases') */
    uint64_t opt;
    memcpy(&opt, &p->optimizer_elements, sizeof opt);
    approf_hash128_word(&h, opt);
    approf_hash128_word(&h, p->n_placements);
    for (size_t i = 0; i < p->n_placements; i++) {
        int64_t w[4] = {p->placements[i].role, p->placements[i].local_bytes,
                        (int64_t)pdig[i].a, (int64_t)pdig[i].b};
        approf_hash128_update(&h, w, sizeof(w));
    }
    snprintf(p->signature, sizeof(p->signature), "%016llx%016llx", (unsigned long long)h.a,
             (unsigned long long)h.b);
}

/* What the end of a program needs besides its stage, tensors and program
 * (finish_program). */
typedef struct ZeroTail {
    double param_elems, read_share;
    const int *blk;
    int n_blk;
    const ApprofHash128 *pdig;
} ZeroTail;

/* The end of a stage program, where its variants' programs part: ZeRO
 * (program_zero.c), gradient accumulation, FP8 weights, the peaks and the
 * signature. */
static int finish_program(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                          const ZeroTail *tl, size_t kcap[2], size_t ccap[2],
                          ApprofHash128 *kdig[2])
{
    int rc = shard_apply_zero(st, ti, p, tl->param_elems, tl->read_share, tl->blk, tl->n_blk,
                              ccap);
    if (!rc)
        rc = shard_push_grad_accum(st, ti, p, &kcap[1], kdig);
    if (!rc)
        shard_fp8_weights(st, ti, p);
    if (rc)
        return rc;
    /* Alpa: temp = peak - invars - outvars + donated */
    for (int ph = 0; ph < 2; ph++)
        p->peak_memory[ph] = p->invar_size[ph] + p->outvar_size[ph] + p->temp_buffer_size[ph] -
                             p->donated_size[ph];
    signature(p, kdig, tl->pdig);
    return 0;
}

/* ZeRO stage z of the stage being built, from its program p before the end
 * (finish_program): a copy of p and its kernel digests, ended as ZeRO z;
 * kept in the context for the request that will ask for it (zero_family.c).
 * Without memory nothing is kept (that request builds it). */
static void derive_zero(const ShardStage *st, const TInfo *ti, const ApprofStageProgram *p,
                        ApprofHash128 *const kdig[2], const ZeroTail *tl, int z)
{
    ApprofStageProgram q = *p;
    ApprofHash128 *qdig[2] = {NULL, NULL};
    size_t kcap[2] = {p->n_kernels[0], p->n_kernels[1]}, ccap[2] = {p->n_colls[0], p->n_colls[1]};
    ShardStage sz = *st;
    ApprofShardRequest req = *st->req;
    int rc = 0;
    q.kernels[0] = q.kernels[1] = NULL;
    q.colls[0] = q.colls[1] = NULL;
    for (int ph = 0; ph < 2 && !rc; ph++) {
        if (!kcap[ph] && !ccap[ph])
            continue;
        qdig[ph] = malloc((kcap[ph] ? kcap[ph] : 1) * sizeof *qdig[ph]);
        q.kernels[ph] = malloc((kcap[ph] ? kcap[ph] : 1) * sizeof *q.kernels[ph]);
        q.colls[ph] = malloc((ccap[ph] ? ccap[ph] : 1) * sizeof *q.colls[ph]);
        if (!qdig[ph] || !q.kernels[ph] || !q.colls[ph]) {
            rc = APPROF_ENOMEM;
            break;
        }
        if (kcap[ph]) { /* a phase without kernels or collectives has no array */
            memcpy(qdig[ph], kdig[ph], kcap[ph] * sizeof *qdig[ph]);
            memcpy(q.kernels[ph], p->kernels[ph], kcap[ph] * sizeof *q.kernels[ph]);
        }
        if (ccap[ph])
            memcpy(q.colls[ph], p->colls[ph], ccap[ph] * sizeof *q.colls[ph]);
    }
    sz.variant.zero = req.variant.zero = q.variant.zero = z;
    /* the placements are p's, read by the signature only: a ZeRO variant
     * never owns its sharding group's placements (docs/variants.md,
     * "Storage"), so the derived program keeps none */
    if (!rc)
        rc = finish_program(&sz, ti, &q, tl, kcap, ccap, qdig);
    q.placements = NULL;
    q.n_placements = 0;
    if (rc)
        approf_stage_program_clear(&q);
    if (!rc || rc == APPROF_ENOVARIANT)
        shard_zero_family_put(st->ctx, &req, rc, &q);
    free(qdig[0]);
    free(qdig[1]);
}

int shard_build_program(const ShardStage *st, ApprofStageProgram *p)
{
    const ApprofGraph *g = st->g;
    const ShardMesh *m = &st->mesh;
    size_t kcap[2] = {0, 0}, ccap[2] = {0, 0};
    ApprofHash128 *kdig[2] = {NULL, NULL}, *pdig = NULL;
    int rc = 0;
    unsigned char *recomp = NULL;
    int *blk = NULL, n_blk = 0, n_touched = 0;
    size_t nt = g->n_tensors ? g->n_tensors : 1;
    /* Per-tensor facts live in the context's scratch (all zero between
     * programs: only the tensors this stage touches are written, and reset
     * at the end), so a program costs its stage's size, not the graph's;
     * without a context the program allocates its own. */
    ApprofShardContext *ctx = st->ctx;
    TInfo *ti = NULL;
    if (ctx && ctx->prog_scratch_n < nt) {
        free(ctx->prog_scratch);
        ctx->prog_scratch = calloc(nt, sizeof(TInfo));
        ctx->prog_scratch_n = ctx->prog_scratch ? nt : 0;
    }
    ti = ctx ? ctx->prog_scratch : calloc(nt, sizeof(TInfo));
    int *touched = malloc((size_t)(st->n_ops > 0 ? st->n_ops : 1) *
                          (APPROF_MAX_INPUTS + APPROF_MAX_OUTPUTS) * sizeof(int));
    if (!ti || !touched) {
        if (!ctx)
            free(ti);
        free(touched);
        return APPROF_ENOMEM;
    }

    /* Layouts: producers inside the stage, else the first consumer. */
    for (int o = 0; o < st->n_ops; o++) {
        const ShardOp *so = &st->ops[o];
        const ShardStrat *s = &so->s[st->choice[o]];
        const ApprofOp *op = &g->ops[so->op];
        for (int j = 0; j < op->n_outputs; j++) {
            TInfo *t = &ti[op->outputs[j]];
            if (!t->set) {
                touched[n_touched++] = op->outputs[j];
                t->last_use = -1;
            }
            t->L = shard_operand_layout(s, so->sp->out_map[j], g->tensors[op->outputs[j]].ndim);
            t->set = t->in_range = 1;
        }
        unsigned saved = approf_op_saved_mask(g, so->op);
        int fp8w = shard_fp8_linear(st, so->op);
        for (int i = 0; i < op->n_inputs; i++) {
            TInfo *t = &ti[op->inputs[i]];
            if (!t->set) {
                touched[n_touched++] = op->inputs[i];
                t->last_use = -1;
                t->L = shard_operand_layout(s, so->sp->in_map[i], g->tensors[op->inputs[i]].ndim);
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
    /* A stage output: produced here and used after the stage, or used
     * nowhere inside it (a model output such as the loss): st->t_out. */
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        if (ti[t].in_range && st->t_out[t])
            ti[t].stage_out = 1;
        ti[t].local = shard_local_bytes(&g->tensors[t], ti[t].L, m);
    }

    /* Recomputation: which ops the backward reruns, what stays kept. */
    recomp = calloc((size_t)(st->n_ops > 0 ? st->n_ops : 1), 1);
    if (!recomp) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    rc = shard_mark_recompute(st, recomp);
    if (rc)
        goto cleanup;
    blk = malloc((size_t)(st->n_ops > 0 ? st->n_ops : 1) * sizeof(int));
    if (!blk) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    n_blk = shard_stage_blocks(st, blk);
    shard_mark_kept(st, ti, touched, n_touched, recomp, blk, n_blk);
    shard_mark_param_reads(st, ti, recomp);
    group_uses(st, ti, recomp);

    /* Kernels and collectives (room for two kernels per op and phase
     * first: most ops lower to one or two). */
    for (int ph = 0; ph < 2; ph++) {
        kcap[ph] = 2 * (size_t)(st->n_ops > 0 ? st->n_ops : 1);
        p->kernels[ph] = malloc(kcap[ph] * sizeof *p->kernels[ph]);
        kdig[ph] = malloc(kcap[ph] * sizeof *kdig[ph]);
        if (!p->kernels[ph] || !kdig[ph]) {
            rc = APPROF_ENOMEM;
            goto cleanup;
        }
    }
    p->grad_sync.kind = APPROF_COLL_ALL_REDUCE;
    p->grad_sync.op = -1;
    double grad_set_bytes[4] = {0}; /* by axis set (APPROF_AXIS0 | APPROF_AXIS1) */
    /* asynchronous backward collectives are marked only when the spec
     * prices them (a program without marks keeps its signature) */
    int async = st->hw && st->hw->tp_async_grad > 0, async_groups = 0;
    double rs_kept = 0.0; /* reduce-scatter outputs the op policy saves */
    int fp8 = st->hw && st->hw->fp8;
    for (int o = 0; o < st->n_ops && !rc; o++) {
        const ShardOp *so = &st->ops[o];
        const ShardStrat *s = &so->s[st->choice[o]];
        const ApprofOp *op = &g->ops[so->op];
        ApprofKernel kbuf[2 * APPROF_MAX_KERNELS];
        ApprofHash128 dbuf[2 * APPROF_MAX_KERNELS];
        KernelEntry own = {.k = kbuf, .dig = dbuf};
        const KernelEntry *ke = shard_op_kernels(st->ctx, st, o, s, &own, &rc);
        int wslot = async ? shard_linear_weight_slot(g, so->op) : -1;
        int weight = wslot >= 0 ? op->inputs[wslot] : -1;
        size_t bw0 = p->n_kernels[1];
        for (int ph = 0, at = 0; ke && ph < 2 && !rc; at += ke->n[ph], ph++) {
            size_t k0 = p->n_kernels[ph], r0 = p->n_kernels[1];
            if (ph == 1)
                bw0 = p->n_kernels[1];
            for (int i = at; i < at + ke->n[ph] && !rc; i++)
                rc = shard_push_kernel(p, ph, &kcap[ph], kdig, &ke->k[i], ke->dig[i], so->op);
            if (fp8 && !rc) /* FP8 GEMMs and their casts (program_fp8.c) */
                rc = shard_fp8_op(st, ti, p, ph, k0, so->op, ph == 0, &kcap[ph], kdig);
            /* the recomputed forward runs inside the backward module */
            for (int i = at; ph == 0 && recomp[o] && i < at + ke->n[ph] && !rc; i++)
                rc = shard_push_kernel(p, 1, &kcap[1], kdig, &ke->k[i], ke->dig[i], so->op);
            if (fp8 && ph == 0 && recomp[o] && !rc)
                rc = shard_fp8_op(st, ti, p, 1, r0, so->op, 1, &kcap[1], kdig);
        }
        for (int x = 0; x < 2 && !rc; x++) {
            if (s->ax[x] < 0 || so->sp->kind[s->ax[x]] != APPROF_ITER_REDUCE)
                continue;
            for (int j = 0; j < op->n_outputs && !rc; j++) {
                ApprofCollective c = shard_coll(m, APPROF_COLL_ALL_REDUCE, x,
                                                ti[op->outputs[j]].local, so->op);
                int t = op->outputs[j], q = st->t_first[t];
                if (q >= 0) {
                    const ShardOp *cs = &st->ops[q - st->op_begin];
                    const ApprofOp *cop = &g->ops[q];
                    int slot = 0;
                    while (slot < cop->n_inputs && cop->inputs[slot] != t)
                        slot++;
                    ShardLayout lc = shard_operand_layout(&cs->s[st->choice[q - st->op_begin]],
                                                          cs->sp->in_map[slot],
                                                          g->tensors[t].ndim);
                    if (shard_fuses_to_reduce_scatter(st, t, x, ti[t].L, lc, 1))
                        c.kind = APPROF_COLL_REDUCE_SCATTER;
                }
                /* op: the policy saves the reduce-scatter's output, the
                 * shard (shard_rerun_forward_coll) */
                if (c.kind == APPROF_COLL_REDUCE_SCATTER &&
                    st->variant.recompute == COSTDB_RECOMPUTE_OP &&
                    shard_op_checkpointed(g, so->op))
                    rs_kept += c.bytes / m->n[x];
                rc = shard_push_coll(p, 0, &ccap[0], &c);
            }
        }
        for (int i = 0; i < op->n_inputs && !rc; i++) {
            int tix = op->inputs[i];
            const ApprofTensor *t = &g->tensors[tix];
            int partial[2];
            ShardLayout lc = consumer_layout(st, o, i, partial);
            if (ti[tix].in_range) {
                /* one reshard per distinct layout, issued by its first consumer */
                const TInfo *inf = &ti[tix];
                int u = find_use(inf, lc, partial), regather, first = 1, group = 0;
                if (u < inf->n_use) {
                    first = inf->use[u].op == o && inf->use[u].slot == i;
                    regather = inf->use[u].regather;
                    if (async && !ti[tix].use[u].async_group)
                        ti[tix].use[u].async_group = ++async_groups;
                    group = ti[tix].use[u].async_group;
                } else {
                    regather = rereads_input(st, o, i, recomp);
                    group = async ? ++async_groups : 0;
                }
                if (weight >= 0 && tix != weight)
                    mark_async_gemms(p, ti, g, weight, bw0, p->n_kernels[1], group);
                if (!first)
                    continue;
                const ShardOp *pp = &st->ops[t->producer - st->op_begin];
                int j = 0;
                while (j < g->ops[t->producer].n_outputs && g->ops[t->producer].outputs[j] != tix)
                    j++;
                ShardLayout lp = shard_operand_layout(&pp->s[st->choice[t->producer - st->op_begin]],
                                                      pp->sp->out_map[j], t->ndim);
                ApprofCollective f[2], b[4];
                int nf, nb;
                shard_reshard(m, t, lp, lc, partial, regather, f, &nf, b, &nb);
                for (int q = 0; q < nf && !rc; q++)
                    rc = shard_push_coll(p, 0, &ccap[0], &f[q]);
                /* a re-gather runs under the group's input-gradient GEMMs,
                 * the gradient's collective (async_wgrad, shard_reshard)
                 * under its weight-gradient GEMMs */
                for (int q = 0; q < nb && !rc; q++) {
                    b[q].async_group = group;
                    rc = shard_push_coll(p, 1, &ccap[1], &b[q]);
                }
                continue;
            }
            if (t->role == APPROF_TENSOR_INPUT)
                continue;
            if (t->role == APPROF_TENSOR_PARAM) {
                /* the gradient is partial over the axes its consumer splits
                 * the batch on: it joins the gradient bytes of that axis set */
                int set = (partial[0] ? APPROF_AXIS0 : 0) | (partial[1] ? APPROF_AXIS1 : 0);
                if (set)
                    grad_set_bytes[set] += shard_local_bytes(t, lc, m);
                continue;
            }
            /* a stage input: its gradient's reduction is this consumer's */
            int group = async ? ++async_groups : 0;
            if (weight >= 0)
                mark_async_gemms(p, ti, g, weight, bw0, p->n_kernels[1], group);
            for (int x = 0; x < 2 && !rc; x++) {
                if (!partial[x])
                    continue;
                ApprofCollective c = shard_coll(m, APPROF_COLL_ALL_REDUCE, x,
                                                shard_local_bytes(t, lc, m), so->op);
                c.async_group = group;
                c.async_wgrad = 1;
                rc = shard_push_coll(p, 1, &ccap[1], &c);
            }
        }
    }
    if (rc)
        goto cleanup;
    for (size_t i = 0, n0 = p->n_colls[0]; i < n0 && !rc; i++) {
        const ApprofCollective c = p->colls[0][i];
        if (shard_rerun_forward_coll(st, &c, recomp))
            rc = shard_push_coll(p, 1, &ccap[1], &c);
    }
    if (rc)
        goto cleanup;
    /* One gradient synchronisation, over the group of the axis set that
     * holds most of the gradient bytes. Tensor-parallel weights (split over
     * one axis) are reduced over the other axis alone, while the few
     * replicated parameters (norms, biases) are partial over both: pricing
     * all of them over both axes would give the big weights' ring every GPU
     * of a host, and so every network adapter of the host, where each
     * tensor-parallel rank's data-parallel ring has one (docs/variants.md,
     * "ZeRO", "The group"). */
    for (int set = APPROF_AXIS0; set <= (APPROF_AXIS0 | APPROF_AXIS1); set++) {
        p->grad_sync.bytes += grad_set_bytes[set];
        if (grad_set_bytes[set] > 0 &&
            (!p->grad_sync.axes || grad_set_bytes[set] > grad_set_bytes[p->grad_sync.axes]))
            p->grad_sync.axes = set;
    }
    if (p->grad_sync.axes == (APPROF_AXIS0 | APPROF_AXIS1)) {
        p->grad_sync.group_size = m->n[0] * m->n[1];
        p->grad_sync.crosses_hosts = m->cross_both;
        p->grad_sync.hosts = m->hosts_both;
        p->grad_sync.span_hosts = m->span_hosts_both;
    } else if (p->grad_sync.axes) {
        int x = p->grad_sync.axes == APPROF_AXIS1;
        p->grad_sync.group_size = m->n[x];
        p->grad_sync.crosses_hosts = m->cross[x];
        p->grad_sync.hosts = m->hosts[x];
        p->grad_sync.span_hosts = m->span_hosts[x];
    } else {
        p->grad_sync.group_size = 1;
    }

    /* Placements (parameters, stage inputs, stage outputs) and memory:
     * room for exactly those first (what the role passes below place). */
    size_t n_place = 0;
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        n_place += g->tensors[t].role == APPROF_TENSOR_PARAM || !ti[t].in_range ||
                   ti[t].stage_out;
    }
    p->placements = malloc((n_place ? n_place : 1) * sizeof *p->placements);
    pdig = malloc((n_place ? n_place : 1) * sizeof *pdig);
    if (!p->placements || !pdig) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    double params = 0, params_read = 0, param_elems = 0, sin = 0, sin_saved = 0, sin_grads = 0, sout = 0,
           sout_saved = 0, saved_act = 0;
    for (int role = 0; role < 3 && !rc; role++)
        for (int o = st->op_begin; o < st->op_end && !rc; o++) {
            const ApprofOp *op = &g->ops[o];
            int n = role == 2 ? op->n_outputs : op->n_inputs;
            for (int i = 0; i < n && !rc; i++) {
                int t = role == 2 ? op->outputs[i] : op->inputs[i];
                const ApprofTensor *ten = &g->tensors[t];
                TInfo *inf = &ti[t];
                int is_param = ten->role == APPROF_TENSOR_PARAM;
                int want = role == 0 ? is_param
                         : role == 1 ? !is_param && !inf->in_range
                                     : inf->stage_out;
                /* the first occurrence only: set == 2 marks a placed tensor */
                if (!want || inf->set != 1)
                    continue;
                inf->set = 2;
                add_placement(st, p, pdig, t, role == 0 ? APPROF_ROLE_PARAM
                                              : role == 1 ? APPROF_ROLE_INPUT
                                                          : APPROF_ROLE_OUTPUT, inf);
                if (role == 0) {
                    params += inf->local;
                    if (inf->bwd_read)
                        params_read += inf->local;
                    param_elems += inf->local / (double)approf_dtype_size(ten->dtype);
                } else if (role == 1) {
                    sin += inf->local;
                    if (inf->keep)
                        sin_saved += inf->local;
                    if (ten->requires_grad)
                        sin_grads += inf->local;
                } else {
                    sout += inf->local;
                    if (inf->keep)
                        sout_saved += inf->local;
                }
            }
        }
    if (rc)
        goto cleanup;
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        if (ti[t].in_range && ti[t].keep && !ti[t].stage_out)
            saved_act += ti[t].local;
    }
    shard_saved_storage(st, ti, touched, n_touched, &saved_act, &sin_saved);
    shard_fp8_saved(st, ti, touched, n_touched, &saved_act, &sin_saved);
    saved_act += rs_kept;
    /* The two modules as Alpa compiles them for pipeshard training with
     * gradient accumulation (docs/alpa-semantics.md, "The backward
     * module"). Forward: invars are the stage inputs and every parameter,
     * outvars the stage outputs and what the backward reads. Backward:
     * invars are the parameters it reads, one accumulation buffer per
     * parameter (donated: it comes back as an outvar), the saved
     * activations and the incoming gradients; outvars are the input
     * gradients and the accumulation buffers. The buffers are as wide as
     * the gradients are accumulated: Megatron's DDP allocates its
     * contiguous grad buffer (main_grad) in f32 when
     * accumulate_allreduce_grads_in_fp32 is set, which bf16 training
     * sets unless --grad-reduce-in-bf16 (megatron/training/arguments.py;
     * grad_reduce_in_fp32 of
     * megatron/core/distributed/distributed_data_parallel_config.py,
     * core_v0.19.0), and its memory estimator counts 4 bytes of gradient
     * per parameter (theoretical_memory_usage.py: 18 bytes a parameter,
     * 6 + 12/dp with the distributed optimizer): docs/megatron-memory.md. */
    double buffers = params * shard_grad_buffer_ratio(st);
    p->param_bytes = (int64_t)llround(params);
    p->invar_size[0] = (int64_t)llround(sin + params);
    p->outvar_size[0] = (int64_t)llround(sout + saved_act);
    p->temp_buffer_size[0] = (int64_t)llround(shard_transient_peak(st, ti, 0));
    p->invar_size[1] = (int64_t)llround(params_read + buffers + saved_act + sin_saved +
                                        sout_saved + sout);
    p->outvar_size[1] = (int64_t)llround(sin_grads + buffers);
    p->donated_size[1] = (int64_t)llround(buffers);
    p->temp_buffer_size[1] = (int64_t)llround(shard_transient_peak(st, ti, 1) +
                                              shard_recompute_temp(st, ti, blk, n_blk));
    p->intermediate_size = (int64_t)llround(saved_act + sin_saved + sout_saved);
    /* Adam: two moments, plus a master copy for 16-bit training, in the
     * spec's optimizer widths (f32 by default: 12 bytes, 8 in f32) */
    double per_elem = shard_adam_state_bytes(st, (double)approf_dtype_size(g->dtype));
    p->initial_size = (int64_t)llround(param_elems * per_elem);
    ZeroTail tail = {param_elems, params > 0.0 ? params_read / params : 0.0, blk, n_blk, pdig};
    for (int z = st->variant.zero + 1; z <= 3 && st->ctx && st->req; z++)
        if (st->zero_family & (1u << z))
            derive_zero(st, ti, p, kdig, &tail, z);
    rc = finish_program(st, ti, p, &tail, kcap, ccap, kdig);
cleanup:
    free(kdig[0]);
    free(kdig[1]);
    free(pdig);
    if (ctx)
        for (int k = 0; k < n_touched; k++)
            memset(&ti[touched[k]], 0, offsetof(TInfo, use));
    else
        free(ti);
    free(touched);
    free(recomp);
    free(blk);
    return rc;
}
