/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a stage program keeps in memory (program_int.h): the transient peak
 * of a forward or backward walk, which operators recomputation reruns and
 * which tensors it keeps, the parameters each operator reads first, the
 * transformer blocks of a stage (by name prefix) and the temporary bytes a
 * recomputed block needs. Used by shard_build_program (program.c).
 */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "sharding/context.h"
#include "sharding/sharding_int.h"
#include "sharding/program_int.h"
#include "sharding/sharding.h"

/* The parameters the backward module reads (docs/alpa-semantics.md, "The
 * backward module"): a parameter is read when its op saves it for the
 * backward and another saved input of the op needs a gradient (x @ W
 * reads W to compute dx; dW needs only x and dy, the bias gradient only
 * dy), or when recomputation reruns its op (shard_mark_param_reads). So
 * the weight of a first layer on model data, a bias and an embedding
 * table are not read. param_read holds the first case. */
ShardOpFacts shard_op_facts_of(const ApprofGraph *g, int o)
{
    assert(g && o >= 0 && (size_t)o < g->n_ops);
    const ApprofOp *op = &g->ops[o];
    unsigned saved = approf_op_saved_mask(g, o);
    ShardOpFacts f = {(uint16_t)saved, 0, 0};
    for (int i = 0; i < op->n_inputs; i++) {
        if (g->tensors[op->inputs[i]].role != APPROF_TENSOR_PARAM)
            continue;
        int other = 0;
        for (int j = 0; j < op->n_inputs; j++)
            other |= j != i && (saved & APPROF_SAVED_INPUT(j)) &&
                     g->tensors[op->inputs[j]].requires_grad;
        f.param_in |= (uint8_t)(1u << i);
        if ((saved & APPROF_SAVED_INPUT(i)) && other)
            f.param_read |= (uint8_t)(1u << i);
    }
    return f;
}

void shard_op_facts_make(ApprofShardContext *ctx)
{
    if (!ctx || ctx->op_facts || !ctx->g)
        return;
    const ApprofGraph *g = ctx->g;
    ShardOpFacts *f = malloc((g->n_ops ? g->n_ops : 1) * sizeof *f);
    for (size_t o = 0; f && o < g->n_ops; o++)
        f[o] = shard_op_facts_of(g, (int)o);
    ctx->op_facts = f;
}

/* Peak of transient bytes over a forward (dir 0) or backward (dir 1) walk. */
double shard_transient_peak(const ShardStage *st, const TInfo *ti, int dir, double *fresh_max)
{
    const ApprofGraph *g;
    /* the stage's ops are a range of the graph's */
    assert(st && st->g && ti && (dir == 0 || dir == 1) && st->op_begin >= 0 &&
           st->op_end - st->op_begin == st->n_ops && (size_t)st->op_end <= st->g->n_ops);
    g = st->g;
    double live = 0.0, peak = 0.0, most_fresh = 0.0;
    for (int q = 0; q < st->n_ops; q++) {
        int o = dir == 0 ? st->op_begin + q : st->op_end - 1 - q;
        const ApprofOp *op = &g->ops[o];
        if (dir == 0) {
            /* an in-place op's output is its input's buffer: freed
             * before the outputs are counted, every other input freed
             * here (its last use) after them. Each input's test made
             * once, the later frees' bytes noted in input order and
             * subtracted in that order after the peak: the same
             * subtractions and additions on live in the same order as two
             * passes over the inputs (ends2) */
            int alias = op->attrs.inplace ? op->inputs[0] : -1, n_freed = 0;
            double freed[APPROF_MAX_INPUTS];
            for (int i = 0; i < op->n_inputs; i++) {
                const TInfo *t = &ti[op->inputs[i]];
                if (!(t->in_range && t->last_use == o && !t->stage_out && !t->keep))
                    continue;
                if (op->inputs[i] == alias)
                    live -= t->local;
                else
                    freed[n_freed++] = t->local;
            }
            for (int j = 0; j < op->n_outputs; j++) {
                const TInfo *t = &ti[op->outputs[j]];
                if (!t->stage_out && !t->keep)
                    live += t->local;
            }
            if (live > peak)
                peak = live;
            for (int i = 0; i < n_freed; i++)
                live -= freed[i];
        } else {
            /* Gradients of internal tensors: allocated at their last
             * consumer (first in reverse), freed after their producer.
             * A parameter's fresh gradient lives only while its op runs:
             * it is added into the accumulation buffer at once. */
            double fresh = 0.0;
            for (int i = 0; i < op->n_inputs; i++) {
                const TInfo *t = &ti[op->inputs[i]];
                if (t->in_range && t->last_use == o && !t->stage_out)
                    live += t->local;
                if (g->tensors[op->inputs[i]].role == APPROF_TENSOR_PARAM)
                    fresh += t->local;
            }
            if (live + fresh > peak)
                peak = live + fresh;
            if (fresh > most_fresh)
                most_fresh = fresh;
            for (int j = 0; j < op->n_outputs; j++) {
                const TInfo *t = &ti[op->outputs[j]];
                if (t->used && !t->stage_out)
                    live -= t->local;
            }
        }
    }
    if (fresh_max)
        *fresh_max = most_fresh;
    return peak;
}

static int prefix_len(const char *name);
static int same_prefix(const ApprofGraph *g, int o);

int shard_op_checkpointed(const ApprofGraph *g, int o)
{
    assert(g && o >= 0 && (size_t)o < g->n_ops);
    return strchr(g->ops[o].name, '/') != NULL;
}

/* The weight shape (k, n) of a dense matmul (x @ w, w [k, n], or [n, k]
 * with transpose_b). */
static void mm_weight_shape(const ApprofGraph *g, int o, int64_t kn[2])
{
    const ApprofOp *op = &g->ops[o];
    const ApprofTensor *w = &g->tensors[op->inputs[1]];
    kn[0] = w->dims[op->attrs.transpose_b ? 1 : 0];
    kn[1] = w->dims[op->attrs.transpose_b ? 0 : 1];
}

/* torchtitan's per-op policy (v0.2.2, torchtitan/distributed/
 * activation_checkpoint.py _apply_op_sac with the save list of
 * torchtitan/models/llama3/infra/parallelize.py; docs/variants.md,
 * "Recomputation"), applied to every transformer block (a checkpoint
 * block whose ops have a path, shard_op_checkpointed): the outputs of
 * aten.mm (a matmul without bias; with a bias it is aten.addmm, not in
 * the list) and of SDPA (the fused attention) are saved, except every
 * second aten.mm of the block, counted in the forward order from the
 * block's first op (the count restarts per block); an mm on the router
 * gate's weight shape (per_op_sac_force_recompute_mm_shapes_by_fqns,
 * default moe.router.gate) is recomputed and not counted; every other op
 * is recomputed. The count runs over the whole block in the graph, so a
 * stage that starts inside a block counts as torchtitan's block does. */
/* Walks the policy over graph ops [op_begin, op_end) (marking recomp,
 * stage-relative, when given) from the start of op_begin's block; returns
 * the parity of the counted mms of that block before op_begin. */
static int op_policy_walk(const ApprofGraph *g, int op_begin, int op_end, unsigned char *recomp)
{
    int q0 = op_begin;
    while (q0 > 0 && (size_t)q0 < g->n_ops && same_prefix(g, q0))
        q0--;
    int count = 0, n_gate = 0, before = 0;
    int64_t gate[4][2];
    for (int q = q0; q < op_end || q < op_begin; q++) {
        if (q == q0 || !same_prefix(g, q)) {
            /* a new block: its router gates' weight shapes */
            count = n_gate = 0;
            for (int r = q; r < (int)g->n_ops && (r == q || same_prefix(g, r)); r++) {
                if (g->ops[r].kind != APPROF_OP_TOPK_ROUTER || n_gate == 4)
                    continue;
                int pr = g->tensors[g->ops[r].inputs[0]].producer;
                if (pr >= 0 && g->ops[pr].kind == APPROF_OP_ADD)
                    pr = g->tensors[g->ops[pr].inputs[0]].producer;
                if (pr >= 0 && g->ops[pr].kind == APPROF_OP_MATMUL)
                    mm_weight_shape(g, pr, gate[n_gate++]);
            }
        }
        if (q == op_begin)
            before = count % 2;
        const ApprofOp *op = &g->ops[q];
        int save = 0;
        if (op->kind == APPROF_OP_ATTENTION) {
            save = 1;
        } else if (op->kind == APPROF_OP_MATMUL && !op->attrs.has_bias) {
            int64_t kn[2];
            int forced = 0;
            mm_weight_shape(g, q, kn);
            for (int k = 0; k < n_gate; k++)
                forced |= kn[0] == gate[k][0] && kn[1] == gate[k][1];
            if (!forced)
                save = ++count % 2 == 1;
        }
        if (recomp && q >= op_begin && shard_op_checkpointed(g, q) && !save)
            recomp[q - op_begin] = 1;
    }
    return before;
}

static void mark_op_policy(const ShardStage *st, unsigned char *recomp)
{
    op_policy_walk(st->g, st->op_begin, st->op_end, recomp);
}

int shard_op_policy_parity(const ApprofGraph *g, int op_begin)
{
    assert(g && op_begin >= 0);
    return (size_t)op_begin < g->n_ops ? op_policy_walk(g, op_begin, op_begin + 1, NULL) : 0;
}

/* Ops the backward reruns: none, every op (full), the attention core
 * (selective, as Megatron's): each softmax, the chain of elementwise ops
 * (scale, mask) back to the batched matmul that produces the scores, and
 * that matmul; or what torchtitan's per-op policy does not save (op,
 * mark_op_policy). In every mode also the fused activations
 * (ApprofOpAttrs.rerun: Megatron-Core's SwiGLUFunction, fused_bias_swiglu.py
 * at 92c8482e6d, keeps its input and recomputes silu in its backward).
 * APPROF_ENOVARIANT when selective finds no softmax. */
int shard_mark_recompute(const ShardStage *st, unsigned char *recomp)
{
    const ApprofGraph *g;
    assert(st && st->g && recomp);  /* recomp holds st->n_ops flags */
    g = st->g;
    int found = 0;
    for (int o = 0; o < st->n_ops; o++)
        recomp[o] |= g->ops[st->op_begin + o].attrs.rerun ? 1 : 0;
    if (st->variant.recompute == COSTDB_RECOMPUTE_NONE)
        return 0;
    if (st->variant.recompute == COSTDB_RECOMPUTE_OP) {
        mark_op_policy(st, recomp);
        return 0;
    }
    for (int o = 0; o < st->n_ops; o++) {
        if (st->variant.recompute == COSTDB_RECOMPUTE_FULL) {
            recomp[o] = 1;
            continue;
        }
        if (g->ops[st->op_begin + o].kind != APPROF_OP_SOFTMAX)
            continue;
        found = 1;
        recomp[o] = 1;
        /* the dropout of the probabilities is part of the core too
         * (Megatron's CoreAttention, rerun from its saved RNG state): its
         * mask and output are not kept either */
        int probs = g->ops[st->op_begin + o].outputs[0];
        for (int c = o + 1; c < st->n_ops; c++) {
            const ApprofOp *co = &g->ops[st->op_begin + c];
            int reads = 0;
            for (int i = 0; i < co->n_inputs; i++)
                reads |= co->inputs[i] == probs;
            if (!reads)
                continue;
            if (co->kind == APPROF_OP_DROPOUT)
                recomp[c] = 1;
            break;
        }
        int q = g->tensors[g->ops[st->op_begin + o].inputs[0]].producer;
        while (q >= st->op_begin && q < st->op_end) {
            ApprofOpKind k = g->ops[q].kind;
            if (k != APPROF_OP_ADD && k != APPROF_OP_MUL && k != APPROF_OP_BATCH_MATMUL)
                break;
            recomp[q - st->op_begin] = 1;
            if (k == APPROF_OP_BATCH_MATMUL)
                break;
            q = g->tensors[g->ops[q].inputs[0]].producer;
        }
    }
    return st->variant.recompute == COSTDB_RECOMPUTE_SELECTIVE && !found ? APPROF_ENOVARIANT : 0;
}

/* The backward's recomputation reruns forward collective c: every one
 * under full; under op every one of a transformer block but the
 * reduce-scatters, whose outputs torchtitan's policy saves
 * (_c10d_functional.reduce_scatter_tensor in the save list; all-gathers
 * and all-reduces are rerun); else those of recomputed ops. */
int shard_rerun_forward_coll(const ShardStage *st, const ApprofCollective *c,
                              const unsigned char *recomp)
{
    int in = c->op >= st->op_begin && c->op < st->op_end;
    if (st->variant.recompute == COSTDB_RECOMPUTE_FULL)
        return 1;
    if (st->variant.recompute == COSTDB_RECOMPUTE_OP)
        return in && c->kind != APPROF_COLL_REDUCE_SCATTER && shard_op_checkpointed(st->g, c->op);
    return in && recomp[c->op - st->op_begin];
}

/* Parameters the backward module reads: shard_op_facts_of's rule, each
 * op's parameters when recomputation reruns it. */
void shard_mark_param_reads(const ShardStage *st, TInfo *ti, const unsigned char *recomp)
{
    const ApprofGraph *g;
    assert(st && st->g && ti && recomp);
    g = st->g;
    for (int o = 0; o < st->n_ops; o++) {
        const ApprofOp *op = &g->ops[st->op_begin + o];
        ShardOpFacts f = shard_op_facts(st, st->op_begin + o);
        unsigned read = recomp[o] ? f.param_in : f.param_read;
        for (int i = 0; read && i < op->n_inputs; i++)
            if (read & (1u << i))
                ti[op->inputs[i]].bwd_read = 1;
    }
}

/* Checkpoint blocks of the stage: the units that full recomputation keeps
 * the inputs of and reruns one at a time, and that ZeRO-3 gathers one at a
 * time. A block is a run of consecutive ops inside one approf layer whose
 * names share the first path component ("h.7" of "h.7/fc1", "layer2.1" of
 * "layer2.1/conv2"): a transformer layer or a residual block, as Megatron's
 * per-layer checkpointing and DeepSpeed's per-module gathering use, however
 * coarse the approf layers are (docs/variants.md). Ops without a '/' are
 * blocks of their own name. Returns the number of blocks; begin[] (n_ops
 * entries) receives the first op of each. */
static int prefix_len(const char *name)
{
    const char *slash = strchr(name, '/');
    return slash ? (int)(slash - name) : (int)strlen(name);
}

/* 1 when op o's name has the first path component of op o - 1's. */
static int same_prefix(const ApprofGraph *g, int o)
{
    const char *a = g->ops[o].name, *b = g->ops[o - 1].name;
    int la = prefix_len(a);
    return la == prefix_len(b) && !strncmp(a, b, (size_t)la);
}

/* The context's same_prefix facts of every op, made on first use (NULL
 * without a context or memory: computed from the names). */
static const unsigned char *same_prefixes(const ShardStage *st)
{
    ApprofShardContext *ctx = st->ctx;
    if (!ctx || ctx->same_prefix)
        return ctx ? ctx->same_prefix : NULL;
    const ApprofGraph *g = st->g;
    ctx->same_prefix = calloc(g->n_ops ? g->n_ops : 1, 1);
    for (size_t o = 1; ctx->same_prefix && o < g->n_ops; o++)
        ctx->same_prefix[o] = (unsigned char)same_prefix(g, (int)o);
    return ctx->same_prefix;
}

int shard_stage_blocks(const ShardStage *st, int *begin)
{
    const unsigned char *same;
    assert(st && st->g && begin && st->n_layers >= 0);  /* begin holds st->n_ops */
    same = same_prefixes(st);
    int n = 0, k = 0;
    for (int o = st->op_begin; o < st->op_end; o++) {
        int layer_start = 0;
        while (k < st->n_layers && st->layer_begin[k] <= o) {
            layer_start |= st->layer_begin[k] == o;
            k++;
        }
        if (o == st->op_begin || layer_start || !(same ? same[o] : same_prefix(st->g, o)))
            begin[n++] = o;
    }
    return n;
}

static int block_end(const ShardStage *st, const int *begin, int n, int b)
{
    assert(b >= 0 && b < n);
    return b + 1 < n ? begin[b + 1] : st->op_end;
}

/* What stays alive from forward to backward: what the backward reads, less
 * the outputs of recomputed ops; with full recomputation only the inputs
 * of each checkpoint block (activations produced before the block, graph
 * inputs). Under op, a transformer block (shard_op_checkpointed) keeps
 * its inputs (the checkpoint's arguments) and the output of every op the
 * policy saves, read by the backward or not (torch.utils.checkpoint's
 * selective mode caches each MUST_SAVE output for the recomputation);
 * ops outside the blocks keep what the backward reads. */
void shard_mark_kept(const ShardStage *st, TInfo *ti, const int *touched, int n_touched,
                      const unsigned char *recomp, const int *blk, int n_blk)
{
    const ApprofGraph *g;
    assert(st && st->g && ti && (touched || !n_touched) && recomp && (blk || !n_blk));
    g = st->g;
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        int pr = g->tensors[t].producer;
        ti[t].keep = ti[t].saved;
        if (st->variant.recompute == COSTDB_RECOMPUTE_FULL)
            ti[t].keep = 0;
        else if (ti[t].saved && ti[t].in_range && pr >= st->op_begin && pr < st->op_end &&
                 recomp[pr - st->op_begin])
            ti[t].keep = 0;
        else if (st->variant.recompute == COSTDB_RECOMPUTE_OP && ti[t].in_range &&
                 pr >= st->op_begin && pr < st->op_end && !recomp[pr - st->op_begin] &&
                 shard_op_checkpointed(g, pr)) {
            /* saved by the policy: cached in its own dtype */
            ti[t].keep = ti[t].nonfp8_saved = 1;
        }
    }
    if (st->variant.recompute != COSTDB_RECOMPUTE_FULL &&
        st->variant.recompute != COSTDB_RECOMPUTE_OP)
        return;
    /* op: a block's output is the checkpoint's return value, an ordinary
     * tensor: an op outside the blocks (the final norm) that saves it
     * keeps it */
    for (int o = st->op_begin; st->variant.recompute == COSTDB_RECOMPUTE_OP && o < st->op_end;
         o++) {
        unsigned saved = shard_saved_mask(st, o);
        if (shard_op_checkpointed(g, o))
            continue;
        for (int i = 0; i < g->ops[o].n_inputs; i++)
            if ((saved & APPROF_SAVED_INPUT(i)) &&
                g->tensors[g->ops[o].inputs[i]].role != APPROF_TENSOR_PARAM)
                ti[g->ops[o].inputs[i]].keep = 1;
    }
    for (int b = 0; b < n_blk; b++)
        for (int o = blk[b]; o < block_end(st, blk, n_blk, b) &&
                             (st->variant.recompute == COSTDB_RECOMPUTE_FULL ||
                              shard_op_checkpointed(g, blk[b])); o++)
            for (int i = 0; i < g->ops[o].n_inputs; i++) {
                int t = g->ops[o].inputs[i];
                if (g->tensors[t].role != APPROF_TENSOR_PARAM && g->tensors[t].producer < blk[b])
                    ti[t].keep = 1;
            }
}

/* Extra backward temporaries of recomputation: one block's recomputed
 * activations are alive at a time, the largest such block. */
double shard_recompute_temp(const ShardStage *st, const TInfo *ti, const int *blk, int n_blk)
{
    const ApprofGraph *g;
    assert(st && st->g && ti && (blk || !n_blk));
    g = st->g;
    double worst = 0.0;
    for (int b = 0; b < n_blk; b++) {
        double sum = 0.0;
        for (int o = blk[b]; o < block_end(st, blk, n_blk, b); o++)
            for (int j = 0; j < g->ops[o].n_outputs; j++) {
                const TInfo *t = &ti[g->ops[o].outputs[j]];
                if (t->saved && !t->keep)
                    sum += t->local;
            }
        if (sum > worst)
            worst = sum;
    }
    return worst;
}

/* Dropout: PyTorch's dropout (torch.nn.functional.dropout, the kernel
 * behind Megatron-Core's bias-dropout-add, megatron/core/fusions/
 * fused_bias_dropout.py at core_v0.19.0) saves a bool mask, one byte per
 * element, which is what Korthikanti et al. 2022 (section 4.1) count for
 * each dropout: sbh bytes. The dropout's output itself is kept only when
 * another op saves it (the embedding's dropout feeds the first layer
 * norm): then the mask comes on top. Reshape: torch's view shares its
 * input's storage, so the attention's output that the fused attention
 * saves and the heads-merged view the output projection saves are one
 * tensor (Megatron's 2sbh for the projection's input). Under full
 * recomputation what is kept is the blocks' inputs, whole. */
void shard_saved_storage(const ShardStage *st, const TInfo *ti, const int *touched, int n_touched,
                         double *saved_act, double *sin_saved)
{
    const ApprofGraph *g;
    assert(st && st->g && ti && (touched || !n_touched) && saved_act && sin_saved);
    g = st->g;
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        const TInfo *x = &ti[t];
        double es = (double)approf_dtype_size(g->tensors[t].dtype), delta = 0.0;
        int pr = g->tensors[t].producer;
        if (!x->keep || x->stage_out || !(es > 0))
            continue;
        /* under full recomputation a kept tensor is a block's input, its
         * producer's dropout rerun with the block: no mask is kept */
        if (x->mask_saved && st->variant.recompute != COSTDB_RECOMPUTE_FULL)
            delta = x->nonfp8_saved || x->fp8_saved ? x->local / es : -x->local * (1.0 - 1.0 / es);
        if (pr >= st->op_begin && pr < st->op_end && g->ops[pr].kind == APPROF_OP_RESHAPE &&
            !x->mask_saved) {
            const TInfo *in = &ti[g->ops[pr].inputs[0]];
            if (in->keep && !in->stage_out && in->in_range && !in->mask_saved &&
                fabs(in->local - x->local) <= 0.5)
                delta = -x->local;
        }
        if (x->in_range)
            *saved_act += delta;
        else
            *sin_saved += delta;
    }
}
