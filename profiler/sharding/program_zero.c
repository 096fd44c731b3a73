/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ZeRO in the stage program (docs/variants.md, "ZeRO"): what sharding the
 * optimizer state, the gradients and the parameters over the
 * gradient-synchronisation group changes in the memory fields, the
 * apply-grad collectives and the per-micro-batch collectives.
 */
#include <math.h>

#include "collective.h"
#include "costdb.h"
#include "sharding/program_int.h"

/* The parameter bytes of operator o of the stage (those it is the first
 * to read, so a tied parameter counts once). */
double shard_op_param_bytes(const ShardStage *st, const TInfo *ti, int o)
{
    const ApprofGraph *g = st->g;
    double sum = 0.0;
    for (int i = 0; i < g->ops[o].n_inputs; i++) {
        int t = g->ops[o].inputs[i];
        if (g->tensors[t].role == APPROF_TENSOR_PARAM && st->t_first[t] == o)
            sum += ti[t].local;
    }
    return sum;
}

/* The stage's parameter bytes, each parameter once (shard_op_param_bytes). */
static double stage_param_bytes(const ShardStage *st, const TInfo *ti)
{
    double total = 0.0;
    for (int o = st->op_begin; o < st->op_end; o++)
        total += shard_op_param_bytes(st, ti, o);
    return total;
}

/* The largest operator's share of the stage's parameter bytes. */
static double largest_op_share(const ShardStage *st, const TInfo *ti)
{
    double total = stage_param_bytes(st, ti), worst = 0.0;
    for (int o = st->op_begin; o < st->op_end; o++) {
        double sum = shard_op_param_bytes(st, ti, o);
        if (sum > worst)
            worst = sum;
    }
    return total > 0.0 ? worst / total : 1.0;
}

/* ZeRO-3's per-module collectives of kind c->kind in phase ph: one per
 * module (an operator that holds parameters), each of its share of the S
 * bytes (so the bandwidth terms add up to one collective of S, and the
 * per-step ring latency is paid once per module). DeepSpeed's stage 3
 * works module by module both ways (docs/variants.md, "ZeRO"): its hooks
 * all-gather each submodule's parameters before the submodule runs, and it
 * reduce-scatters the gradients one parameter at a time
 * (reduce_gradients_at_owner). */
static int push_module_colls(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                             int ph, size_t *cap, const ApprofCollective *c, double S)
{
    double total = stage_param_bytes(st, ti);
    int rc = 0;
    if (!(total > 0.0)) {
        ApprofCollective one = *c;
        one.bytes = S;
        return shard_push_coll(p, ph, cap, &one);
    }
    for (int o = st->op_begin; o < st->op_end && !rc; o++) {
        double sum = shard_op_param_bytes(st, ti, o);
        ApprofCollective m = *c;
        if (!(sum > 0.0))
            continue;
        m.bytes = S * (sum / total);
        rc = shard_push_coll(p, ph, cap, &m);
    }
    return rc;
}

/* ZeRO-3's second gathers in a backward that reruns the forward (full
 * recomputation; docs/variants.md, "ZeRO-3 and recomputation"). The rerun
 * forward of a block gathers each module before it runs; DeepSpeed then
 * keeps a module gathered for its backward only when the modules used in
 * between hold fewer than COSTDB_ZERO3_MAX_REUSE_DISTANCE parameter
 * elements (stage3_max_reuse_distance, 1e9 by default:
 * deepspeed/runtime/zero/constants.py from v0.3.13, March 2021, on;
 * PartitionedParameterCoordinator._keep_for_later): those are the
 * block's later modules, once in the rerun and once more in the backward,
 * which runs them in reverse. Any other module is released and gathered
 * again for its backward: one more all-gather of its share of S. */
static int push_regathers(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                          size_t *cap, const ApprofCollective *c, double S, const int *blk,
                          int n_blk)
{
    double total = stage_param_bytes(st, ti), esize = (double)approf_dtype_size(st->g->dtype);
    int rc = 0;
    if (st->recompute != COSTDB_RECOMPUTE_FULL || !(total > 0.0))
        return 0;
    for (int b = 0; b < n_blk && !rc; b++) {
        int end = b + 1 < n_blk ? blk[b + 1] : st->op_end;
        double later = 0.0; /* bytes of the block's modules after o */
        for (int o = end - 1; o >= blk[b] && !rc; o--) {
            double sum = shard_op_param_bytes(st, ti, o);
            if (sum > 0.0 && 2.0 * later / esize >= (double)COSTDB_ZERO3_MAX_REUSE_DISTANCE) {
                ApprofCollective m = *c;
                m.bytes = S * (sum / total);
                rc = shard_push_coll(p, 1, cap, &m);
            }
            later += sum;
        }
    }
    return rc;
}

/* ZeRO over the gradient-synchronisation group (docs/variants.md): the
 * apply-grad collectives, the optimizer bytes, and for ZeRO >= 1 the
 * optimizer state, >= 2 the gradients (reduce-scattered every
 * micro-batch; ZeRO-3 one module at a time), 3 the parameters
 * (all-gathered before the forward and the backward, one module at a time,
 * and again before a module's backward where the recomputed forward let
 * it go: push_regathers) divided by the group size G. blk[] holds the
 * first op of each of the n_blk checkpoint blocks. read_share
 * is the part of the parameter bytes the backward module reads.
 * APPROF_ENOVARIANT for ZeRO >= 1 without replicas (G = 1). */
int shard_apply_zero(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                     double param_elems, double read_share, const int *blk, int n_blk,
                     size_t *ccap)
{
    const ApprofCollective *gs = &p->grad_sync;
    int G = gs->group_size > 1 && gs->bytes > 0 ? gs->group_size : 1, z = st->zero, rc = 0;
    /* a parameter read by several ops (tied embeddings) is counted once */
    double S = G > 1 ? fmin(gs->bytes, (double)p->param_bytes) : 0.0, esize = (double)approf_dtype_size(st->g->dtype);
    double S_elems = S / esize, per_elem = 8.0 + (st->g->dtype == APPROF_F32 ? 0.0 : 4.0);
    double cut = S * (1.0 - 1.0 / G);
    ApprofCollective c = *gs;
    c.bytes = S;
    if (z > 0 && G <= 1)
        return APPROF_ENOVARIANT;
    p->n_apply_colls = 0;
    if (G > 1) {
        c.kind = z == 0 ? APPROF_COLL_ALL_REDUCE : APPROF_COLL_REDUCE_SCATTER;
        if (z <= 1)
            p->apply_colls[p->n_apply_colls++] = c;
        c.kind = APPROF_COLL_ALL_GATHER;
        if (z == 1 || z == 2)
            p->apply_colls[p->n_apply_colls++] = c;
    }
    if (z >= 1)
        p->initial_size -= (int64_t)llround(S_elems * per_elem * (1.0 - 1.0 / G));
    if (z >= 2) {
        /* the backward's accumulation buffers (invar, outvar, donated) */
        p->invar_size[1] -= (int64_t)llround(cut);
        p->outvar_size[1] -= (int64_t)llround(cut);
        p->donated_size[1] -= (int64_t)llround(cut);
        /* ZeRO-2 reduce-scatters gradient buckets, ZeRO-3 module by module */
        c.kind = APPROF_COLL_REDUCE_SCATTER;
        rc = z == 3 ? push_module_colls(st, ti, p, 1, &ccap[1], &c, S)
                    : shard_push_coll(p, 1, &ccap[1], &c);
    }
    if (z == 3 && !rc) {
        /* the gathered module and the next one prefetched; in the
         * backward also the module's full gradient before its
         * reduce-scatter */
        double module = S * largest_op_share(st, ti);
        p->invar_size[0] -= (int64_t)llround(cut);
        p->invar_size[1] -= (int64_t)llround(cut * read_share);
        p->temp_buffer_size[0] += (int64_t)llround(2.0 * module);
        p->temp_buffer_size[1] += (int64_t)llround(3.0 * module);
        c.kind = APPROF_COLL_ALL_GATHER;
        rc = push_module_colls(st, ti, p, 0, &ccap[0], &c, S);
        if (!rc)
            rc = push_module_colls(st, ti, p, 1, &ccap[1], &c, S);
        if (!rc)
            rc = push_regathers(st, ti, p, &ccap[1], &c, S, blk, n_blk);
    }
    p->optimizer_bytes = costdb_adam_bytes(param_elems - S_elems + S_elems / (z >= 1 ? G : 1),
                                           esize);
    return rc;
}

