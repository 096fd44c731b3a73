/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The intra-op sharding pass (sharding.h): strategy enumeration per
 * operator, node and resharding costs with the hardware's collective model,
 * the ILP (ilp.h) over the stage's operators, and the per-device stage
 * program built from the chosen strategies. The rules are in sharding.h;
 * the mesh, reshards and strategies are in sharding_mesh.c, the program's
 * memory and placements in program.c and program_memory.c.
 */
#include "costdb.h"
#include "hash.h"
#include "sharding/sharding.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sharding/context.h"
#include "sharding/sharding_int.h"
#include "sharding/program.h"

int approf_shard_context_new(const ApprofGraph *g, const ApprofLayering *l,
                             const ApprofHardwareSpec *hw, int num_micro_batches,
                             ApprofShardContext **out)
{
    if (!g || !l || !hw || !out || num_micro_batches < 1)
        return APPROF_EINVAL;
    ApprofShardContext *c = calloc(1, sizeof(*c));
    if (!c)
        return APPROF_ENOMEM;
    if (approf_ilp_cache_new(&c->cache)) {
        free(c);
        return APPROF_ENOMEM;
    }
    c->g = g;
    c->l = l;
    c->hw = hw;
    c->micro_batches = num_micro_batches;
    *out = c;
    return 0;
}

void approf_shard_context_forget_solutions(ApprofShardContext *ctx)
{
    if (ctx) {
        approf_ilp_cache_clear(ctx->cache);
        shard_forward_forget(ctx);
        shard_twin_forget(ctx);
    }
}

void approf_shard_context_free(ApprofShardContext **ctx)
{
    if (!ctx || !*ctx)
        return;
    approf_ilp_cache_free(&(*ctx)->cache);
    free((*ctx)->memo.choices);
    free((*ctx)->spaces);
    free((*ctx)->space_state);
    free((*ctx)->op_desc);
    free((*ctx)->last_reader);
    shard_build_scratch_free(*ctx);
    shard_zero_family_free(*ctx);
    shard_tensor_scratch_free(*ctx);
    shard_forward_forget(*ctx);
    shard_twin_forget(*ctx);
    for (int i = 0; i < SHARD_PKEY_SLOTS; i++) {
        free((*ctx)->pkey[i].order);
        free((*ctx)->pkey[i].blk);
    }
    shard_stage_ops_free(*ctx);
    shard_memos_free(*ctx);
    free((*ctx)->same_prefix);
    for (int i = 0; i < (*ctx)->n_tables; i++)
        free((*ctx)->tables[i].cost);
    free(*ctx);
    *ctx = NULL;
}

void approf_shard_context_stats(const ApprofShardContext *ctx, ApprofShardStats *out)
{
    memset(out, 0, sizeof(*out));
    if (ctx)
        *out = ctx->st;
}

/* ---- the ILP ----------------------------------------------------------- */

int shard_tensor_slot(const int *list, int n, int t)
{
    for (int i = 0; i < n; i++)
        if (list[i] == t)
            return i;
    return -1;
}

/* Seconds of the backward GEMMs of linear layer o (stage-local) under
 * strategy s, weight in input slot ws: win[0] the input gradient's,
 * win[1] the weight gradient's (the windows of its asynchronous backward
 * collectives, program.c mark_async_gemms). */
static void linear_windows(const ShardStage *st, int o, const ShardStrat *s, int ws, double win[2])
{
    const ApprofGraph *g = st->g;
    const ShardOp *so = &st->ops[o];
    const ApprofTensor *w = &g->tensors[g->ops[so->op].inputs[ws]];
    ApprofKernel kbuf[2 * APPROF_MAX_KERNELS];
    ApprofHash128 dbuf[2 * APPROF_MAX_KERNELS];
    KernelEntry own = {.k = kbuf, .dig = dbuf};
    int rc;
    win[0] = win[1] = 0.0;
    const KernelEntry *ke = shard_op_kernels(st->ctx, st, o, s, &own, &rc);
    if (!ke)
        return;
    ShardLayout L = shard_operand_layout(s, so->sp->in_map[ws], w->ndim);
    double welems = shard_local_bytes(w, L, &st->mesh) / (double)approf_dtype_size(w->dtype);
    for (int i = ke->n[0]; i < ke->n[0] + ke->n[1]; i++) {
        const ApprofKernel *k = &ke->k[i];
        if (k->kind != APPROF_K_GEMM || k->attention)
            continue;
        win[shard_is_wgrad_gemm(k, welems)] += approf_kernel_seconds(st->hw, k);
    }
}

/* The add kernel of the parameters op o is the first in its stage to read
 * (st->t_first), under strategy s: a function of the stage's range, not of
 * the op alone (a tied parameter, such as a GPT's embedding table read
 * again by its LM head, has a different first reader in a stage that holds
 * both ends than in one that holds the head alone), so node_cost adds it
 * to the range-independent part kept in the context's node cost table
 * (shard_cost_table), never into it (docs/performance.md, "A tied
 * parameter's gradient add outside the node cost table (ctxorder)"). */
static double first_reader_accum_cost(const ShardStage *st, int o, const ShardStrat *s)
{
    const ApprofGraph *g = st->g;
    const ShardOp *so = &st->ops[o];
    const ApprofOp *op = &g->ops[so->op];
    double t = 0.0;
    /* every micro-batch adds the fresh gradients of the parameters o is the
     * first to read into their accumulation buffers: the program's add
     * kernel (program.c, push_grad_accum) on this strategy's shards, so
     * that a replicated table pays for its whole gradient; not, with
     * grad_accum_fusion, for a dense layer's weight (its weight-gradient
     * GEMM accumulates it). Priced for every ZeRO stage, as the group's
     * whole buffers: the ILP reads nothing of the variant, so one
     * sharding solution serves every variant of a (logical mesh, force
     * flag, memory level) group, as the group's one set of placements
     * says, whichever of its stages a process solves first (ZeRO 2 and 3,
     * whose buffers are partitions, used to leave the adds out, and their
     * solution depended on whether their group's ZeRO-0 stage was solved
     * before them in the same process; docs/variants.md, "Determinism
     * across shards"). */
    {
        double elems = 0.0;
        for (int i = 0; i < op->n_inputs; i++) {
            int tn = op->inputs[i];
            const ApprofTensor *it = &g->tensors[tn];
            if (it->role != APPROF_TENSOR_PARAM || st->t_first[tn] != so->op ||
                (st->hw && st->hw->grad_accum_fusion && op->kind == APPROF_OP_MATMUL &&
                 it->ndim >= 2))
                continue;
            ShardLayout L = shard_operand_layout(s, so->sp->in_map[i], it->ndim);
            elems += shard_local_bytes(it, L, &st->mesh) / (double)approf_dtype_size(it->dtype);
        }
        if (elems >= 1.0) {
            ApprofKernel k;
            shard_grad_accum_kernel(st, elems, &k);
            t += approf_kernel_seconds(st->hw, &k);
        }
    }
    return t;
}

/* Node cost of strategy s of op o: compute, forward all-reduces, partial
 * gradients of stage-input activations and, scaled, the grad sync. */
static double node_compute_cost(const ShardStage *st, int o, const ShardStrat *s)
{
    const ApprofGraph *g = st->g;
    const ShardOp *so = &st->ops[o];
    const ApprofOp *op = &g->ops[so->op];
    ApprofKernel kbuf[2 * APPROF_MAX_KERNELS];
    ApprofHash128 dbuf[2 * APPROF_MAX_KERNELS];
    KernelEntry own = {.k = kbuf, .dig = dbuf};
    int rc;
    double t = 0.0;
    /* the kernels the program will hold (memo.c lowers them, once) */
    const KernelEntry *ke = shard_op_kernels(st->ctx, st, o, s, &own, &rc);
    if (!ke)
        return INFINITY;
    for (int i = 0; i < ke->n[0] + ke->n[1]; i++)
        t += approf_kernel_seconds(st->hw, &ke->k[i]);
    for (int x = 0; x < 2; x++) {
        if (!shard_strat_reduces(so, s, x))
            continue;
        for (int j = 0; j < op->n_outputs; j++) {
            const ApprofTensor *ot = &g->tensors[op->outputs[j]];
            ShardLayout L = shard_operand_layout(s, so->sp->out_map[j], ot->ndim);
            ApprofCollective c = shard_coll(&st->mesh, APPROF_COLL_ALL_REDUCE, x,
                                      shard_local_bytes(ot, L, &st->mesh), so->op);
            t += shard_coll_seconds(st->hw, &c);
        }
    }
    return t;
}

/* Strategy s of stage op o's slot in the node-cost table (st->node_costs);
 * mostly a cache miss, so the ILP's set-up prefetches four ops ahead. */
static inline double *cost_slot(const ShardStage *st, int o, const ShardStrat *s)
{
    return &st->node_costs[(size_t)st->ops[o].op * SHARD_COST_SLOTS +
                           (size_t)(s->ax[0] + 1) * (APPROF_MAX_ITER + 1) + (size_t)(s->ax[1] + 1)];
}

static double node_cost(const ShardStage *st, int o, const ShardStrat *s)
{
    const ApprofGraph *g = st->g;
    const ShardOp *so = &st->ops[o];
    const ApprofOp *op = &g->ops[so->op];
    double t, *slot = st->node_costs ? cost_slot(st, o, s) : NULL;
    if (slot && !isnan(*slot)) {
        t = *slot;
    } else {
        t = node_compute_cost(st, o, s);
        if (slot)
            *slot = t;
    }
    t += first_reader_accum_cost(st, o, s);
    int ws = st->hw && st->hw->tp_async_grad > 0 ? shard_linear_weight_slot(g, so->op) : -1;
    for (int i = 0; i < op->n_inputs; i++) {
        const ApprofTensor *it = &g->tensors[op->inputs[i]];
        int in_range = it->producer >= st->op_begin && it->producer < st->op_end;
        double win[2] = {0.0, 0.0};
        if (in_range || it->role == APPROF_TENSOR_INPUT)
            continue;
        /* a stage input's gradient reduction: under a linear layer's
         * weight-gradient GEMMs with tp_async_grad (program.c) */
        if (ws >= 0 && i != ws && it->role != APPROF_TENSOR_PARAM)
            linear_windows(st, o, s, ws, win);
        ShardLayout L = shard_operand_layout(s, so->sp->in_map[i], it->ndim);
        for (int x = 0; x < 2; x++) {
            if (s->ax[x] < 0 || L.d[x] >= 0)
                continue;
            ApprofCollective c = shard_coll(&st->mesh, APPROF_COLL_ALL_REDUCE, x,
                                      shard_local_bytes(it, L, &st->mesh), so->op);
            double sec = shard_coll_seconds(st->hw, &c);
            if (ws >= 0 && it->role != APPROF_TENSOR_PARAM)
                sec -= approf_async_hidden(st->hw, sec, &win[1]);
            t += it->role == APPROF_TENSOR_PARAM ? sec / st->micro_batches : sec;
        }
    }
    return t;
}

/* Bytes per element that a parameter keeps resident with its gradient
 * (in the accumulation buffer's width, shard_grad_buffer_ratio) and Adam
 * state (shard_adam_state_bytes), relative to the parameter's own bytes. */
static double param_state_factor(const ShardStage *st, ApprofDtype dt)
{
    double e = (double)approf_dtype_size(dt);
    return (e + e * shard_grad_buffer_ratio(st) + shard_adam_state_bytes(st, e)) / e;
}

/* Node memory of strategy s of op o: what it keeps resident per device —
 * the parameters it is the first consumer of (with gradient and optimizer
 * state) and its outputs that the backward pass reads. */
static double node_mem(const ShardStage *st, int o, const ShardStrat *s)
{
    const ApprofGraph *g = st->g;
    const ShardOp *so = &st->ops[o];
    const ApprofOp *op = &g->ops[so->op];
    double mem = 0.0;
    for (int i = 0; i < op->n_inputs; i++) {
        int t = op->inputs[i];
        const ApprofTensor *it = &g->tensors[t];
        if (it->role != APPROF_TENSOR_PARAM || st->t_first[t] != so->op)
            continue;
        ShardLayout L = shard_operand_layout(s, so->sp->in_map[i], it->ndim);
        mem += shard_local_bytes(it, L, &st->mesh) * param_state_factor(st, it->dtype);
    }
    for (int j = 0; j < op->n_outputs; j++) {
        int t = op->outputs[j];
        if (!st->t_saved[t])
            continue;
        ShardLayout L = shard_operand_layout(s, so->sp->out_map[j], g->tensors[t].ndim);
        mem += shard_local_bytes(&g->tensors[t], L, &st->mesh);
    }
    return mem;
}

static int edge_matrix(const ShardStage *st, int op_p, int op_c, int in_slot, double *r)
{
    const ApprofGraph *g = st->g;
    const ShardOp *sp = &st->ops[op_p - st->op_begin], *sc = &st->ops[op_c - st->op_begin];
    int t = g->ops[op_c].inputs[in_slot];
    const ApprofTensor *ten = &g->tensors[t];
    int j = shard_tensor_slot(g->ops[op_p].outputs, g->ops[op_p].n_outputs, t);
    if (j < 0)
        return APPROF_EINVAL;
    /* The same ILP serves every recomputation variant: it prices the
     * backward re-gather of saved inputs (exact for none and selective;
     * full recomputation reruns the forward gathers instead). */
    int regather = (approf_op_saved_mask(g, op_c) & APPROF_SAVED_INPUT(in_slot)) != 0;
    /* A linear layer's backward collectives of this input run under its
     * own backward GEMMs when the spec says so (tp_async_grad), as the
     * program prices them (each edge with its consumer's GEMMs). */
    int ws = st->hw && st->hw->tp_async_grad > 0 ? shard_linear_weight_slot(g, op_c) : -1;
    double *wins = NULL;
    if (ws >= 0 && ws != in_slot) {
        wins = malloc((size_t)sc->k * 2 * sizeof *wins);
        if (!wins)
            return APPROF_ENOMEM;
        for (int b = 0; b < sc->k; b++)
            linear_windows(st, op_c - st->op_begin, &sc->s[b], ws, &wins[2 * b]);
    }
    for (int a = 0; a < sp->k; a++) {
        ShardLayout lp = shard_operand_layout(&sp->s[a], sp->sp->out_map[j], ten->ndim);
        for (int b = 0; b < sc->k; b++) {
            ShardLayout lc = shard_operand_layout(&sc->s[b], sc->sp->in_map[in_slot], ten->ndim);
            int partial[2];
            for (int x = 0; x < 2; x++)
                partial[x] = sc->s[b].ax[x] >= 0 && lc.d[x] < 0;
            ApprofCollective f[2], bw[4];
            int nf, nb;
            shard_reshard(&st->mesh, ten, lp, lc, partial, regather, f, &nf, bw, &nb);
            double sec = 0.0, win[2] = {0.0, 0.0};
            if (wins) {
                win[0] = wins[2 * b];
                win[1] = wins[2 * b + 1];
            }
            for (int q = 0; q < nf; q++)
                sec += shard_coll_seconds(st->hw, &f[q]);
            for (int q = 0; q < nb; q++) {
                double c = shard_coll_seconds(st->hw, &bw[q]);
                if (wins)
                    c -= approf_async_hidden(st->hw, c, &win[bw[q].async_wgrad]);
                sec += c;
            }
            /* Sequence parallelism: the producer's all-reduce (in its node
             * cost) becomes a reduce-scatter when this consumer wants the
             * tensor split over the same axis. */
            for (int x = 0; x < 2; x++) {
                if (!shard_fuses_to_reduce_scatter(st, t, x, lp, lc,
                                                   shard_strat_reduces(sp, &sp->s[a], x)))
                    continue;
                double bytes = shard_local_bytes(ten, lp, &st->mesh);
                ApprofCollective ar = shard_coll(&st->mesh, APPROF_COLL_ALL_REDUCE, x, bytes, op_p);
                ApprofCollective rs = shard_coll(&st->mesh, APPROF_COLL_REDUCE_SCATTER, x, bytes, op_p);
                sec += shard_coll_seconds(st->hw, &rs) - shard_coll_seconds(st->hw, &ar);
            }
            r[(size_t)a * sc->k + b] = sec;
        }
    }
    free(wins);
    return 0;
}

void shard_stage_free(ShardStage *st)
{
    free(st->strat_block);
    free(st->ops_borrowed ? NULL : st->ops); /* a lent list is the context's */
    free(st->choice);
    if (st->t_scratch) { /* the context's, back with its range's facts (TensorScratch) */
        st->ctx->ts.busy = 0;
        return;
    }
    free(st->t_cons);
    free(st->t_first);
    free(st->t_out);
    free(st->t_saved);
}

/* Resets the tensors of the op range ts holds to what a fresh set-up
 * makes (0, -1, 0, 0), so that no range's facts are held. */
static void scratch_release_range(const ApprofGraph *g, TensorScratch *ts)
{
    for (int o = ts->held ? ts->begin : 0; ts->held && o < ts->end; o++) {
        const ApprofOp *op = &g->ops[o];
        for (int i = 0; i < op->n_inputs; i++) {
            ts->cons[op->inputs[i]] = 0;
            ts->first[op->inputs[i]] = -1;
            ts->saved[op->inputs[i]] = 0;
        }
        for (int j = 0; j < op->n_outputs; j++) {
            ts->out[op->outputs[j]] = 0;
            ts->saved[op->outputs[j]] = 0;
        }
    }
    ts->held = 0;
}

/* The context's per-tensor arrays for st, or 0 when another set-up
 * holds them (or without memory: st then makes its own); 2 when they
 * hold st's range's facts already, 1 when they are at rest. */
static int take_tensor_scratch(ShardStage *st)
{
    ApprofShardContext *ctx = st->ctx;
    size_t nt = st->g->n_tensors ? st->g->n_tensors : 1;
    TensorScratch *ts = &ctx->ts;
    if (ts->busy)
        return 0;
    if (!ts->cons) {
        ts->cons = calloc(nt, sizeof(int));
        ts->first = malloc(nt * sizeof(int));
        ts->out = calloc(nt, 1);
        ts->saved = calloc(nt, 1);
        if (!ts->cons || !ts->first || !ts->out || !ts->saved) {
            shard_tensor_scratch_free(ctx);
            return 0;
        }
        for (size_t t = 0; t < nt; t++)
            ts->first[t] = -1;
    }
    ts->busy = 1;
    st->t_cons = ts->cons;
    st->t_first = ts->first;
    st->t_out = ts->out;
    st->t_saved = ts->saved;
    st->t_scratch = 1;
    if (ts->held && ts->begin == st->op_begin && ts->end == st->op_end)
        return 2;
    scratch_release_range(st->g, ts);
    return 1;
}

void shard_tensor_scratch_free(ApprofShardContext *ctx)
{
    free(ctx->ts.cons);
    free(ctx->ts.first);
    free(ctx->ts.out);
    free(ctx->ts.saved);
    memset(&ctx->ts, 0, sizeof ctx->ts);
}

/* Per tensor, the last operator that reads it (-1: none), computed once
 * per context: a tensor produced in a stage leaves it when it is read
 * after the stage's last op (operators are in topological order). */
static const int *last_readers(ApprofShardContext *ctx)
{
    const ApprofGraph *g = ctx->g;
    if (ctx->last_reader)
        return ctx->last_reader;
    int *lr = malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *lr);
    if (!lr)
        return NULL;
    for (size_t t = 0; t < g->n_tensors; t++)
        lr[t] = -1;
    for (size_t o = 0; o < g->n_ops; o++)
        for (int i = 0; i < g->ops[o].n_inputs; i++)
            if (lr[g->ops[o].inputs[i]] < (int)o)
                lr[g->ops[o].inputs[i]] = (int)o;
    ctx->last_reader = lr;
    return lr;
}

/* Per-tensor facts of the stage the ILP and the program need. */
static int stage_tensors(ShardStage *st, const int *last_reader)
{
    const ApprofGraph *g = st->g;
    size_t nt = g->n_tensors ? g->n_tensors : 1;
    int took = st->ctx ? take_tensor_scratch(st) : 0;
    if (took == 2) /* the facts of this very range, as the loops below would fill them */
        return 0;
    if (!took) {
        st->t_cons = calloc(nt, sizeof(int));
        st->t_first = malloc(nt * sizeof(int));
        st->t_out = calloc(nt, 1);
        st->t_saved = calloc(nt, 1);
        if (!st->t_cons || !st->t_first || !st->t_out || !st->t_saved)
            return APPROF_ENOMEM;
        for (size_t t = 0; t < g->n_tensors; t++)
            st->t_first[t] = -1;
    }
    for (int o = st->op_begin; o < st->op_end; o++) {
        const ApprofOp *op = &g->ops[o];
        unsigned saved = approf_op_saved_mask(g, o);
        for (int i = 0; i < op->n_inputs; i++) {
            int t = op->inputs[i];
            st->t_cons[t]++;
            if (st->t_first[t] < 0)
                st->t_first[t] = o;
            if (saved & APPROF_SAVED_INPUT(i))
                st->t_saved[t] = 1;
        }
        for (int j = 0; j < op->n_outputs; j++)
            if (saved & APPROF_SAVED_OUTPUT(j))
                st->t_saved[op->outputs[j]] = 1;
    }
    for (int o = st->op_begin; o < st->op_end; o++) {
        const ApprofOp *op = &g->ops[o];
        for (int j = 0; j < op->n_outputs; j++) {
            int t = op->outputs[j];
            if (st->t_cons[t] == 0 || last_reader[t] >= st->op_end)
                st->t_out[t] = 1;
        }
    }
    if (took) {
        st->ctx->ts.held = 1;
        st->ctx->ts.begin = st->op_begin;
        st->ctx->ts.end = st->op_end;
    }
    return 0;
}

void shard_stage_key(const ApprofShardRequest *req, int levels, int *key)
{
    int k[8] = {req->start_layer, req->end_layer, req->mesh_hosts, req->mesh_gpus,
                req->logical_a, req->logical_b, req->force_batch_dim,
                levels * 16 + (int)req->method};
    memcpy(key, k, sizeof k);
}

/* The refusal build_and_solve gives a memory level at or past the
 * distinct points of the Pareto set it holds for the request's stage
 * (memo key and op count equal), without setting the stage up or
 * enumerating its strategies again: neither depends on the variant, and
 * the held set was solved from the same ones (docs/performance.md,
 * "Skipped memory levels without a set-up"). Returns 1 with err filled,
 * counting the stage as answered from the memo, as the full path does. */
static int level_past_memo(ApprofShardContext *ctx, const ApprofShardRequest *req, char *err,
                           size_t errlen)
{
    const ParetoMemo *memo = &ctx->memo;
    int key[8], levels = req->memory_levels > 0 ? req->memory_levels : 1;
    if (levels > SHARD_MAX_LEVELS)
        levels = SHARD_MAX_LEVELS;
    if (!memo->valid || shard_stage_setup_check(ctx, req) ||
        req->variant.memory_level < memo->n_points)
        return 0;
    shard_stage_key(req, levels, key);
    if (memcmp(memo->key, key, sizeof key) ||
        memo->n_ops != ctx->l->op_end[req->end_layer] - ctx->l->op_begin[req->start_layer])
        return 0;
    ctx->st.cached++;
    snprintf(err, errlen, "memory level %d: the stage's sharding has %d distinct "
             "time/memory point%s", req->variant.memory_level, memo->n_points,
             memo->n_points == 1 ? "" : "s");
    return 1;
}

/* Enumerates the strategies of every op (or takes them as kept), then takes the Pareto set of the
 * stage's sharding ILP from the memo or solves it (node memory: node_mem),
 * and sets st->choice to the point req->memory_level. */
static int build_and_solve(ApprofShardContext *ctx, ShardStage *st, const ApprofShardRequest *req,
                           char *err, size_t errlen)
{
    ApprofIlp *ilp = NULL;
    double *cost = NULL, *mem = NULL, *r = NULL;
    int rc = 0, maxk = 1, key[8];
    int levels = req->memory_levels > 0 ? req->memory_levels : 1;
    ParetoMemo *memo = &ctx->memo;
    if (levels > SHARD_MAX_LEVELS)
        levels = SHARD_MAX_LEVELS;
    if (!ctx->op_desc)
        ctx->op_desc = calloc(st->g->n_ops ? st->g->n_ops : 1, sizeof *ctx->op_desc);
    if (!ctx->op_desc) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    /* the ops' strategies: kept from an earlier request of this stage
     * (stage_ops.c) */
    if ((rc = shard_stage_ops(ctx, st, &maxk, err, errlen)))
        goto cleanup;
    st->choice = malloc((size_t)(st->n_ops > 0 ? st->n_ops : 1) * sizeof(int));
    if (!st->choice) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    shard_stage_key(req, levels, key);
    ApprofHash128 skey = {0, 0};
    const StructEntry *se = NULL;
    int fresh = !(memo->valid && memo->n_ops == st->n_ops && !memcmp(memo->key, key, sizeof key));
    if (fresh) {
        /* the program key of this very stage has just hashed its structure */
        skey = ctx->skey_valid && !memcmp(ctx->skey_stage, key, sizeof key)
                   ? ctx->skey
                   : shard_struct_key(ctx, st, levels, (int)req->method);
        se = shard_structure_find(ctx, skey);
        if (se && se->n_ops != st->n_ops)
            se = NULL;
    }
    if (fresh && se) {
        /* a stage of the same structure was solved: its Pareto set */
        size_t n = (size_t)(st->n_ops > 0 ? st->n_ops : 1);
        int *choices = malloc((size_t)se->n_points * n * sizeof(int));
        if (!choices) {
            rc = APPROF_ENOMEM;
            goto cleanup;
        }
        for (size_t i = 0; i < (size_t)se->n_points * (size_t)st->n_ops; i++)
            choices[i] = se->choices[i];
        free(memo->choices);
        memo->choices = choices;
        memcpy(memo->times, se->times, sizeof memo->times);
        memcpy(memo->key, key, sizeof key);
        memo->n_ops = st->n_ops;
        memo->n_points = se->n_points;
        memo->valid = 1;
        ctx->st.cached++;
    } else if (fresh) {
        int *choices = malloc((size_t)levels * (size_t)(st->n_ops > 0 ? st->n_ops : 1) *
                              sizeof(int));
        double mems[SHARD_MAX_LEVELS];
        int np = 0;
        memo->valid = 0;
        cost = malloc((size_t)maxk * sizeof(double));
        mem = malloc((size_t)maxk * sizeof(double));
        r = malloc((size_t)maxk * maxk * sizeof(double));
        if (!choices || !cost || !mem || !r || approf_ilp_new(&ilp)) {
            free(choices);
            rc = APPROF_ENOMEM;
            goto cleanup;
        }
        free(memo->choices);
        memo->choices = choices;
        st->node_costs = shard_cost_table(ctx, &st->mesh);
        for (int o = 0; o < st->n_ops; o++) {
            for (int a = 0; st->node_costs && o + 4 < st->n_ops && a < st->ops[o + 4].k; a++)
                __builtin_prefetch(cost_slot(st, o + 4, &st->ops[o + 4].s[a]));
            for (int a = 0; a < st->ops[o].k; a++) {
                cost[a] = node_cost(st, o, &st->ops[o].s[a]);
                mem[a] = node_mem(st, o, &st->ops[o].s[a]);
            }
            if (approf_ilp_add_node(ilp, st->ops[o].k, cost, mem) < 0) {
                rc = APPROF_ENOMEM;
                goto cleanup;
            }
        }
        for (int o = 0; o < st->n_ops; o++) {
            const ApprofOp *op = &st->g->ops[st->op_begin + o];
            for (int i = 0; i < op->n_inputs; i++) {
                int p = st->g->tensors[op->inputs[i]].producer;
                if (p < st->op_begin || p >= st->op_end)
                    continue;
                int kp = st->ops[p - st->op_begin].k, kc = st->ops[o].k;
                ApprofHash128 ek = shard_edge_key(ctx, st, p, st->op_begin + o, i);
                const double *m = shard_edge_find(ctx, ek, kp, kc);
                if (!m) {
                    rc = edge_matrix(st, p, st->op_begin + o, i, r);
                    if (!rc)
                        shard_edge_remember(ctx, ek, kp, kc, r);
                    m = r;
                }
                if (!rc && approf_ilp_add_edge(ilp, p - st->op_begin, o, m) < 0)
                    rc = APPROF_ENOMEM;
                if (rc)
                    goto cleanup;
            }
        }
        ApprofIlpStats ist;
        memset(&ist, 0, sizeof ist);
        rc = approf_ilp_pareto(ilp, req->method, ctx->cache, levels, memo->choices, memo->times,
                               mems, &np, &ist);
        if (ist.cached)
            ctx->st.cached++;
        else
            ctx->st.solved++;
        ctx->st.cbc_runs += (size_t)(ist.used_cbc && !ist.cached);
        if (rc) {
            snprintf(err, errlen, "sharding ILP: %s", approf_strerror(rc));
            goto cleanup;
        }
        memcpy(memo->key, key, sizeof key);
        memo->n_ops = st->n_ops;
        memo->n_points = np;
        memo->valid = 1;
        shard_remember_structure(ctx, skey, memo, maxk);
    } else {
        ctx->st.cached++;
    }
    if (req->variant.memory_level < 0 || req->variant.memory_level >= memo->n_points) {
        snprintf(err, errlen, "memory level %d: the stage's sharding has %d distinct "
                 "time/memory point%s", req->variant.memory_level, memo->n_points,
                 memo->n_points == 1 ? "" : "s");
        rc = APPROF_ENOVARIANT;
        goto cleanup;
    }
    memcpy(st->choice, memo->choices + (size_t)req->variant.memory_level * (size_t)st->n_ops,
           (size_t)st->n_ops * sizeof(int));
    st->objective = memo->times[req->variant.memory_level];
cleanup:
    approf_ilp_free(&ilp);
    free(cost);
    free(mem);
    free(r);
    return rc;
}

int shard_stage_setup_check(const ApprofShardContext *ctx, const ApprofShardRequest *req)
{
    const ApprofLayering *l = ctx->l;
    if (req->start_layer < 0 || req->end_layer < req->start_layer ||
        req->end_layer >= l->n_layers || req->logical_a < 1 || req->logical_b < 1 ||
        req->mesh_hosts < 1 || req->mesh_gpus < 1 ||
        req->logical_a * req->logical_b != req->mesh_hosts * req->mesh_gpus ||
        (req->force_batch_dim != -1 && req->force_batch_dim != 0) || req->variant.zero < 0 ||
        req->variant.zero > COSTDB_ZERO_MAX || req->variant.recompute < 0 ||
        req->variant.recompute >= COSTDB_RECOMPUTE_COUNT)
        return APPROF_EINVAL;
    return 0;
}

int shard_stage_setup(ApprofShardContext *ctx, const ApprofShardRequest *req, ShardStage *st_out,
                       int with_ops, char *err, size_t errlen)
{
    ShardStage st;
    int rc;
    memset(&st, 0, sizeof(st));
    const ApprofLayering *l = ctx->l;
    if (shard_stage_setup_check(ctx, req)) {
        snprintf(err, errlen, "bad stage request: layers %d..%d of %d, mesh (%d, %d), logical (%d, %d)",
                 req->start_layer, req->end_layer, l->n_layers, req->mesh_hosts, req->mesh_gpus,
                 req->logical_a, req->logical_b);
        return APPROF_EINVAL;
    }
    st.g = ctx->g;
    st.ctx = ctx;
    st.hw = ctx->hw;
    st.micro_batches = ctx->micro_batches;
    st.op_begin = l->op_begin[req->start_layer];
    st.op_end = l->op_end[req->end_layer];
    st.n_ops = st.op_end - st.op_begin;
    st.force = req->force_batch_dim;
    st.variant = req->variant;
    st.zero_family = req->zero_family;
    st.req = req;
    st.layer_begin = &l->op_begin[req->start_layer];
    st.n_layers = req->end_layer - req->start_layer + 1;
    shard_mesh_init(&st.mesh, req->mesh_hosts, req->mesh_gpus, req->logical_a, req->logical_b);
    st.ops = with_ops ? calloc((size_t)(st.n_ops > 0 ? st.n_ops : 1), sizeof(ShardOp)) : NULL;
    const int *lr = last_readers(ctx);
    rc = (st.ops || !with_ops) && lr ? stage_tensors(&st, lr) : APPROF_ENOMEM;
    *st_out = st;
    return rc;
}

int approf_shard_stage(ApprofShardContext *ctx, const ApprofShardRequest *req,
                       ApprofStageProgram *out, char *err, size_t errlen)
{
    ShardStage st;
    int rc;
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    err[0] = '\0';
    memset(&st, 0, sizeof(st));
    if (!ctx || !req || !out) {
        snprintf(err, errlen, "approf_shard_stage: missing argument");
        return APPROF_EINVAL;
    }
    /* a ZeRO variant derived when an earlier variant of the stage was built */
    if (req->variant.zero > 0 && shard_zero_family_take(ctx, req, out, &rc)) {
        if (rc == APPROF_ENOVARIANT)
            snprintf(err, errlen, "ZeRO: the stage has no data-parallel replicas");
        return rc;
    }
    /* a memory level past the Pareto set just solved for this very stage */
    if (level_past_memo(ctx, req, err, errlen))
        return APPROF_ENOVARIANT;
    rc = shard_stage_setup(ctx, req, &st, 0, err, errlen); /* ops: shard_stage_ops's */
    if (!rc)
        rc = build_and_solve(ctx, &st, req, err, errlen);
    /* the program of its forced-batch twin, where the solution is the same */
    if (rc || shard_twin_take(ctx, &st, req, out))
        goto cleanup;
    memset(out, 0, sizeof(*out));
    out->start_layer = req->start_layer;
    out->end_layer = req->end_layer;
    out->op_begin = st.op_begin;
    out->op_end = st.op_end;
    out->mesh_hosts = req->mesh_hosts;
    out->mesh_gpus = req->mesh_gpus;
    out->logical_a = req->logical_a;
    out->logical_b = req->logical_b;
    out->force_batch_dim = req->force_batch_dim;
    out->dtype = ctx->g->dtype;
    out->ilp_objective = st.objective;
    out->variant = req->variant;
    rc = shard_build_program(&st, out);
    if (rc == APPROF_ENOVARIANT) {
        snprintf(err, errlen, "%s",
                 st.variant.zero ? "ZeRO: the stage has no data-parallel replicas"
                                 : "selective recomputation: the stage has no attention");
        approf_stage_program_clear(out);
    } else if (rc) {
        snprintf(err, errlen, "building the stage program: %s", approf_strerror(rc));
        approf_stage_program_clear(out);
    } else {
        shard_twin_keep(ctx, &st, req, out); /* for its unforced twin */
    }
cleanup:
    shard_stage_free(&st);
    return rc;
}
